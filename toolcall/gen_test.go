package toolcall

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// gen builds random well-formed replies whose content and calls are known
// by construction, an oracle independent of the parser.
type gen struct{ r *rand.Rand }

// fragments are content pieces that look like the start of markers or
// JSON but cannot add up to a whole marker.
var fragments = []string{"Hi", "ok", " ", "\n", "  ", "<", "<tool", "<tool_ca", "</tool", "<b>", "{", "}", "\"name\"",
	"é", "東京", "｜", "<｜tool▁call", "<｜tool▁calls", "`", "```json", "<|python", "<|", ";", "\\", "ool_call>"}

func (g gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g gen) content(n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(g.pick(fragments))
	}
	return b.String()
}

func (g gen) ws() string { return g.pick([]string{"", "", " ", "\n", " \n  "}) }

func (g gen) name() string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
	b := make([]byte, 1+g.r.IntN(20))
	for i := range b {
		b[i] = chars[g.r.IntN(len(chars))]
	}
	return string(b)
}

var jsonStrings = []string{"", "Paris", "a\"b", "back\\slash", "tab\t", "new\nline", "</tool_ca", "<tool_call", "{}", "[", "東京", "｜tool▁", "```", "\u0001", "😀"}

// jsonQuote is s as a JSON string, '<' and '>' left as they are.
func jsonQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// value writes a random JSON value, with random whitespace, to b.
func (g gen) value(b *strings.Builder, depth int) {
	switch k := g.r.IntN(8); {
	case k < 2 && depth < 4:
		g.object(b, depth+1)
	case k == 2 && depth < 4:
		b.WriteByte('[')
		n := g.r.IntN(4)
		for i := range n {
			if i > 0 {
				b.WriteString(g.ws() + ",")
			}
			b.WriteString(g.ws())
			g.value(b, depth+1)
		}
		b.WriteString(g.ws() + "]")
	case k == 3:
		b.WriteString(jsonQuote(g.pick(jsonStrings)))
	case k == 4:
		b.WriteString(g.pick([]string{"0", "-1", "3.25", "1e10", "-0.5E-3", "12345678901234567890"}))
	default:
		b.WriteString(g.pick([]string{"true", "false", "null", `"x"`}))
	}
}

func (g gen) object(b *strings.Builder, depth int) {
	b.WriteByte('{')
	n := g.r.IntN(4)
	for i := range n {
		if i > 0 {
			b.WriteString(g.ws() + ",")
		}
		b.WriteString(g.ws() + jsonQuote(g.pick(jsonStrings)) + g.ws() + ":" + g.ws())
		g.value(b, depth)
	}
	b.WriteString(g.ws() + "}")
}

func (g gen) args() string {
	var b strings.Builder
	g.object(&b, 1)
	return b.String()
}

// jsonCall writes {"name": NAME, "arguments": ARGS} with random spacing
// and key, sometimes with "type": "function" first, and sometimes another
// member after the arguments.
func (g gen) jsonCall(name, args string) string {
	key := g.pick([]string{"arguments", "parameters"})
	s := "{" + g.ws()
	if g.r.IntN(4) == 0 {
		s += `"type"` + g.ws() + ":" + g.ws() + `"function"` + g.ws() + "," + g.ws()
	}
	s += `"name"` + g.ws() + ":" + g.ws() + `"` + name + `"` + g.ws() + "," + g.ws() + `"` + key + `"` + g.ws() + ":" + g.ws() + args
	if g.r.IntN(4) == 0 {
		s += g.ws() + `,"extra":` + g.ws() + "[1, {}]"
	}
	return s + g.ws() + "}"
}

