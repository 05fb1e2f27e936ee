package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Generation: every value expression ends with the optional whitespace
// rule, so punctuation is written `"," space`, `":" space` and values need
// nothing before them.

// sharedBodies are the schema-independent rules, with {name} standing for
// the prefixed name of another shared rule.
var sharedBodies = map[string]string{
	"space":   `"" | " " | "\n" [ \t]{0,20}`,
	"value":   `{object} | {array} | {string} | {number} | ("true" | "false" | "null") {space}`,
	"object":  `"{" {space} ( {string} ":" {space} {value} ( "," {space} {string} ":" {space} {value} )* )? "}" {space}`,
	"array":   `"[" {space} ( {value} ( "," {space} {value} )* )? "]" {space}`,
	"string":  `"\"" {char}* "\"" {space}`,
	"char":    `[^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" {hex4} )`,
	"hex4":    `[0-9a-cA-CeEfF] {hex} {hex} {hex} | [dD] [0-7] {hex} {hex} | [dD] [89abAB] {hex} {hex} "\\u" [dD] [c-fC-F] {hex} {hex}`,
	"hex":     `[0-9a-fA-F]`,
	"number":  `"-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? {space}`,
	"integer": `"-"? ("0" | [1-9] [0-9]*) {space}`,
	"boolean": `("true" | "false") {space}`,
	"null":    `"null" {space}`,
	"key-end": `{char}* "\"" {space}`,
}

