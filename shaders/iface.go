package shaders

import (
	"fmt"
	"strconv"
	"strings"
)

// Access is how an entry point binds a buffer.
type Access int

// Buffer accesses, as WGSL declares them.
const (
	Read      Access = iota // var<storage, read> (or var<storage>)
	ReadWrite               // var<storage, read_write>
	Uniform                 // var<uniform>
)

func (a Access) String() string {
	switch a {
	case ReadWrite:
		return "read_write"
	case Uniform:
		return "uniform"
	}
	return "read"
}

// Binding is one @group(0) buffer binding of an entry point.
type Binding struct {
	Index  int
	Name   string // the WGSL variable
	Access Access
	Type   string // the store type, e.g. "array<f32>" or "Params"
}

// Field is one member of a WGSL struct.
type Field struct {
	Name string
	Type string // e.g. "u32", "f32"
}

// Entry is the interface of one @compute entry point: its bindings 0..n-1
// in order, and the struct its uniform binding holds.
type Entry struct {
	Name     string
	Bindings []Binding
	Params   string  // the uniform's struct type; "" when the entry has no uniform
	Fields   []Field // the members of Params, in order
}

// Module is what Parse reads from a kernel's WGSL: its entry points, its
// structs and its module-scope constants.
type Module struct {
	File    string
	Entries map[string]*Entry
	Structs map[string][]Field
	consts  map[string][]string // const and override initialisers, as tokens
}

// Interface builds file with f (as Build) and parses the result.
func Interface(file string, f Features) (*Module, error) {
	src, err := Build(file, f)
	if err != nil {
		return nil, err
	}
	return Parse(file, src)
}

// Parse reads the interface of WGSL source src (a built kernel: the op file
// and common.wgsl). Every @group(0) @binding(i) variable is a binding, and
// the module's indices must run 0..n-1 without gaps. An entry point's
// bindings are 0 up to the highest index it (or a function it calls) uses:
// at each index the variable of that index it uses or, when it uses none,
// the module's only variable of that index, so that entries sharing a
// layout see the bindings they skip. Parse knows the subset of WGSL the
// kernels are written in; anything it cannot follow is an error.
func Parse(file, src string) (*Module, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	p := &parser{file: file, toks: toks}
	m := &Module{File: file, Entries: map[string]*Entry{}, Structs: map[string][]Field{}, consts: map[string][]string{}}
	type resource struct {
		Binding
		group int
	}
	var vars []resource
	type fn struct {
		uses    map[string]bool
		compute bool
	}
	fns := map[string]*fn{}
	var order []string
	for !p.done() {
		attrs, err := p.attributes()
		if err != nil {
			return nil, err
		}
		switch t := p.next(); t {
		case ";":
		case "enable", "requires", "diagnostic", "alias":
			p.until(";")
		case "struct":
			name := p.next()
			fields, err := p.structBody()
			if err != nil {
				return nil, err
			}
			m.Structs[name] = fields
		case "const", "override":
			name := p.next()
			init := p.until(";")
			if i := indexOf(init, "="); i >= 0 {
				m.consts[name] = init[i+1:]
			} else {
				m.consts[name] = nil
			}
		case "var":
			r, err := p.variable()
			if err != nil {
				return nil, err
			}
			g, gok := attrs["group"]
			b, bok := attrs["binding"]
			if !gok || !bok {
				continue // workgroup and private variables
			}
			if r.Access < 0 {
				return nil, p.errorf("binding %s is neither storage nor uniform", r.Name)
			}
			vars = append(vars, resource{Binding{Index: b, Name: r.Name, Access: r.Access, Type: r.Type}, g})
		case "fn":
			name := p.next()
			body, err := p.fnBody()
			if err != nil {
				return nil, err
			}
			f := &fn{uses: map[string]bool{}}
			for _, t := range body {
				f.uses[t] = true
			}
			_, f.compute = attrs["compute"]
			fns[name] = f
			order = append(order, name)
		default:
			return nil, p.errorf("unexpected %q at module scope", t)
		}
	}
	indices := map[int][]resource{}
	most := -1
	for _, v := range vars {
		if v.group != 0 {
			return nil, fmt.Errorf("%s: binding %s is in @group(%d); kernels use group 0 only", file, v.Name, v.group)
		}
		indices[v.Index] = append(indices[v.Index], v)
		most = max(most, v.Index)
	}
	for i := 0; i <= most; i++ {
		if len(indices[i]) == 0 {
			return nil, fmt.Errorf("%s: no @binding(%d): bindings must run 0..%d", file, i, most)
		}
	}
	for _, name := range order {
		f := fns[name]
		if !f.compute {
			continue
		}
		// Everything the entry uses, through the functions it calls.
		used := map[string]bool{}
		stack := []string{name}
		seen := map[string]bool{name: true}
		for len(stack) > 0 {
			g := fns[stack[len(stack)-1]]
			stack = stack[:len(stack)-1]
			for id := range g.uses {
				used[id] = true
				if _, isFn := fns[id]; isFn && !seen[id] {
					seen[id] = true
					stack = append(stack, id)
				}
			}
		}
		top := -1 // the highest index the entry uses
		for _, v := range vars {
			if used[v.Name] {
				top = max(top, v.Index)
			}
		}
		e := &Entry{Name: name}
		for i := 0; i <= top; i++ {
			var pick []resource
			for _, v := range indices[i] {
				if used[v.Name] {
					pick = append(pick, v)
				}
			}
			switch {
			case len(pick) == 0 && len(indices[i]) == 1:
				pick = indices[i]
			case len(pick) != 1:
				var names []string
				for _, v := range indices[i] {
					names = append(names, v.Name)
				}
				return nil, fmt.Errorf("%s: entry %s: @binding(%d) is %s; want one it uses", file, name, i, strings.Join(names, " or "))
			}
			e.Bindings = append(e.Bindings, pick[0].Binding)
			if pick[0].Access == Uniform {
				if e.Params != "" {
					return nil, fmt.Errorf("%s: entry %s has two uniform bindings", file, name)
				}
				e.Params = pick[0].Type
				fields, ok := m.Structs[e.Params]
				if !ok {
					return nil, fmt.Errorf("%s: entry %s: uniform %s has type %s, not a struct of this module", file, name, pick[0].Name, e.Params)
				}
				e.Fields = fields
			}
		}
		m.Entries[name] = e
	}
	return m, nil
}

