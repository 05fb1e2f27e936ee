package toolcall

import "strings"

// Where a call block ends. Its end marker (</tool_call>, DeepSeek's
// <｜tool▁call▁end｜>) ends it only outside the block's JSON: inside a
// string of the call object it is text of the name or of an argument,
// which a forced call's schema may even require ({"const":
// "ok</tool_call>"}). The JSON scanner decides which bytes are inside a
// string, as far as the block's text is valid JSON; from the first byte
// it refuses on (the block is not a well-formed call, and becomes content)
// the first marker ends it, as it would a block with no JSON at all.

// stringScan is a scanner that can tell whether its next byte is inside a
// JSON string: a jsonScan, or a bodyScan past a block's header.
type stringScan interface {
	step(c byte) bool
	inString() bool
}

// blockEnd returns where the current block's end marker starts in buf,
// and which marker, or -1. At the end of the reply (final), the start of
// the block's own end marker (markers[0]) outside its JSON strings ends it
// too: the reply was cut inside the marker, and what is there of it is
// returned as the marker.
func (p *StreamParser) blockEnd(markers []string, final bool) (int, string) {
	s, from := p.blockScan(markers)
	if s == nil {
		return textEnd(p.buf, 0, markers, final)
	}
	for i := from; i < len(p.buf); i++ {
		if !s.inString() {
			if m := markerAt(p.buf[i:], markers); m != "" {
				return i, m
			}
			if final && strings.HasPrefix(markers[0], p.buf[i:]) {
				return i, p.buf[i:]
			}
		}
		if !s.step(p.buf[i]) { // the JSON is over, or wrong
			return textEnd(p.buf, i, markers, final)
		}
	}
	return -1, ""
}

// textEnd is blockEnd for text not read as JSON, from buf[from:].
func textEnd(buf string, from int, markers []string, final bool) (int, string) {
	if i, m := earliest(buf[from:], markers); i >= 0 {
		return from + i, m
	}
	if k := partialSuffix(buf[from:], markers[:1]); final && k > 0 {
		return len(buf) - k, buf[len(buf)-k:]
	}
	return -1, ""
}

// blockScan returns a scanner for the block's JSON that starts at buf[from]
// and may be advanced without changing the parser, or nil where the
// block's JSON has not started (a DeepSeek header) or has ended.
func (p *StreamParser) blockScan(markers []string) (stringScan, int) {
	if p.st == stArgs {
		if p.body.phase != pArgs && p.body.phase != pTail {
			return nil, 0
		}
		return p.body.lookahead(len(p.buf)), 0
	}
	if p.f != DeepSeekR1 {
		return newObjectScan(), 0 // a Hermes block's body is the call object
	}
	// A DeepSeek block's JSON is its arguments, after a header that holds
	// no end marker.
	head := p.buf
	if i, _ := earliest(head, markers); i >= 0 {
		head = head[:i]
	}
	if h := deepSeekHeader(head); h.st == hdrArgs {
		return newObjectScan(), h.at
	}
	return nil, 0
}

// markerAt returns the marker s starts with, or "".
func markerAt(s string, markers []string) string {
	for _, m := range markers {
		if strings.HasPrefix(s, m) {
			return m
		}
	}
	return ""
}
