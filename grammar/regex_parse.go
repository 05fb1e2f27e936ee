package grammar

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// rxKind is the kind of a parsed regular expression node.
type rxKind uint8

const (
	rxEmpty  rxKind = iota // matches ""
	rxChar                 // one character of set
	rxConcat               // subs in sequence
	rxAlt                  // one of subs
	rxRepeat               // subs[0]{min,max}, max -1 unbounded
)

// rxNode is a parsed regular expression.
type rxNode struct {
	kind     rxKind
	set      cpSet
	subs     []*rxNode
	min, max int
}

// rxBranch is one top-level alternative with its anchors.
type rxBranch struct {
	node       *rxNode
	begin, end bool // anchored by ^ / $
}

// The classes follow Go's RE2 (the engine JSON Schema validators in Go use):
// ASCII \d \w \s, and `.` is every character but \n.
var (
	rxDigit = newCPSet(cpRange{'0', '9'})
	rxWord  = newCPSet(cpRange{'0', '9'}, cpRange{'A', 'Z'}, cpRange{'_', '_'}, cpRange{'a', 'z'})
	rxSpace = newCPSet(cpRange{'\t', '\n'}, cpRange{'\f', '\r'}, cpRange{' ', ' '})
	rxDot   = cpRune('\n').complement()
)

// rxParser parses the regex subset of RegexGBNF.
type rxParser struct {
	src   string
	pos   int
	depth int
}

