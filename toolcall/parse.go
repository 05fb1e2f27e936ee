package toolcall

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Call is one tool call read from a reply.
type Call struct {
	ID   string // "call_" and 24 letters and digits
	Name string
	// Arguments is the arguments object's JSON text as the model wrote
	// it (OpenAI's function.arguments string).
	Arguments string
}

// Parse reads the tool calls out of a finished reply, for tool_choice
// "auto". Content is the text outside the calls; when there are calls,
// whitespace at its end is dropped, and at its start if a call comes
// first. A reply without calls comes back unchanged with no calls. A call
// block that is not well formed (bad JSON, no name, arguments that are not
// an object) stays content, as vLLM does; well-formed calls around it are
// still calls. The error is non-nil only for an unknown Format.
func Parse(f Format, text string) (content string, calls []Call, err error) {
	return ParseWith(f, text, nil)
}

// ParseWith is Parse drawing the call IDs from r (see NewID).
func ParseWith(f Format, text string, r *rand.Rand) (content string, calls []Call, err error) {
	if f < None || f > lastFormat {
		return text, nil, fmt.Errorf("toolcall: unknown format %d", int(f))
	}
	p := NewStreamParser(f)
	p.Rand = r
	p.buf = text
	content, calls = Collect(p.Finish())
	return content, calls, nil
}

// ParseCut is Parse for a reply that did not end by itself (cut by
// max_tokens or a stop string, aborted, or ended by a grammar dead end):
// it reads the reply as StreamParser reports it. A call cut inside its
// arguments, well formed as far as it goes, is a call with the arguments
// so far (not valid JSON), as a stream announced it, rather than content;
// so a whole response and a stream of the same cut reply agree, and a
// forced call cut short is still a call. Everything before that last
// block is read as Parse reads it.
func ParseCut(f Format, text string) (content string, calls []Call, err error) {
	if f < None || f > lastFormat {
		return text, nil, fmt.Errorf("toolcall: unknown format %d", int(f))
	}
	p := NewStreamParser(f)
	ds := p.Add(text)
	content, calls = Collect(append(ds, p.Finish()...))
	return content, calls, nil
}

// Collect adds up a reply's deltas (all of Add's and Finish's results, in
// order) into its content and calls.
func Collect(deltas []Delta) (content string, calls []Call) {
	var b strings.Builder
	for _, d := range deltas {
		c := d.Call
		switch {
		case c == nil:
			b.WriteString(d.Content)
		case c.ID != "":
			calls = append(calls, Call{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		case c.Index < len(calls):
			calls[c.Index].Arguments += c.Arguments
		}
	}
	return b.String(), calls
}
