package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits bound what Compile accepts, so a hostile grammar costs bounded
// time and memory.
const (
	// MaxSourceBytes bounds the GBNF text.
	MaxSourceBytes = 4 << 20
	// MaxElements bounds the compiled grammar's elements (repetitions
	// expanded, characters as UTF-8 bytes).
	MaxElements = 1 << 21
	// MaxRepeat bounds the m and n of x{m,n}.
	MaxRepeat = 10000
	// maxNesting bounds parentheses.
	maxNesting = 200
)

// SyntaxError reports GBNF text that does not parse, at a byte offset of
// the source (with its line and column, both from 1).
type SyntaxError struct {
	Offset    int
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: line %d, column %d (offset %d): %s", e.Line, e.Col, e.Offset, e.Msg)
}

// Compile parses GBNF text (llama.cpp's dialect: `name ::= alternatives`,
// "literals", [classes], [^negated], `.`, ( groups ), `*`, `+`, `?`,
// `{m}`, `{m,}`, `{m,n}`, `#` comments) and returns the grammar whose start
// rule is `root`.
func Compile(src string) (*Grammar, error) {
	if len(src) > MaxSourceBytes {
		return nil, &SyntaxError{Offset: MaxSourceBytes, Line: 1, Col: 1, Msg: fmt.Sprintf("the grammar is %d bytes, over the limit of %d", len(src), MaxSourceBytes)}
	}
	p := &parser{src: src, b: newBuilder()}
	if err := p.parse(); err != nil {
		return nil, err
	}
	g, err := p.b.finish(p)
	if err != nil {
		return nil, err
	}
	// The start state is built now, within the matcher's bounds, so that
	// a grammar whose start is already past them is refused here.
	if t := g.current(); t.err != nil {
		return nil, p.errorf(0, "at the start: %s", t.err.Msg)
	}
	return g, nil
}

type parser struct {
	src string
	pos int
	b   *builder
	// depth counts open parentheses.
	depth int
}

func (p *parser) errorf(off int, format string, args ...any) *SyntaxError {
	line, col := 1, 1
	for i := 0; i < off && i < len(p.src); i++ {
		if p.src[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &SyntaxError{Offset: off, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// space skips blanks and comments, and newlines when newlines is set.
func (p *parser) space(newlines bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		case (c == '\r' || c == '\n') && newlines:
			p.pos++
		default:
			return
		}
	}
}

// continuation reports whether the next line goes on with an alternative
// (starts with `|`), and if so moves there.
func (p *parser) continuation() bool {
	save := p.pos
	p.space(true)
	if p.pos < len(p.src) && p.src[p.pos] == '|' {
		return true
	}
	p.pos = save
	return false
}

func (p *parser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *parser) parse() error {
	p.space(true)
	if p.pos >= len(p.src) {
		return p.errorf(0, "the grammar is empty")
	}
	for p.pos < len(p.src) {
		start := p.pos
		name := p.name()
		if name == "" {
			return p.errorf(p.pos, "expected a rule name, found %q", p.peekText())
		}
		p.space(false)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return p.errorf(p.pos, "expected ::= after the rule name %q", clip(name))
		}
		p.pos += 3
		p.space(true)
		r := p.b.ruleID(name, start)
		if p.b.rules[r].defined {
			return p.errorf(start, "rule %q is defined twice", clip(name))
		}
		p.b.rules[r].defined = true
		p.b.rules[r].off = start
		alts, err := p.alternates(false)
		if err != nil {
			return err
		}
		p.b.rules[r].alts = alts
		if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
			return p.errorf(p.pos, "expected the end of the line after rule %q, found %q", clip(name), p.peekText())
		}
		p.space(true)
	}
	return nil
}

func (p *parser) peekText() string {
	end := min(p.pos+10, len(p.src))
	return p.src[p.pos:end]
}

func (p *parser) alternates(nested bool) ([][]elem, error) {
	var alts [][]elem
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if !nested && p.pos < len(p.src) && p.src[p.pos] != '|' && !p.continuation() {
			return alts, nil
		}
		if p.pos >= len(p.src) || p.src[p.pos] != '|' {
			return alts, nil
		}
		p.pos++
		p.space(true)
	}
}