// reply returns a random reply in format f with its content and calls.
func (g gen) reply(f Format) (text, content string, calls []Call) {
	var b, c strings.Builder
	nCalls := g.r.IntN(4)
	addCall := func() string {
		name, args := g.name(), g.args()
		calls = append(calls, Call{Name: name, Arguments: args})
		return args
	}
	callFirst := true // no content but whitespace before the first call
	switch f {
	case Hermes:
		for i := range nCalls {
			s := g.content(g.r.IntN(4))
			b.WriteString(s)
			c.WriteString(s)
			if i == 0 && strings.TrimSpace(s) != "" {
				callFirst = false
			}
			name := ""
			args := addCall()
			name = calls[len(calls)-1].Name
			b.WriteString("<tool_call>" + g.ws() + g.jsonCall(name, args) + g.ws())
			if i < nCalls-1 || g.r.IntN(3) > 0 {
				b.WriteString("</tool_call>")
			} else {
				return b.String(), trimContent(c.String(), len(calls), callFirst), calls // open at the end
			}
		}
	case Llama3JSON:
		if nCalls > 0 {
			b.WriteString(g.ws() + g.pick([]string{"", pythonTag}) + g.ws())
			for i := range nCalls {
				if i > 0 {
					b.WriteString(g.ws() + ";" + g.ws())
				}
				args := addCall()
				b.WriteString(g.jsonCall(calls[len(calls)-1].Name, args))
			}
			s := g.content(g.r.IntN(4))
			if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), ";") {
				s = "x" + s
			}
			b.WriteString(s)
			c.WriteString(s)
			return b.String(), trimContent(c.String(), len(calls), true), calls
		}
	case Phi4Mini:
		s := g.content(g.r.IntN(4))
		b.WriteString(s)
		c.WriteString(s)
		callFirst = strings.TrimSpace(s) == ""
		if nCalls > 0 {
			b.WriteString("functools[" + g.ws())
			for i := range nCalls {
				if i > 0 {
					b.WriteString(g.ws() + "," + g.ws())
				}
				args := addCall()
				b.WriteString(g.jsonCall(calls[len(calls)-1].Name, args))
			}
			b.WriteString(g.ws() + "]")
		}
	case DeepSeekR1:
		s := g.content(g.r.IntN(4))
		b.WriteString(s)
		c.WriteString(s)
		callFirst = strings.TrimSpace(s) == ""
		if nCalls > 0 {
			b.WriteString(dsCallsBegin + g.pick([]string{"", "\n"}))
			for i := range nCalls {
				if i > 0 {
					b.WriteString(g.pick([]string{"", "\n"}))
				}
				args := addCall()
				b.WriteString(dsCallBegin + "function" + dsSep + calls[len(calls)-1].Name + "\n```json\n" + args + g.ws() + "```" + g.ws() + dsCallEnd)
			}
			b.WriteString(g.pick([]string{dsCallsEnd, dsCallsEnd, ""}))
		}
	}
	s := g.content(g.r.IntN(4))
	if f == Llama3JSON && strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") || strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "<|") {
		s = "x" + s // a Llama reply starting so could be a call
	}
	if nCalls == 0 {
		callFirst = false
	}
	b.WriteString(s)
	c.WriteString(s)
	return b.String(), trimContent(c.String(), len(calls), callFirst), calls
}

// trimContent is the content rule: with calls, trailing whitespace goes,
// and leading whitespace too if a call came before any content.
func trimContent(s string, calls int, callFirst bool) string {
	if calls == 0 {
		return s
	}
	if callFirst {
		s = strings.TrimLeft(s, " \t\r\n")
	}
	return strings.TrimRight(s, " \t\r\n")
}

func TestGeneratedReplies(t *testing.T) {
	g := gen{rand.New(rand.NewPCG(5, 6))}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for k := range n {
		f := []Format{Hermes, Llama3JSON, DeepSeekR1, Phi4Mini}[k%4]
		text, content, calls := g.reply(f)
		c := replyCase{name: fmt.Sprintf("generated %d (%v) %q", k, f, text), f: f, text: text, content: content, calls: calls}
		gotContent, gotCalls, _ := Parse(f, text)
		checkReply(t, c.name, c, gotContent, gotCalls)
		var pieces []string
		for s := text; s != ""; {
			m := min(len(s), g.r.IntN(6))
			pieces = append(pieces, s[:m])
			s = s[m:]
		}
		compareWithParse(t, c.name+" random split", c, pieces)
		if k%10 == 0 {
			bytes := strings.Split(text, "")
			compareWithParse(t, c.name+" runewise", c, bytes)
		}
		if t.Failed() {
			return
		}
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }
