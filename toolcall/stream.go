package toolcall

import (
	"math/rand/v2"
	"strings"
)

// Delta is one piece of a streamed reply: content text (Call nil), or a
// piece of a tool call.
type Delta struct {
	Content string
	Call    *CallDelta
}

// CallDelta is a piece of the tool call at Index (0, 1, ... in order), as
// OpenAI's delta.tool_calls[] sends it: a call's first piece has its ID
// and Name and empty Arguments; the pieces after it carry fragments of
// the arguments' JSON text, which add up to the Arguments Parse returns.
type CallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// StreamParser splits a reply into content and tool calls as it is
// generated. Feed it the decoded text with Add as it comes, then call
// Finish. It holds back text that may be the start of a call marker (a
// partial "<tool_call>", a Llama reply's leading "{" until its first keys
// decide it) and trailing whitespace that Parse would trim, and never
// emits a marker of a well-formed call as content.
//
// A call is announced (its ID and Name sent) once its name and the first
// byte of its arguments object have been seen, and its arguments are then
// streamed as far as they are valid JSON. For replies whose calls are well
// formed, the concatenated pieces equal Parse's result however the text is
// split. A block found malformed before its call is announced is content,
// as in Parse. One found malformed after it (invalid JSON later in the
// arguments, or a reply cut short) cannot be taken back: that call's
// arguments stop where they went wrong, the rest of the block is content
// (without its end marker), and Parse would have made the whole block
// content instead.
//
// A StreamParser is not safe for concurrent use.
type StreamParser struct {
	// Rand draws the call IDs (see NewID); nil means math/rand/v2's
	// randomly seeded generator. Set it before the first Add.
	Rand *rand.Rand

	f      Format
	st     parseState
	buf    string // text not yet consumed
	prefix string // the current block's text before buf: its open marker, Llama's <|python_tag|>
	body   *bodyScan

	// DeepSeek: after <｜tool▁calls▁begin｜> or a call, whitespace (and
	// that marker) is held in pending (hold set) until what follows
	// decides: another call or <｜tool▁calls▁end｜> drops it, other text
	// makes it content.
	pending  string
	hold     bool
	lastCall bool // DeepSeek: nothing but whitespace since the last call
	dropEnd  bool // stFailed: drop the block's end marker (the call was announced)

	calls   int    // calls announced
	started bool   // content other than whitespace has been emitted
	ws      string // whitespace held back: it is trimmed if the content ends here
	out     []Delta
	done    bool
}

type parseState uint8

const (
	stText       parseState = iota // content, looking for a call's start
	stLlamaStart                   // Llama: the start of the reply or of a call after ';'
	stLlamaAfter                   // Llama: after a call
	stBlock                        // in a call block whose call is not announced yet
	stArgs                         // in a call block whose call is announced
	stFailed                       // in a malformed block: content up to its end marker
	stPhiNext                      // Phi-4-mini: after functools[ or a call's ",", before a call object
	stPhiAfter                     // Phi-4-mini: after a call: "," and another, or "]"
)

// NewStreamParser returns a parser for replies in format f. With None,
// everything is content.
func NewStreamParser(f Format) *StreamParser {
	p := &StreamParser{f: f}
	if f == Llama3JSON {
		p.st = stLlamaStart
	}
	return p
}

// Add consumes the next piece of the reply and returns the deltas it
// completes (possibly none). Adjacent content, and adjacent argument
// fragments of one call, are merged. Add after Finish panics.
func (p *StreamParser) Add(text string) []Delta {
	if p.done {
		panic("toolcall: Add after Finish")
	}
	p.buf += text
	return p.run(false)
}

// Finish ends the reply and returns the last deltas: text held back as a
// possible marker is content after all, a call block left open at the end
// is closed if it is complete, and trailing whitespace is dropped if the
// reply has calls (kept if not, so that a reply without calls comes out
// unchanged).
func (p *StreamParser) Finish() []Delta {
	if p.done {
		return nil
	}
	out := p.run(true)
	p.done = true
	return out
}

// Calls returns how many tool calls have been announced so far.
func (p *StreamParser) Calls() int { return p.calls }

func (p *StreamParser) run(final bool) []Delta {
	for p.step(final) {
	}
	if final {
		if p.pending != "" {
			p.content(p.pending)
			p.pending, p.hold = "", false
		}
		if p.calls == 0 && p.ws != "" {
			p.emitContent(p.ws)
		}
		p.ws = ""
	}
	out := p.out
	p.out = nil
	return out
}

// step makes one move and reports whether another may follow.
func (p *StreamParser) step(final bool) bool {
	switch p.st {
	case stText:
		return p.stepText(final)
	case stLlamaStart:
		return p.stepLlamaStart(final)
	case stLlamaAfter:
		return p.stepLlamaAfter(final)
	case stBlock:
		return p.stepBlock(final)
	case stArgs:
		return p.stepArgs(final)
	case stFailed:
		return p.stepFailed(final)
	case stPhiNext:
		return p.stepPhiNext(final)
	case stPhiAfter:
		return p.stepPhiAfter(final)
	}
	return false
}

// announce starts call number p.calls with its id and name.
func (p *StreamParser) announce(name string) {
	if !p.started {
		p.ws = "" // whitespace before the first call is not content
	}
	p.pending, p.hold = "", false
	p.out = append(p.out, Delta{Call: &CallDelta{Index: p.calls, ID: NewID(p.Rand), Name: name}})
	p.calls++
	p.lastCall = true
}

// args emits a fragment of the current call's arguments.
func (p *StreamParser) args(s string) {
	if s == "" {
		return
	}
	if n := len(p.out); n > 0 {
		if d := p.out[n-1].Call; d != nil && d.Index == p.calls-1 && d.ID == "" {
			d.Arguments += s
			return
		}
	}
	p.out = append(p.out, Delta{Call: &CallDelta{Index: p.calls - 1, Arguments: s}})
}

// content emits text outside calls. Whitespace at its end is held back,
// since it is dropped if the content ends there and the reply has calls;
// whitespace before the first content is dropped once a call has come
// first.
func (p *StreamParser) content(s string) {
	if s == "" {
		return
	}
	s, p.ws = p.ws+s, ""
	if !p.started && p.calls > 0 {
		s = trimLeftWS(s)
	}
	body := strings.TrimRight(s, " \t\r\n")
	p.ws = s[len(body):]
	if body != "" {
		p.started, p.lastCall = true, false
		p.emitContent(body)
	}
}

func (p *StreamParser) emitContent(s string) {
	if n := len(p.out); n > 0 && p.out[n-1].Call == nil {
		p.out[n-1].Content += s
		return
	}
	p.out = append(p.out, Delta{Content: s})
}

func trimLeftWS(s string) string { return strings.TrimLeft(s, " \t\r\n") }
