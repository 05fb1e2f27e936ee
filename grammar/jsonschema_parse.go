package grammar

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"strconv"
	"strings"
)

// jsTypes is a set of JSON types; numbers split into integers and the rest,
// so that "number" is jtInt|jtFrac and "integer" is jtInt.
type jsTypes uint8

const (
	jtNull jsTypes = 1 << iota
	jtBool
	jtObject
	jtArray
	jtString
	jtInt
	jtFrac
	jtAll = jtNull | jtBool | jtObject | jtArray | jtString | jtInt | jtFrac
)

var jsTypeNames = map[string]jsTypes{
	"null": jtNull, "boolean": jtBool, "object": jtObject, "array": jtArray,
	"string": jtString, "integer": jtInt, "number": jtInt | jtFrac,
}

// jsProp is one entry of properties.
type jsProp struct {
	name   string
	schema *jsSchema
}

// jsSchema is a parsed (sub)schema. Absent keywords have their neutral
// values: nil schemas mean "any", max counts are -1.
type jsSchema struct {
	ptr            string
	isBool, boolV  bool
	types          jsTypes
	hasType        bool
	enum           []any
	hasEnum        bool
	enumKw         string // "enum" or "const", for errors
	hasRef         bool
	refPtr         string // the JSON pointer $ref resolves to
	props          []jsProp
	required       []string
	addl           *jsSchema
	items          *jsSchema
	prefix         []*jsSchema
	minItems       int
	maxItems       int
	minLen, maxLen int
	pattern        string
	hasPattern     bool
	format         string
	hasFormat      bool
	anyOf, oneOf   []*jsSchema
	allOf          []*jsSchema
	min, max       *big.Rat
	exMin, exMax   *big.Rat
}

func newJSSchema(ptr string) *jsSchema { return &jsSchema{ptr: ptr, maxItems: -1, maxLen: -1} }