// sequence parses elements up to `|`, `)` or the end of the line.
func (p *parser) sequence(nested bool) ([]elem, error) {
	var seq []elem
	last := -1 // start of the last item in seq, for postfix operators
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		start := len(seq)
		switch {
		case c == '"':
			p.pos++
			for {
				if p.pos >= len(p.src) {
					return nil, p.errorf(p.pos, "unterminated string literal")
				}
				if p.src[p.pos] == '"' {
					p.pos++
					break
				}
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				seq = p.b.appendRune(seq, r)
			}
		case c == '[':
			e, err := p.class()
			if err != nil {
				return nil, err
			}
			seq = append(seq, e)
		case c == '.':
			p.pos++
			seq = append(seq, p.b.classElem(cpAll))
		case c == '(':
			open := p.pos
			p.pos++
			p.depth++
			if p.depth > maxNesting {
				return nil, p.errorf(open, "parentheses nested deeper than %d", maxNesting)
			}
			p.space(true)
			alts, err := p.alternates(true)
			if err != nil {
				return nil, err
			}
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, p.errorf(open, "unclosed parenthesis")
			}
			p.pos++
			p.depth--
			seq = append(seq, p.b.helper(alts))
		case c == '<':
			return nil, p.errorf(p.pos, "token references (<...>) are not supported")
		case isWordChar(c):
			off := p.pos
			name := p.name()
			seq = append(seq, elem{set: -1, rule: int32(p.b.ruleID(name, off))})
		case c == '*' || c == '+' || c == '?' || c == '{':
			if last < 0 {
				return nil, p.errorf(p.pos, "%q follows nothing it can repeat", c)
			}
			op := p.pos
			lo, hi, err := p.repetition()
			if err != nil {
				return nil, err
			}
			item := append([]elem(nil), seq[last:]...)
			seq = seq[:last]
			rep, err := p.b.repeat(item, lo, hi, op)
			if err != nil {
				return nil, p.errorf(op, "%s", err.Error())
			}
			seq = append(seq, rep...)
			start = last
		default:
			return seq, nil
		}
		if len(seq) > MaxElements {
			return nil, p.errorf(p.pos, "the grammar has over %d elements", MaxElements)
		}
		last = start
		p.space(nested)
	}
	return seq, nil
}

// repetition parses a postfix operator: lo and hi, hi -1 for unbounded.
func (p *parser) repetition() (int, int, error) {
	c := p.src[p.pos]
	p.pos++
	switch c {
	case '*':
		return 0, -1, nil
	case '+':
		return 1, -1, nil
	case '?':
		return 0, 1, nil
	}
	open := p.pos - 1
	num := func() (int, bool, error) {
		p.space(false)
		start := p.pos
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		if start == p.pos {
			return 0, false, nil
		}
		n, err := strconv.Atoi(p.src[start:p.pos])
		if err != nil || n > MaxRepeat {
			return 0, false, p.errorf(start, "repetition count %s is over the limit of %d", clip(p.src[start:p.pos]), MaxRepeat)
		}
		p.space(false)
		return n, true, nil
	}
	lo, ok, err := num()
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		lo = 0
	}
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		if !ok {
			return 0, 0, p.errorf(open, "empty repetition {}")
		}
		return lo, lo, nil
	}
	if p.pos >= len(p.src) || p.src[p.pos] != ',' {
		return 0, 0, p.errorf(p.pos, "expected , or } in the repetition")
	}
	p.pos++
	hi, ok, err := num()
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		hi = -1
	}
	if p.pos >= len(p.src) || p.src[p.pos] != '}' {
		return 0, 0, p.errorf(p.pos, "expected } to close the repetition")
	}
	p.pos++
	if hi >= 0 && hi < lo {
		return 0, 0, p.errorf(open, "repetition {%d,%d} has its maximum below its minimum", lo, hi)
	}
	return lo, hi, nil
}

// char reads one character of a literal or class, escapes decoded.
func (p *parser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n == 1 {
			return 0, p.errorf(p.pos, "invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	off := p.pos
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errorf(off, "unterminated escape")
	}
	c := p.src[p.pos]
	p.pos++
	hex := func(n int) (rune, error) {
		if p.pos+n > len(p.src) {
			return 0, p.errorf(off, "escape \\%c needs %d hex digits", c, n)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil {
			return 0, p.errorf(off, "escape \\%c needs %d hex digits", c, n)
		}
		p.pos += n
		if v > utf8.MaxRune || v >= 0xD800 && v <= 0xDFFF {
			return 0, p.errorf(off, "escape %s is not a Unicode scalar value", p.src[off:p.pos])
		}
		return rune(v), nil
	}
	switch c {
	case 'x':
		return hex(2)
	case 'u':
		return hex(4)
	case 'U':
		return hex(8)
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^', '/', '\'', '.', '(', ')', '|', '*', '+', '?', '{', '}':
		return rune(c), nil
	}
	return 0, p.errorf(off, "unknown escape \\%c", c)
}

// class parses [...] or [^...].
func (p *parser) class() (elem, error) {
	open := p.pos
	p.pos++
	negate := false
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		negate = true
		p.pos++
	}
	var ranges []cpRange
	for {
		if p.pos >= len(p.src) {
			return elem{}, p.errorf(open, "unterminated character class")
		}
		if p.src[p.pos] == ']' {
			p.pos++
			break
		}
		lo, err := p.char()
		if err != nil {
			return elem{}, err
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return elem{}, err
			}
			if hi < lo {
				return elem{}, p.errorf(open, "range %q-%q is reversed", lo, hi)
			}
		}
		ranges = append(ranges, cpRange{lo, hi})
	}
	set := newCPSet(ranges...)
	if negate {
		set = set.complement()
	}
	if set.empty() {
		return elem{}, p.errorf(open, "the character class matches nothing")
	}
	return p.b.classElem(set), nil
}