// Const evaluates the module-scope const or override name (an override's
// default): integer literals, other such constants, + - * / % and
// parentheses.
func (m *Module) Const(name string) (int64, error) {
	return m.eval(name, 0)
}

func (m *Module) eval(name string, depth int) (int64, error) {
	init, ok := m.consts[name]
	if !ok {
		return 0, fmt.Errorf("%s: no constant %s", m.File, name)
	}
	if len(init) == 0 {
		return 0, fmt.Errorf("%s: %s has no value", m.File, name)
	}
	if depth > 32 {
		return 0, fmt.Errorf("%s: %s: constants nest too deep", m.File, name)
	}
	e := &evaluator{m: m, toks: init, depth: depth}
	v, err := e.sum()
	if err == nil && e.i != len(e.toks) {
		err = fmt.Errorf("unexpected %q", e.toks[e.i])
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", m.File, name, err)
	}
	return v, nil
}

type evaluator struct {
	m     *Module
	toks  []string
	i     int
	depth int
}

func (e *evaluator) peek() string {
	if e.i < len(e.toks) {
		return e.toks[e.i]
	}
	return ""
}

func (e *evaluator) sum() (int64, error) {
	v, err := e.product()
	for err == nil && (e.peek() == "+" || e.peek() == "-") {
		op := e.toks[e.i]
		e.i++
		var w int64
		if w, err = e.product(); op == "+" {
			v += w
		} else {
			v -= w
		}
	}
	return v, err
}

func (e *evaluator) product() (int64, error) {
	v, err := e.unit()
	for err == nil && (e.peek() == "*" || e.peek() == "/" || e.peek() == "%") {
		op := e.toks[e.i]
		e.i++
		var w int64
		if w, err = e.unit(); err != nil {
			break
		}
		switch {
		case op == "*":
			v *= w
		case w == 0:
			err = fmt.Errorf("division by zero")
		case op == "/":
			v /= w
		default:
			v %= w
		}
	}
	return v, err
}

func (e *evaluator) unit() (int64, error) {
	t := e.peek()
	e.i++
	switch {
	case t == "(":
		v, err := e.sum()
		if err == nil && e.peek() != ")" {
			err = fmt.Errorf("missing )")
		}
		e.i++
		return v, err
	case t == "-":
		v, err := e.unit()
		return -v, err
	case t != "" && t[0] >= '0' && t[0] <= '9':
		return strconv.ParseInt(strings.TrimRight(t, "iu"), 0, 64)
	case isIdent(t):
		return e.m.eval(t, e.depth+1)
	}
	return 0, fmt.Errorf("cannot evaluate %q", t)
}

