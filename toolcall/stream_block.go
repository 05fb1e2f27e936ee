package toolcall

import "strings"

// The StreamParser's states inside a call block: before its call is
// announced (stBlock), while its arguments stream (stArgs), and in a block
// found malformed (stFailed).

// blockText returns the part of buf that is known to be the current
// block's body, whether the block is complete, and where its end marker is
// (-1 if not found) and how long the part of it that belongs to the block
// is. The end marker is the first one outside the block's JSON strings
// (see blockEnd).
func (p *StreamParser) blockText(final bool) (body string, complete bool, end, endLen int) {
	if p.f.bare() {
		return p.buf, final, -1, 0
	}
	markers := p.endMarkers()
	if i, m := p.blockEnd(markers, final); i >= 0 {
		if strings.HasPrefix(markers[0], m) { // the marker, or what a cut left of it
			endLen = len(m)
		}
		return p.buf[:i], true, i, endLen
	}
	k := 0
	if !final {
		k = partialSuffix(p.buf, markers)
	}
	return p.buf[:len(p.buf)-k], final, -1, 0
}

func (p *StreamParser) header(body string) header {
	if p.f == DeepSeekR1 {
		return deepSeekHeader(body)
	}
	return jsonHeader(body)
}

func (p *StreamParser) stepBlock(final bool) bool {
	body, complete, end, endLen := p.blockText(final)
	h := p.header(body)
	switch {
	case h.st == hdrMore && !complete:
		return false
	case h.st == hdrMore || h.st == hdrFail:
		p.failBlock(body, final, end, endLen)
		return true
	}
	b := newBodyScan(p.f, h)
	n, argN, ok := b.feed(body[h.at:])
	if !ok {
		p.failBlock(body, final, end, endLen)
		return true
	}
	if b.ended() {
		complete = true
	}
	if complete && !b.accepts() {
		p.failBlock(body, final, end, endLen)
		return true
	}
	p.announce(h.name)
	if h.st == hdrNoArgs {
		p.args("{}")
	} else {
		p.args(body[h.at : h.at+argN])
	}
	if !complete {
		p.body, p.st = b, stArgs
		p.buf = p.buf[h.at+n:]
		return true
	}
	p.endBlock(h.at+n, end, endLen)
	return true
}

// failBlock makes a block that is not a call content, all of it up to and
// with its end marker.
func (p *StreamParser) failBlock(body string, final bool, end, endLen int) {
	p.content(p.pending + p.prefix)
	p.pending, p.prefix, p.hold = "", "", false
	switch {
	case p.f.bare() || end < 0 && final:
		p.content(p.buf)
		p.buf, p.st = "", stText
	case end >= 0:
		p.content(p.buf[:end+endLen])
		p.buf, p.st = p.buf[end+endLen:], stText
	default:
		p.content(body)
		p.buf = p.buf[len(body):]
		p.st, p.dropEnd = stFailed, false
	}
}

// endBlock moves past a complete call: n bytes of buf were its body.
func (p *StreamParser) endBlock(n, end, endLen int) {
	p.body, p.prefix = nil, ""
	p.hold = p.f == DeepSeekR1 && p.lastCall
	switch {
	case p.f == Llama3JSON:
		p.buf, p.st = p.buf[n:], stLlamaAfter
	case p.f == Phi4Mini:
		p.buf, p.st = p.buf[n:], stPhiAfter
	case end >= 0:
		p.buf, p.st = p.buf[end+endLen:], stText
	default:
		p.buf, p.st = "", stText
	}
}

func (p *StreamParser) stepArgs(final bool) bool {
	body, complete, end, endLen := p.blockText(final)
	n, argN, ok := p.body.feed(body)
	p.args(body[:argN])
	if !ok { // the announced call went wrong: the rest of the block is content
		p.lastCall = false
		switch {
		case p.f.bare() || end < 0 && final:
			p.content(p.buf[n:])
			p.buf, p.st = "", stText
		case end >= 0:
			p.content(body[n:])
			p.buf, p.st = p.buf[end+endLen:], stText
		default:
			p.content(body[n:])
			p.buf = p.buf[len(body):]
			p.st, p.dropEnd = stFailed, true
		}
		p.body = nil
		return true
	}
	if p.body.ended() {
		p.endBlock(n, end, endLen)
		return true
	}
	p.buf = p.buf[n:]
	if !complete {
		return false
	}
	// The block ended: complete or not, the call is over.
	if !p.body.accepts() {
		p.lastCall = false
	}
	p.endBlock(0, end-n, endLen)
	return true
}

func (p *StreamParser) stepFailed(final bool) bool {
	markers := p.endMarkers()
	i, m := earliest(p.buf, markers)
	if i < 0 {
		k := 0
		if !final {
			k = partialSuffix(p.buf, markers)
		}
		p.content(p.buf[:len(p.buf)-k])
		p.buf = p.buf[len(p.buf)-k:]
		if final {
			p.st = stText
		}
		return false
	}
	n := i
	if m == markers[0] && !p.dropEnd {
		n += len(m)
	}
	p.content(p.buf[:n])
	if m == markers[0] {
		i += len(m)
	}
	p.buf, p.st = p.buf[i:], stText
	return true
}