// jsAnnotations are the keywords that do not constrain a value.
var jsAnnotations = map[string]bool{
	"title": true, "description": true, "$schema": true, "default": true, "examples": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// jsCompiler holds one conversion's state.
type jsCompiler struct {
	doc       any
	rootID    string
	legacyRef bool // drafts 4 to 7: $ref's siblings are ignored
	parsed    map[string]*jsSchema
	w         *gbnfWriter
	shared    map[string]string
	refRules  map[string]string
	refBusy   map[string]bool
	refNever  map[string]bool
	refCycle  map[string]bool
	keyRules  map[string]string

	// ctx ends the conversion early; work counts its steps (see spend);
	// err is what ended it, kept.
	ctx  context.Context
	work int
	err  error
}

// maxSchemaWork bounds one conversion's steps (a keyword read, a branch
// normalized, a property or an enum value merged or written, a pair of
// values compared: each a microsecond or less), so that no schema costs
// more than a fraction of a second.
const maxSchemaWork = 1 << 21

// spend counts n steps of work. Past maxSchemaWork, or once the context is
// done, it returns the error that ends the conversion, and keeps
// returning it: callers that cannot return an error spend and go on, and
// the next that can returns it.
func (c *jsCompiler) spend(n int) error {
	if c.err != nil {
		return c.err
	}
	before := c.work
	c.work += n
	switch {
	case c.work > maxSchemaWork:
		c.err = &SchemaError{Msg: fmt.Sprintf("the schema takes over %d steps to convert: make it smaller (fewer allOf, anyOf or oneOf branches, properties, items or enum values)", maxSchemaWork)}
	case c.work>>12 != before>>12:
		c.err = c.ctx.Err()
	}
	return c.err
}

func newJSCompiler(ctx context.Context, doc any, prefix string) *jsCompiler {
	c := &jsCompiler{ctx: ctx, doc: doc, parsed: map[string]*jsSchema{}, w: newGBNFWriter(prefix),
		shared: map[string]string{}, refRules: map[string]string{}, refBusy: map[string]bool{},
		refNever: map[string]bool{}, refCycle: map[string]bool{}, keyRules: map[string]string{}}
	if o, ok := doc.(*jsonObj); ok {
		if s, ok := o.vals["$schema"].(string); ok {
			for _, d := range []string{"draft-04", "draft-06", "draft-07"} {
				if strings.Contains(s, d) {
					c.legacyRef = true
				}
			}
		}
		if id, ok := o.vals["$id"].(string); ok {
			c.rootID = strings.TrimSuffix(id, "#")
		}
	}
	return c
}

func jsErr(ptr, kw, format string, args ...any) *SchemaError {
	p := ptr
	if kw != "" {
		p = ptr + "/" + ptrEscape(kw)
	}
	return &SchemaError{Pointer: p, Keyword: kw, Msg: fmt.Sprintf(format, args...)}
}

// parse converts the schema value at ptr (memoized by pointer, so that a
// $ref to it is the same schema).
func (c *jsCompiler) parse(v any, ptr string, depth int) (*jsSchema, error) {
	if s, ok := c.parsed[ptr]; ok {
		return s, nil
	}
	if depth > MaxSchemaDepth {
		return nil, jsErr(ptr, "", "the schema is nested deeper than %d levels", MaxSchemaDepth)
	}
	s := newJSSchema(ptr)
	c.parsed[ptr] = s
	switch x := v.(type) {
	case bool:
		s.isBool, s.boolV = true, x
		return s, nil
	case *jsonObj:
		for _, k := range x.keys {
			if err := c.spend(1); err != nil {
				delete(c.parsed, ptr)
				return nil, err
			}
			if err := c.keyword(s, k, x.vals[k], depth); err != nil {
				delete(c.parsed, ptr)
				return nil, err
			}
		}
		if s.hasRef && c.legacyRef {
			*s = jsSchema{ptr: ptr, maxItems: -1, maxLen: -1, hasRef: true, refPtr: s.refPtr}
		}
		return s, nil
	}
	delete(c.parsed, ptr)
	return nil, jsErr(ptr, "", "a schema must be an object or a boolean")
}

func (c *jsCompiler) sub(v any, ptr string, depth int) (*jsSchema, error) {
	return c.parse(v, ptr, depth+1)
}

func (c *jsCompiler) subList(s *jsSchema, kw string, v any, depth int) ([]*jsSchema, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, jsErr(s.ptr, kw, "must be a non-empty array of schemas")
	}
	out := make([]*jsSchema, len(arr))
	for i, e := range arr {
		sub, err := c.sub(e, fmt.Sprintf("%s/%s/%d", s.ptr, kw, i), depth)
		if err != nil {
			return nil, err
		}
		out[i] = sub
	}
	return out, nil
}

// count reads a non-negative integer keyword.
func count(s *jsSchema, kw string, v any) (int, error) {
	n, ok := v.(json.Number)
	var r *big.Rat
	if ok {
		r = jsonNumRat(n)
	}
	if r == nil || !r.IsInt() || r.Sign() < 0 {
		return 0, jsErr(s.ptr, kw, "must be a non-negative integer")
	}
	if !r.Num().IsInt64() || r.Num().Int64() > 100_000_000 {
		return 0, jsErr(s.ptr, kw, "values over 100000000 are not supported")
	}
	return int(r.Num().Int64()), nil
}

func number(s *jsSchema, kw string, v any) (*big.Rat, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, jsErr(s.ptr, kw, "must be a number")
	}
	r := jsonNumRat(n)
	if r == nil {
		return nil, jsErr(s.ptr, kw, "must be a number")
	}
	return r, nil
}