// lex splits WGSL into identifiers, numbers and punctuation, dropping
// comments.
func lex(src string) ([]string, error) {
	var toks []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			depth := 0
			for {
				if i >= len(src) {
					return nil, fmt.Errorf("unterminated block comment")
				}
				if strings.HasPrefix(src[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(src[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
		case isIdentByte(c, true):
			j := i + 1
			for j < len(src) && isIdentByte(src[j], false) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i + 1
			for j < len(src) && (isIdentByte(src[j], false) || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E' || src[j-1] == 'p' || src[j-1] == 'P')) {
				j++
			}
			toks = append(toks, src[i:j])
			i = j
		case strings.HasPrefix(src[i:], "->"):
			toks = append(toks, "->")
			i += 2
		default:
			toks = append(toks, string(c))
			i++
		}
	}
	return toks, nil
}

func isIdentByte(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}

func isIdent(t string) bool { return t != "" && isIdentByte(t[0], true) }

func indexOf(toks []string, t string) int {
	for i, x := range toks {
		if x == t {
			return i
		}
	}
	return -1
}

type parser struct {
	file string
	toks []string
	i    int
}

func (p *parser) done() bool { return p.i >= len(p.toks) }

func (p *parser) peek() string {
	if p.done() {
		return ""
	}
	return p.toks[p.i]
}

func (p *parser) next() string {
	t := p.peek()
	p.i++
	return t
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: token %d: %s", p.file, p.i, fmt.Sprintf(format, args...))
}

// attributes reads @name and @name(args); an integer argument is kept
// (group and binding), others are -1.
func (p *parser) attributes() (map[string]int, error) {
	attrs := map[string]int{}
	for p.peek() == "@" {
		p.next()
		name := p.next()
		v := -1
		if p.peek() == "(" {
			args := p.group("(", ")")
			if len(args) == 1 {
				if n, err := strconv.Atoi(strings.TrimRight(args[0], "iu")); err == nil {
					v = n
				}
			}
		}
		attrs[name] = v
	}
	return attrs, nil
}

// group reads a bracketed token list starting at open and returns what is
// inside.
func (p *parser) group(open, close string) []string {
	if p.next() != open {
		return nil
	}
	start, depth := p.i, 1
	for !p.done() {
		switch p.next() {
		case open:
			depth++
		case close:
			if depth--; depth == 0 {
				return p.toks[start : p.i-1]
			}
		}
	}
	return p.toks[start:]
}

// until reads to the next stop token at bracket depth 0 and consumes it.
func (p *parser) until(stop string) []string {
	start, depth := p.i, 0
	for !p.done() {
		t := p.next()
		switch t {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		}
		if t == stop && depth == 0 {
			return p.toks[start : p.i-1]
		}
	}
	return p.toks[start:]
}

// structBody reads `{ name: type, ... }`.
func (p *parser) structBody() ([]Field, error) {
	body := p.group("{", "}")
	var fields []Field
	for i := 0; i < len(body); {
		for i < len(body) && body[i] == "@" { // member attributes
			i += 2
			if i < len(body) && body[i] == "(" {
				for i < len(body) && body[i] != ")" {
					i++
				}
				i++
			}
		}
		if i+2 >= len(body) || !isIdent(body[i]) || body[i+1] != ":" {
			return nil, p.errorf("cannot read a struct member at %q", strings.Join(body[i:], " "))
		}
		name := body[i]
		j, angle := i+2, 0
		for j < len(body) && !(body[j] == "," && angle == 0) {
			switch body[j] {
			case "<":
				angle++
			case ">":
				angle--
			}
			j++
		}
		fields = append(fields, Field{Name: name, Type: strings.Join(body[i+2:j], "")})
		i = j + 1
	}
	return fields, nil
}

// variable reads `var<space, access> name: type;` after `var`; Access is -1
// for address spaces other than storage and uniform.
func (p *parser) variable() (Binding, error) {
	b := Binding{Access: -1}
	var tmpl []string
	if p.peek() == "<" {
		tmpl = p.group("<", ">")
	}
	b.Name = p.next()
	decl := p.until(";")
	if len(decl) > 1 && decl[0] == ":" {
		end := indexOf(decl, "=")
		if end < 0 {
			end = len(decl)
		}
		b.Type = strings.Join(decl[1:end], "")
	}
	if len(tmpl) > 0 {
		switch tmpl[0] {
		case "uniform":
			b.Access = Uniform
		case "storage":
			b.Access = Read
			if len(tmpl) == 3 && tmpl[1] == "," {
				switch tmpl[2] {
				case "read":
				case "read_write":
					b.Access = ReadWrite
				default:
					return b, p.errorf("binding %s: access %q", b.Name, tmpl[2])
				}
			}
		}
	}
	return b, nil
}

// fnBody reads `(params) [-> type] { body }` after the name and returns
// the identifiers of the body.
func (p *parser) fnBody() ([]string, error) {
	// Parameters and locals shadow module-scope names: a parameter named
	// w is not binding w.
	local := map[string]bool{}
	var prev string
	for !p.done() && p.peek() != "{" {
		t := p.next()
		if t == ":" && isIdent(prev) {
			local[prev] = true
		}
		prev = t
	}
	if p.done() {
		return nil, p.errorf("function without a body")
	}
	body := p.group("{", "}")
	for i, t := range body {
		if (t == "let" || t == "var" || t == "const") && i+1 < len(body) && isIdent(body[i+1]) {
			local[body[i+1]] = true
		}
	}
	var ids []string
	for i, t := range body {
		if isIdent(t) && !local[t] && (i == 0 || body[i-1] != ".") { // not a member (v.w)
			ids = append(ids, t)
		}
	}
	return ids, nil
}