func (p *rxParser) errAt(off int, format string, args ...any) error {
	return &RegexError{Pattern: p.src, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func (p *rxParser) eof() bool { return p.pos >= len(p.src) }

func (p *rxParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.src[p.pos]
}

// parseRegex parses a whole pattern into its top-level alternatives.
func parseRegex(src string) ([]rxBranch, error) {
	if len(src) > MaxRegexBytes {
		return nil, &RegexError{Pattern: src, Offset: MaxRegexBytes, Msg: fmt.Sprintf("the pattern is %d bytes, over the limit of %d", len(src), MaxRegexBytes)}
	}
	if !utf8.ValidString(src) {
		return nil, &RegexError{Pattern: src, Offset: 0, Msg: "the pattern is not valid UTF-8"}
	}
	p := &rxParser{src: src}
	var out []rxBranch
	for {
		var b rxBranch
		if p.peek() == '^' {
			b.begin = true
			p.pos++
		}
		n, end, err := p.concat()
		if err != nil {
			return nil, err
		}
		b.node, b.end = n, end
		out = append(out, b)
		if p.eof() {
			return out, nil
		}
		switch p.peek() {
		case '|':
			p.pos++
		case ')':
			return nil, p.errAt(p.pos, "unmatched )")
		}
	}
}

// alternation parses alternatives inside a group.
func (p *rxParser) alternation() (*rxNode, error) {
	var alts []*rxNode
	for {
		n, _, err := p.concat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
		if p.peek() != '|' {
			break
		}
		p.pos++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &rxNode{kind: rxAlt, subs: alts}, nil
}

// concat parses a sequence up to `|`, `)` or the end; end reports a `$`
// that closed it (only allowed at the top level, before `|` or the end).
func (p *rxParser) concat() (*rxNode, bool, error) {
	var items []*rxNode
	for !p.eof() {
		c := p.peek()
		switch c {
		case '|', ')':
			return rxSeq(items), false, nil
		case '$':
			off := p.pos
			p.pos++
			if p.depth > 0 || !(p.eof() || p.peek() == '|') {
				return nil, false, p.errAt(off, "$ is supported only at the end of the pattern (or of a top-level alternative)")
			}
			return rxSeq(items), true, nil
		case '^':
			return nil, false, p.errAt(p.pos, "^ is supported only at the start of the pattern (or of a top-level alternative)")
		case '*', '+', '?':
			return nil, false, p.errAt(p.pos, "%c has nothing to repeat", c)
		case '{':
			if p.countAhead() {
				return nil, false, p.errAt(p.pos, "{ has nothing to repeat")
			}
		}
		atom, err := p.atom()
		if err != nil {
			return nil, false, err
		}
		atom, err = p.quantifiers(atom)
		if err != nil {
			return nil, false, err
		}
		items = append(items, atom)
	}
	return rxSeq(items), false, nil
}

func rxSeq(items []*rxNode) *rxNode {
	switch len(items) {
	case 0:
		return &rxNode{kind: rxEmpty}
	case 1:
		return items[0]
	}
	return &rxNode{kind: rxConcat, subs: items}
}

// quantifiers applies a postfix quantifier (and its lazy mark) to atom.
func (p *rxParser) quantifiers(atom *rxNode) (*rxNode, error) {
	off := p.pos
	lo, hi := 0, 0
	switch p.peek() {
	case '*':
		lo, hi = 0, -1
		p.pos++
	case '+':
		lo, hi = 1, -1
		p.pos++
	case '?':
		lo, hi = 0, 1
		p.pos++
	case '{':
		l, h, ok := p.tryCount()
		if !ok {
			return atom, nil
		}
		if err := p.checkCount(off, l, h); err != nil {
			return nil, err
		}
		lo, hi = l, h
	default:
		return atom, nil
	}
	if p.peek() == '?' { // lazy: the same language
		p.pos++
	}
	switch p.peek() {
	case '*', '+', '?':
		return nil, p.errAt(p.pos, "nested quantifier %c (possessive and repeated quantifiers are not supported)", p.peek())
	case '{':
		if p.countAhead() {
			return nil, p.errAt(p.pos, "nested quantifier {")
		}
	}
	if max(lo, hi) > maxNullableRepeat && rxNullable(atom) {
		return nil, p.errAt(off, "a count over %d of something that can match the empty text: its ways of matching multiply with the count (write the repeated part so that it cannot be empty)", maxNullableRepeat)
	}
	return &rxNode{kind: rxRepeat, subs: []*rxNode{atom}, min: lo, max: hi}, nil
}

// rxNullable reports whether n matches the empty string.
func rxNullable(n *rxNode) bool {
	switch n.kind {
	case rxEmpty:
		return true
	case rxConcat:
		for _, s := range n.subs {
			if !rxNullable(s) {
				return false
			}
		}
		return true
	case rxAlt:
		for _, s := range n.subs {
			if rxNullable(s) {
				return true
			}
		}
		return false
	case rxRepeat:
		return n.min == 0 || rxNullable(n.subs[0])
	}
	return false
}

func (p *rxParser) checkCount(off, lo, hi int) error {
	if lo > MaxRepeat || hi > MaxRepeat {
		return p.errAt(off, "repetition count over %d", MaxRepeat)
	}
	if hi >= 0 && hi < lo {
		return p.errAt(off, "repetition {%d,%d} has its maximum below its minimum", lo, hi)
	}
	return nil
}

// countAhead reports whether a count {m}, {m,} or {m,n} starts at pos.
func (p *rxParser) countAhead() bool {
	save := p.pos
	_, _, ok := p.tryCount()
	p.pos = save
	return ok
}

// tryCount reads {m}, {m,} or {m,n} at pos, moving past it; ok is false
// (and pos unchanged) when the text is not one, and `{` is then a literal.
func (p *rxParser) tryCount() (lo, hi int, ok bool) {
	i := p.pos + 1
	num := func() (int, bool) {
		j := i
		for i < len(p.src) && p.src[i] >= '0' && p.src[i] <= '9' {
			i++
		}
		if i == j {
			return 0, false
		}
		n, err := strconv.Atoi(p.src[j:i])
		if err != nil || n > 1<<30 {
			n = 1 << 30
		}
		return n, true
	}
	lo, ok = num()
	if !ok || i >= len(p.src) {
		return 0, 0, false
	}
	hi = lo
	if p.src[i] == ',' {
		i++
		var has bool
		if hi, has = num(); !has {
			hi = -1
		}
	}
	if i >= len(p.src) || p.src[i] != '}' {
		return 0, 0, false
	}
	p.pos = i + 1
	return lo, hi, true
}

// atom parses one character, class, escape or group.
func (p *rxParser) atom() (*rxNode, error) {
	off := p.pos
	switch c := p.peek(); c {
	case '(':
		return p.group()
	case '[':
		set, err := p.class()
		if err != nil {
			return nil, err
		}
		return &rxNode{kind: rxChar, set: set}, nil
	case '.':
		p.pos++
		return &rxNode{kind: rxChar, set: rxDot}, nil
	case '\\':
		set, err := p.escape()
		if err != nil {
			return nil, err
		}
		return &rxNode{kind: rxChar, set: set}, nil
	default:
		r, n := utf8.DecodeRuneInString(p.src[off:])
		p.pos += n
		return &rxNode{kind: rxChar, set: cpRune(r)}, nil
	}
}

// group parses (...), (?:...) and named groups (?<name>...), (?P<name>...).
func (p *rxParser) group() (*rxNode, error) {
	open := p.pos
	p.pos++
	if p.peek() == '?' {
		rest := p.src[p.pos:]
		switch {
		case len(rest) >= 2 && rest[1] == ':':
			p.pos += 2
		case len(rest) >= 2 && (rest[1] == '=' || rest[1] == '!'):
			return nil, p.errAt(open, "lookahead is not supported")
		case len(rest) >= 3 && rest[1] == '<' && (rest[2] == '=' || rest[2] == '!'):
			return nil, p.errAt(open, "lookbehind is not supported")
		case len(rest) >= 2 && rest[1] == '<', len(rest) >= 3 && rest[1] == 'P' && rest[2] == '<':
			i := p.pos + 2
			if rest[1] == 'P' {
				i++
			}
			j := i
			for j < len(p.src) && (p.src[j] == '_' || p.src[j] >= 'a' && p.src[j] <= 'z' || p.src[j] >= 'A' && p.src[j] <= 'Z' || j > i && p.src[j] >= '0' && p.src[j] <= '9') {
				j++
			}
			if j == i || j >= len(p.src) || p.src[j] != '>' {
				return nil, p.errAt(open, "malformed group name")
			}
			p.pos = j + 1
		default:
			return nil, p.errAt(open, "group modifiers and inline flags (?...) are not supported")
		}
	}
	if p.depth++; p.depth > maxRegexNesting {
		return nil, p.errAt(open, "groups nested deeper than %d", maxRegexNesting)
	}
	n, err := p.alternation()
	if err != nil {
		return nil, err
	}
	p.depth--
	if p.peek() != ')' {
		return nil, p.errAt(open, "unclosed (")
	}
	p.pos++
	return n, nil
}

// class parses [...] or [^...].
func (p *rxParser) class() (cpSet, error) {
	open := p.pos
	p.pos++
	neg := false
	if p.peek() == '^' {
		neg = true
		p.pos++
	}
	if p.peek() == ']' {
		return nil, p.errAt(p.pos, "] at the start of a class is ambiguous between dialects; escape it as \\]")
	}
	var set cpSet
	for {
		if p.eof() {
			return nil, p.errAt(open, "unclosed [")
		}
		if p.peek() == ']' {
			p.pos++
			break
		}
		if p.peek() == '[' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == ':' || p.src[p.pos+1] == '=' || p.src[p.pos+1] == '.') {
			return nil, p.errAt(p.pos, "POSIX classes [:...:] are not supported")
		}
		off := p.pos
		lo, single, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		if p.peek() == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
			p.pos++
			hiOff := p.pos
			hi, single2, err := p.classAtom()
			if err != nil {
				return nil, err
			}
			a, ok1 := lo.single()
			b, ok2 := hi.single()
			if !single || !single2 || !ok1 || !ok2 {
				return nil, p.errAt(hiOff, "a class range needs single characters at both ends")
			}
			if b < a {
				return nil, p.errAt(off, "class range %q-%q is reversed", a, b)
			}
			set = set.union(newCPSet(cpRange{a, b}))
			continue
		}
		set = set.union(lo)
	}
	if neg {
		set = set.complement()
	}
	if set.empty() {
		return nil, p.errAt(open, "the class matches nothing")
	}
	return set, nil
}

// classAtom reads one class member; single is false for \d-like sets.
func (p *rxParser) classAtom() (cpSet, bool, error) {
	if p.peek() == '\\' {
		if p.pos+1 < len(p.src) && p.src[p.pos+1] == 'b' {
			p.pos += 2
			return cpRune('\b'), true, nil
		}
		if p.pos+1 < len(p.src) && p.src[p.pos+1] == '-' {
			p.pos += 2
			return cpRune('-'), true, nil
		}
		set, err := p.escape()
		if err != nil {
			return nil, false, err
		}
		_, one := set.single()
		return set, one, nil
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return cpRune(r), true, nil
}

// escape reads a backslash escape as a set of characters.
func (p *rxParser) escape() (cpSet, error) {
	off := p.pos
	p.pos++
	if p.eof() {
		return nil, p.errAt(off, "trailing backslash")
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	switch r {
	case 'd':
		return rxDigit, nil
	case 'D':
		return rxDigit.complement(), nil
	case 'w':
		return rxWord, nil
	case 'W':
		return rxWord.complement(), nil
	case 's':
		return rxSpace, nil
	case 'S':
		return rxSpace.complement(), nil
	case 'n':
		return cpRune('\n'), nil
	case 'r':
		return cpRune('\r'), nil
	case 't':
		return cpRune('\t'), nil
	case 'f':
		return cpRune('\f'), nil
	case 'v':
		return cpRune('\v'), nil
	case '0':
		if c := p.peek(); c >= '0' && c <= '9' {
			return nil, p.errAt(off, "octal escapes are not supported")
		}
		return cpRune(0), nil
	case 'x':
		if p.peek() == '{' {
			return p.braceHex(off)
		}
		v, err := p.hex(off, 2)
		if err != nil {
			return nil, err
		}
		return cpRune(v), nil
	case 'u':
		if p.peek() == '{' {
			return p.braceHex(off)
		}
		v, err := p.hex(off, 4)
		if err != nil {
			return nil, err
		}
		if v >= 0xD800 && v <= 0xDBFF && p.pos+6 <= len(p.src) && p.src[p.pos:p.pos+2] == `\u` {
			save := p.pos
			p.pos += 2
			lo, err := p.hex(save, 4)
			if err == nil && lo >= 0xDC00 && lo <= 0xDFFF {
				return cpRune(0x10000 + (v-0xD800)<<10 + (lo - 0xDC00)), nil
			}
			p.pos = save
		}
		if v >= 0xD800 && v <= 0xDFFF {
			return nil, p.errAt(off, "a lone surrogate \\u%04X matches no character", v)
		}
		return cpRune(v), nil
	case 'c':
		if c := p.peek(); c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			p.pos++
			return cpRune(rune(c) % 32), nil
		}
		return nil, p.errAt(off, "\\c needs a letter")
	case 'b', 'B':
		return nil, p.errAt(off, "word boundaries \\%c are not supported", r)
	case 'A', 'z', 'Z', 'G':
		return nil, p.errAt(off, "anchor \\%c is not supported (use ^ and $ at the ends)", r)
	case 'p', 'P':
		return nil, p.errAt(off, "Unicode property classes \\%c are not supported", r)
	case 'k':
		return nil, p.errAt(off, "backreferences are not supported")
	}
	switch {
	case r >= '1' && r <= '9':
		return nil, p.errAt(off, "backreferences are not supported")
	case r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'):
		return nil, p.errAt(off, "unknown escape \\%c", r)
	}
	return cpRune(r), nil
}

func (p *rxParser) hex(off, n int) (rune, error) {
	if p.pos+n > len(p.src) {
		return 0, p.errAt(off, "escape needs %d hex digits", n)
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
	if err != nil {
		return 0, p.errAt(off, "escape needs %d hex digits", n)
	}
	p.pos += n
	return rune(v), nil
}

// braceHex reads {H...} after \x or \u.
func (p *rxParser) braceHex(off int) (cpSet, error) {
	end := p.pos + 1
	for end < len(p.src) && p.src[end] != '}' {
		end++
	}
	if end >= len(p.src) || end == p.pos+1 || end-p.pos-1 > 8 {
		return nil, p.errAt(off, "malformed \\x{...} escape")
	}
	v, err := strconv.ParseUint(p.src[p.pos+1:end], 16, 32)
	if err != nil || v > utf8.MaxRune || v >= 0xD800 && v <= 0xDFFF {
		return nil, p.errAt(off, "malformed \\x{...} escape")
	}
	p.pos = end + 1
	return cpRune(rune(v)), nil
}