// keyword reads one keyword of an object schema.
func (c *jsCompiler) keyword(s *jsSchema, k string, v any, depth int) error {
	ptr := s.ptr
	kptr := ptr + "/" + ptrEscape(k)
	var err error
	switch k {
	case "$id":
		if ptr != "" {
			return jsErr(ptr, k, "$id below the root (a new base URI) is not supported")
		}
	case "$defs", "definitions":
		if _, ok := v.(*jsonObj); !ok {
			return jsErr(ptr, k, "must be an object of schemas")
		}
	case "type":
		s.hasType = true
		names := []any{v}
		if arr, ok := v.([]any); ok {
			names = arr
		}
		for _, n := range names {
			name, _ := n.(string)
			t, ok := jsTypeNames[name]
			if !ok {
				return jsErr(ptr, k, "unknown type %s", clip(fmt.Sprint(n)))
			}
			s.types |= t
		}
	case "enum", "const":
		vals := []any{v}
		if k == "enum" {
			arr, ok := v.([]any)
			if !ok {
				return jsErr(ptr, k, "must be an array")
			}
			vals = arr
		}
		if err := c.spend(len(vals)); err != nil {
			return err
		}
		if s.hasEnum {
			if err := c.spend(len(s.enum) * len(vals)); err != nil {
				return err
			}
			var keep []any
			for _, a := range s.enum {
				for _, b := range vals {
					if jsonEqual(a, b) {
						keep = append(keep, a)
						break
					}
				}
			}
			vals = keep
		}
		s.hasEnum, s.enum, s.enumKw = true, vals, k
	case "properties":
		o, ok := v.(*jsonObj)
		if !ok {
			return jsErr(ptr, k, "must be an object of schemas")
		}
		for _, name := range o.keys {
			sub, err := c.sub(o.vals[name], kptr+"/"+ptrEscape(name), depth)
			if err != nil {
				return err
			}
			s.props = append(s.props, jsProp{name, sub})
		}
	case "required":
		arr, ok := v.([]any)
		if !ok {
			return jsErr(ptr, k, "must be an array of strings")
		}
		seen := map[string]bool{}
		for _, e := range arr {
			name, ok := e.(string)
			if !ok {
				return jsErr(ptr, k, "must be an array of strings")
			}
			if !seen[name] {
				seen[name] = true
				s.required = append(s.required, name)
			}
		}
	case "additionalProperties":
		s.addl, err = c.sub(v, kptr, depth)
	case "items":
		if arr, ok := v.([]any); ok { // drafts 4 to 2019-09: a tuple
			for i, e := range arr {
				sub, err := c.sub(e, fmt.Sprintf("%s/%d", kptr, i), depth)
				if err != nil {
					return err
				}
				s.prefix = append(s.prefix, sub)
			}
			if s.prefix == nil {
				s.prefix = []*jsSchema{}
			}
			if s.items == nil {
				s.items = newJSSchema(kptr) // additionalItems absent: any
			}
			return nil
		}
		s.items, err = c.sub(v, kptr, depth)
	case "additionalItems":
		if _, ok := c.siblingItemsArray(ptr); !ok {
			return jsErr(ptr, k, "additionalItems is supported only next to an items array")
		}
		s.items, err = c.sub(v, kptr, depth)
	case "prefixItems":
		arr, ok := v.([]any)
		if !ok {
			return jsErr(ptr, k, "must be an array of schemas")
		}
		s.prefix = []*jsSchema{}
		for i, e := range arr {
			sub, err := c.sub(e, fmt.Sprintf("%s/%d", kptr, i), depth)
			if err != nil {
				return err
			}
			s.prefix = append(s.prefix, sub)
		}
	case "minItems":
		s.minItems, err = count(s, k, v)
	case "maxItems":
		s.maxItems, err = count(s, k, v)
	case "minLength":
		s.minLen, err = count(s, k, v)
	case "maxLength":
		s.maxLen, err = count(s, k, v)
	case "pattern":
		p, ok := v.(string)
		if !ok {
			return jsErr(ptr, k, "must be a string")
		}
		if err := c.spend(len(p)); err != nil {
			return err
		}
		if _, err := parseRegex(p); err != nil {
			return jsErr(ptr, k, "%s", err.(*RegexError).msg())
		}
		s.pattern, s.hasPattern = p, true
	case "format":
		f, ok := v.(string)
		if !ok {
			return jsErr(ptr, k, "must be a string")
		}
		if _, ok := jsFormats[f]; !ok {
			return jsErr(ptr, k, "format %q is not supported (supported: date, time, date-time, uuid, email)", clip(f))
		}
		s.format, s.hasFormat = f, true
	case "anyOf":
		s.anyOf, err = c.subList(s, k, v, depth)
	case "oneOf":
		s.oneOf, err = c.subList(s, k, v, depth)
	case "allOf":
		s.allOf, err = c.subList(s, k, v, depth)
	case "minimum":
		s.min, err = number(s, k, v)
	case "maximum":
		s.max, err = number(s, k, v)
	case "exclusiveMinimum", "exclusiveMaximum":
		if b, ok := v.(bool); ok { // draft 4: a flag on minimum / maximum
			if b {
				return c.legacyExclusive(s, k)
			}
			return nil
		}
		var r *big.Rat
		if r, err = number(s, k, v); err == nil {
			if k == "exclusiveMinimum" {
				s.exMin = r
			} else {
				s.exMax = r
			}
		}
	case "$ref":
		ref, ok := v.(string)
		if !ok {
			return jsErr(ptr, k, "must be a string")
		}
		target, err := c.refPointer(ref)
		if err != nil {
			return jsErr(ptr, k, "%s", err.Error())
		}
		s.hasRef, s.refPtr = true, target
	default:
		if jsAnnotations[k] {
			return nil
		}
		return jsErr(ptr, k, "keyword %q is not supported", clip(k))
	}
	return err
}

