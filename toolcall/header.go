package toolcall

import (
	"encoding/json"
	"strings"
)

// A call block's header is everything up to the start of its arguments:
// the name and the syntax around it. A header is parsed from the block's
// text again on each Add until it is complete; it is short.

type hdrStatus uint8

const (
	hdrMore   hdrStatus = iota // the text ends before the header could be decided
	hdrFail                    // the text cannot be the start of a call
	hdrArgs                    // the arguments object starts at at
	hdrNoArgs                  // the call object closed without arguments; at is just past it
)

type header struct {
	st   hdrStatus
	name string
	at   int
}

// maxName bounds a function name in a reply (OpenAI's names are at most 64
// bytes); maxType bounds DeepSeek's call type ("function").
const (
	maxName = 256
	maxType = 32
)

// match is the outcome of matching expected text at a cursor.
type match uint8

const (
	matched match = iota
	short         // the text ended inside what was expected
	mismatch
)

// cursor matches a block's text against the expected syntax from the
// left, telling a mismatch from text that ended too soon.
type cursor struct {
	s string
	i int
}

func (c *cursor) ws() {
	for c.i < len(c.s) && isWS(c.s[c.i]) {
		c.i++
	}
}

func (c *cursor) lit(l string) match {
	n := min(len(l), len(c.s)-c.i)
	if c.s[c.i:c.i+n] != l[:n] {
		return mismatch
	}
	if n < len(l) {
		return short
	}
	c.i += n
	return matched
}

// jsonString reads a JSON string of at most limit bytes.
func (c *cursor) jsonString(limit int) (string, match) {
	if c.i == len(c.s) {
		return "", short
	}
	if c.s[c.i] != '"' {
		return "", mismatch
	}
	for j := c.i + 1; j < len(c.s); j++ {
		if j-c.i > limit {
			return "", mismatch
		}
		switch ch := c.s[j]; {
		case ch == '\\':
			j++
		case ch == '"':
			var v string
			if json.Unmarshal([]byte(c.s[c.i:j+1]), &v) != nil {
				return "", mismatch
			}
			c.i = j + 1
			return v, matched
		case ch < 0x20:
			return "", mismatch
		}
	}
	return "", short
}

func undecided(m match) header {
	if m == short {
		return header{st: hdrMore}
	}
	return header{st: hdrFail}
}

// jsonHeader parses the header of a call object (Hermes' block body, a
// Llama reply): {"name": "NAME", "arguments": { — or "parameters" — or
// {"name": "NAME"}, optionally with "type": "function" first (Llama 3.x
// models write it at times; llama.cpp accepts it too). Whitespace may
// surround every token.
func jsonHeader(s string) header {
	c := cursor{s: s}
	c.ws()
	if m := c.lit("{"); m != matched {
		return undecided(m)
	}
	c.ws()
	switch c.lit(`"type"`) {
	case short:
		return header{st: hdrMore}
	case matched:
		for _, l := range []string{":", `"function"`, ","} {
			c.ws()
			if m := c.lit(l); m != matched {
				return undecided(m)
			}
		}
		c.ws()
	}
	for _, l := range []string{`"name"`, ":"} {
		if m := c.lit(l); m != matched {
			return undecided(m)
		}
		c.ws()
	}
	name, m := c.jsonString(maxName)
	if m != matched {
		return undecided(m)
	}
	if name == "" {
		return header{st: hdrFail}
	}
	c.ws()
	switch c.lit("}") {
	case matched:
		return header{st: hdrNoArgs, name: name, at: c.i}
	case short:
		return header{st: hdrMore}
	}
	if m := c.lit(","); m != matched {
		return undecided(m)
	}
	c.ws()
	if m := c.lit(`"arguments"`); m != matched {
		if m2 := c.lit(`"parameters"`); m2 != matched {
			return undecided(min(m, m2)) // short if either could still match
		}
	}
	c.ws()
	if m := c.lit(":"); m != matched {
		return undecided(m)
	}
	c.ws()
	return argsStart(c, name)
}

// argsStart requires the arguments object to start at the cursor.
func argsStart(c cursor, name string) header {
	if c.i == len(c.s) {
		return header{st: hdrMore}
	}
	if c.s[c.i] != '{' {
		return header{st: hdrFail}
	}
	return header{st: hdrArgs, name: name, at: c.i}
}

// deepSeekHeader parses the header of a DeepSeek call block, after
// <｜tool▁call▁begin｜>: TYPE<｜tool▁sep｜>NAME\n```json\n{ — the type is
// "function" in practice and not checked; the "json" after the fence and
// the whitespace around it are optional.
func deepSeekHeader(s string) header {
	i, m := findWithin(s, dsSep, maxType)
	if m != matched {
		return undecided(m)
	}
	rest := i + len(dsSep)
	j, m := findWithin(s[rest:], "\n", maxName)
	if m != matched {
		return undecided(m)
	}
	name := strings.TrimSpace(s[rest : rest+j])
	if name == "" {
		return header{st: hdrFail}
	}
	c := cursor{s: s, i: rest + j + 1}
	c.ws()
	if m := c.lit("```"); m != matched {
		return undecided(m)
	}
	if c.lit("json") == short {
		return header{st: hdrMore}
	}
	c.ws()
	return argsStart(c, name)
}

// findWithin finds sub in s starting at most limit bytes in.
func findWithin(s, sub string, limit int) (int, match) {
	if i := strings.Index(s[:min(len(s), limit+len(sub))], sub); i >= 0 {
		return i, matched
	}
	if len(s) >= limit+len(sub) {
		return 0, mismatch
	}
	return 0, short
}