// rule returns the prefixed name of a shared rule, defining it (and the
// rules it uses) on first use.
func (c *jsCompiler) rule(name string) string {
	if n, ok := c.shared[name]; ok {
		return n
	}
	n := c.w.fresh(name)
	c.shared[name] = n
	body := sharedBodies[name]
	var b strings.Builder
	for {
		i := strings.IndexByte(body, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(body[i:], '}')
		ref := body[i+1 : i+j]
		if _, ok := sharedBodies[ref]; !ok || strings.ContainsAny(ref, " ,") {
			b.WriteString(body[:i+1])
			body = body[i+1:]
			continue
		}
		b.WriteString(body[:i])
		b.WriteString(c.rule(ref))
		body = body[i+j+1:]
	}
	b.WriteString(body)
	c.w.define(n, b.String())
	return n
}

// gen is the expression for a schema; never reports an empty language.
func (c *jsCompiler) gen(s *jsSchema, depth int) (expr string, never bool, err error) {
	if err := c.spend(1); err != nil {
		return "", false, err
	}
	if depth > MaxSchemaDepth {
		return "", false, jsErr(s.ptr, "", "the schema is nested deeper than %d levels", MaxSchemaDepth)
	}
	if c.w.err != nil {
		return "", false, &SchemaError{Msg: fmt.Sprintf("the grammar would exceed %d bytes", MaxSchemaGrammar)}
	}
	branches, err := c.normalize(s, depth)
	if err != nil {
		return "", false, err
	}
	var alts []string
	seen := map[string]bool{}
	for _, b := range branches {
		e, nv, err := c.genFlat(b, depth)
		if err != nil {
			return "", false, err
		}
		if !nv && !seen[e] {
			seen[e] = true
			alts = append(alts, e)
		}
	}
	if len(alts) == 0 {
		return "", true, nil
	}
	return gAlt(alts...), false, nil
}

// genSub is gen for an optional subschema (nil: any value).
func (c *jsCompiler) genSub(s *jsSchema, depth int) (string, bool, error) {
	if s == nil {
		return c.rule("value"), false, nil
	}
	return c.gen(s, depth+1)
}

// genFlat is the expression for one branch.
func (c *jsCompiler) genFlat(f *jsSchema, depth int) (string, bool, error) {
	if f.hasRef {
		return c.genRef(f, depth)
	}
	if f.unconstrained() {
		return c.rule("value"), false, nil
	}
	types := f.typesOf()
	if f.hasEnum {
		return c.genEnum(f, types)
	}
	var alts []string
	add := func(e string, never bool, err error) error {
		if err == nil && !never {
			alts = append(alts, e)
		}
		return err
	}
	if types&jtNull != 0 {
		alts = append(alts, c.rule("null"))
	}
	if types&jtBool != 0 {
		alts = append(alts, c.rule("boolean"))
	}
	if types&(jtInt|jtFrac) != 0 {
		if err := add(c.genNumber(f, types&jtFrac == 0)); err != nil {
			return "", false, err
		}
	}
	if types&jtString != 0 {
		if err := add(c.genString(f)); err != nil {
			return "", false, err
		}
	}
	if types&jtArray != 0 {
		if err := add(c.genArray(f, depth)); err != nil {
			return "", false, err
		}
	}
	if types&jtObject != 0 {
		if err := add(c.genObject(f, depth)); err != nil {
			return "", false, err
		}
	}
	if len(alts) == 0 {
		return "", true, nil
	}
	return gAlt(alts...), false, nil
}

// genRef is a rule for the target of a $ref, shared by every reference to
// it, recursion included.
func (c *jsCompiler) genRef(f *jsSchema, depth int) (string, bool, error) {
	ptr := f.refPtr
	if c.refNever[ptr] {
		return "", true, nil
	}
	if name, ok := c.refRules[ptr]; ok {
		if c.refBusy[ptr] {
			c.refCycle[ptr] = true
		}
		return name, false, nil
	}
	target, err := c.resolve(f, depth+1)
	if err != nil {
		return "", false, err
	}
	hint := "ref"
	if i := strings.LastIndexByte(ptr, '/'); i >= 0 && i+1 < len(ptr) {
		hint = ptr[i+1:]
	}
	name := c.w.fresh(hint)
	c.refRules[ptr], c.refBusy[ptr] = name, true
	e, never, err := c.gen(target, depth+1)
	c.refBusy[ptr] = false
	if err != nil {
		return "", false, err
	}
	if never {
		if c.refCycle[ptr] {
			return "", false, jsErr(f.ptr, "$ref", "the recursive schema %q admits no finite value", "#"+ptr)
		}
		delete(c.refRules, ptr)
		c.refNever[ptr] = true
		return "", true, nil
	}
	c.w.define(name, e)
	return name, false, nil
}

// genString is the expression for strings under f's string keywords.
func (c *jsCompiler) genString(f *jsSchema) (string, bool, error) {
	lo, hi := f.minLen, f.maxLen
	if hi >= 0 && lo > hi {
		return "", true, nil
	}
	q := `"\""`
	if !f.hasPattern && !f.hasFormat {
		if lo == 0 && hi < 0 {
			return c.rule("string"), false, nil
		}
		return gSeq(q, c.w.repeat(c.rule("char"), lo, hi), q, c.rule("space")), false, nil
	}
	if f.hasPattern && f.hasFormat {
		return "", false, jsErr(f.ptr, "format", "format together with pattern is not supported")
	}
	var node *rxNode
	kw := "pattern"
	if f.hasPattern {
		if err := c.spend(len(f.pattern)); err != nil {
			return "", false, err
		}
		branches, err := parseRegex(f.pattern)
		if err != nil {
			return "", false, jsErr(f.ptr, "pattern", "%s", err.(*RegexError).msg())
		}
		node = rxSearch(branches)
	} else {
		kw = "format"
		branches, err := parseRegex(jsFormats[f.format])
		if err != nil {
			panic(err)
		}
		node = rxWhole(branches)
	}
	if lo > 0 || hi >= 0 {
		r, never, ok := rxRestrict(node, lo, hi)
		if !ok {
			lk := "maxLength"
			if hi < 0 {
				lk = "minLength"
			}
			return "", false, jsErr(f.ptr, lk, "length limits together with %s are supported only when one part of the %s varies in length", kw, kw)
		}
		if never {
			return "", true, nil
		}
		node = r
	}
	e := &rxEmitter{w: c.w, json: true}
	body := e.expr(node)
	return gSeq(q, c.w.rule("str", body), q, c.rule("space")), false, nil
}

// genArray is the expression for arrays under f's array keywords.
func (c *jsCompiler) genArray(f *jsSchema, depth int) (string, bool, error) {
	lo, hi := f.minItems, f.maxItems
	var elems []string
	for i, p := range f.prefix {
		if hi >= 0 && i >= hi {
			break
		}
		e, never, err := c.gen(p, depth+1)
		if err != nil {
			return "", false, err
		}
		if never {
			hi = minLimit(hi, i)
			break
		}
		elems = append(elems, e)
	}
	item := ""
	if hi < 0 || len(elems) < hi {
		e, never, err := c.genSub(f.items, depth)
		if err != nil {
			return "", false, err
		}
		if never {
			hi = len(elems)
		} else {
			item = e
		}
	}
	if hi >= 0 && lo > hi {
		return "", true, nil
	}
	sp := c.rule("space")
	open, close := gSeq(`"["`, sp), gSeq(`"]"`, sp)
	if hi == 0 {
		return gSeq(open, close), false, nil
	}
	elem := func(i int) string {
		if i < len(elems) {
			return elems[i]
		}
		return item
	}
	// tail[i]: what may follow once i elements are written, from the last
	// position back, each one past the first named (so that the grammar
	// grows linearly with prefixItems, and nests no deeper).
	rest := func(i int) string {
		if hi >= 0 && i >= hi {
			return ""
		}
		left := -1
		if hi >= 0 {
			left = hi - i
		}
		return c.w.repeat(gSeq(`","`, sp, item), max(lo-i, 0), left)
	}
	next := rest(max(len(elems), 1))
	for i := len(elems) - 1; i >= 1; i-- {
		if hi >= 0 && i >= hi {
			next = ""
			continue
		}
		if err := c.spend(1); err != nil {
			return "", false, err
		}
		t := gSeq(`","`, sp, elem(i), next)
		if i >= lo {
			t = c.w.repeat(t, 0, 1)
		}
		if i > 1 && t != "" {
			t = c.w.rule("items", t)
		}
		next = t
	}
	tail := func(int) string { return next }
	body := gSeq(elem(0), tail(1))
	if lo == 0 {
		body = c.w.repeat(body, 0, 1)
	}
	return gSeq(open, body, close), false, nil
}

// genEnum is the expression for the enum values that the rest of f admits.
func (c *jsCompiler) genEnum(f *jsSchema, types jsTypes) (string, bool, error) {
	if err := c.spend(len(f.enum)); err != nil {
		return "", false, err
	}
	var alts []string
	seen := map[string]bool{}
	var re *enumRegexps
	for _, v := range f.enum {
		if jsonTypeOf(v)&types == 0 {
			continue
		}
		ok, err := c.enumAdmits(f, v, &re)
		if err != nil {
			return "", false, err
		}
		if !ok {
			continue
		}
		e := c.literal(v)
		if !seen[e] {
			seen[e] = true
			alts = append(alts, e)
		}
	}
	if len(alts) == 0 {
		return "", true, nil
	}
	return gAlt(alts...), false, nil
}

// enumRegexps are f's pattern and format as Go regexps, compiled once for
// all of an enum's values (nil pattern: it does not compile).
type enumRegexps struct{ pattern, format *regexp.Regexp }

// enumAdmits checks an enum value against f's other keywords; re holds
// the compiled regexps, made on first use.
func (c *jsCompiler) enumAdmits(f *jsSchema, v any, re **enumRegexps) (bool, error) {
	unsupported := func(kw string) error {
		return jsErr(f.ptr, f.enumKw, "%s together with %s is not supported", f.enumKw, kw)
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if n < f.minLen || f.maxLen >= 0 && n > f.maxLen {
			return false, nil
		}
		if *re == nil {
			*re = &enumRegexps{}
			if f.hasPattern {
				(*re).pattern, _ = regexp.Compile(f.pattern)
			}
			if f.hasFormat {
				(*re).format = regexp.MustCompile(`^(?:` + jsFormats[f.format] + `)$`)
			}
		}
		if err := c.spend(len(x)); err != nil {
			return false, err
		}
		if f.hasPattern {
			if (*re).pattern == nil {
				return false, unsupported("this pattern")
			}
			if !(*re).pattern.MatchString(x) {
				return false, nil
			}
		}
		if f.hasFormat && !(*re).format.MatchString(x) {
			return false, nil
		}
	case json.Number:
		r := jsonNumRat(x)
		if f.min != nil && r.Cmp(f.min) < 0 || f.max != nil && r.Cmp(f.max) > 0 ||
			f.exMin != nil && r.Cmp(f.exMin) <= 0 || f.exMax != nil && r.Cmp(f.exMax) >= 0 {
			return false, nil
		}
	case []any:
		if f.items != nil || f.prefix != nil {
			return false, unsupported("items/prefixItems")
		}
		if len(x) < f.minItems || f.maxItems >= 0 && len(x) > f.maxItems {
			return false, nil
		}
	case *jsonObj:
		if f.props != nil || f.addl != nil {
			return false, unsupported("properties/additionalProperties")
		}
		for _, r := range f.required {
			if _, ok := x.vals[r]; !ok {
				return false, nil
			}
		}
	}
	return true, nil
}

// literal is the expression for one JSON value, written canonically.
func (c *jsCompiler) literal(v any) string {
	sp := c.rule("space")
	switch x := v.(type) {
	case nil:
		return gSeq(`"null"`, sp)
	case bool:
		return gSeq(gbnfQuote(fmt.Sprint(x)), sp)
	case json.Number:
		return gSeq(gbnfQuote(string(x)), sp)
	case string:
		return gSeq(gbnfQuote(`"`+jsonStringContent(x)+`"`), sp)
	case []any:
		parts := []string{`"["`, sp}
		for i, e := range x {
			if i > 0 {
				parts = append(parts, `","`, sp)
			}
			parts = append(parts, c.literal(e))
		}
		return gSeq(append(parts, `"]"`, sp)...)
	case *jsonObj:
		parts := []string{`"{"`, sp}
		for i, k := range x.keys {
			if i > 0 {
				parts = append(parts, `","`, sp)
			}
			parts = append(parts, gbnfQuote(`"`+jsonStringContent(k)+`"`), sp, `":"`, sp, c.literal(x.vals[k]))
		}
		return gSeq(append(parts, `"}"`, sp)...)
	}
	panic(errors.New("grammar: unknown JSON value"))
}