// siblingItemsArray reports whether the schema object at ptr has an items
// array.
func (c *jsCompiler) siblingItemsArray(ptr string) (any, bool) {
	v, err := c.lookup(ptr)
	if err != nil {
		return nil, false
	}
	o, ok := v.(*jsonObj)
	if !ok {
		return nil, false
	}
	arr, ok := o.vals["items"].([]any)
	return arr, ok
}

// legacyExclusive applies draft 4's boolean exclusiveMinimum/Maximum.
func (c *jsCompiler) legacyExclusive(s *jsSchema, k string) error {
	o, _ := c.lookup(s.ptr)
	obj, _ := o.(*jsonObj)
	base := "minimum"
	if k == "exclusiveMaximum" {
		base = "maximum"
	}
	var bv any
	if obj != nil {
		bv = obj.vals[base]
	}
	if bv == nil {
		return jsErr(s.ptr, k, "a boolean %s needs %s", k, base)
	}
	r, err := number(s, base, bv)
	if err != nil {
		return err
	}
	if k == "exclusiveMinimum" {
		s.exMin = r
	} else {
		s.exMax = r
	}
	return nil
}

// refPointer turns a $ref into the JSON pointer of its target in this
// document.
func (c *jsCompiler) refPointer(ref string) (string, error) {
	if c.rootID != "" && strings.HasPrefix(ref, c.rootID) {
		ref = ref[len(c.rootID):]
		if ref == "" {
			ref = "#"
		}
	}
	if !strings.HasPrefix(ref, "#") {
		return "", fmt.Errorf("only local references (#...) are supported, not %q", clip(ref))
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return "", fmt.Errorf("malformed reference %q", clip(ref))
	}
	if frag != "" && frag[0] != '/' {
		return "", fmt.Errorf("anchor references (%q) are not supported", clip(ref))
	}
	if _, err := c.lookup(frag); err != nil {
		return "", fmt.Errorf("reference %q: %v", clip(ref), err)
	}
	return frag, nil
}

// lookup finds the value at a JSON pointer of the document.
func (c *jsCompiler) lookup(ptr string) (any, error) {
	v := c.doc
	if ptr == "" {
		return v, nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case *jsonObj:
			next, ok := x.vals[tok]
			if !ok {
				return nil, fmt.Errorf("no %q in the document", clip(tok))
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no index %q in the document", clip(tok))
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("no %q in the document", clip(tok))
		}
	}
	return v, nil
}

// resolve parses the target of a $ref.
func (c *jsCompiler) resolve(s *jsSchema, depth int) (*jsSchema, error) {
	v, err := c.lookup(s.refPtr)
	if err != nil {
		return nil, jsErr(s.ptr, "$ref", "%v", err)
	}
	return c.parse(v, s.refPtr, depth)
}
