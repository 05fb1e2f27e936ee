package grammar

import "math/big"

// maxBranches bounds the alternatives one schema expands into (anyOf,
// oneOf and allOf distributed over each other).
const maxBranches = 256

// Normalization turns a schema into its branches: flat schemas (no anyOf,
// oneOf, allOf; a $ref only when the schema is nothing but a reference)
// whose union is the schema's language. allOf and a $ref with siblings are
// merged into their siblings; anyOf and oneOf distribute over them.

// unconstrained reports a schema that admits every value.
func (s *jsSchema) unconstrained() bool {
	if s.isBool {
		return s.boolV
	}
	return !s.hasType && !s.hasEnum && !s.hasRef && s.props == nil && s.required == nil && s.addl == nil &&
		s.items == nil && s.prefix == nil && s.minItems == 0 && s.maxItems < 0 && s.minLen == 0 &&
		s.maxLen < 0 && !s.hasPattern && !s.hasFormat && s.min == nil && s.max == nil &&
		s.exMin == nil && s.exMax == nil && s.anyOf == nil && s.oneOf == nil && s.allOf == nil
}

// pureRef reports a schema that is only a $ref.
func (s *jsSchema) pureRef() bool {
	if !s.hasRef {
		return false
	}
	t := *s
	t.hasRef = false
	return t.unconstrained()
}

// flatCopy is s without its combinators and $ref.
func (s *jsSchema) flatCopy() *jsSchema {
	t := *s
	t.anyOf, t.oneOf, t.allOf = nil, nil, nil
	t.hasRef, t.refPtr = false, ""
	return &t
}

func (c *jsCompiler) normalize(s *jsSchema, depth int) ([]*jsSchema, error) {
	if depth > MaxSchemaDepth {
		return nil, jsErr(s.ptr, "", "$ref and allOf expand deeper than %d levels", MaxSchemaDepth)
	}
	if s.isBool {
		if s.boolV {
			return []*jsSchema{s}, nil
		}
		return nil, nil
	}
	if s.pureRef() {
		return []*jsSchema{s}, nil
	}
	branches := []*jsSchema{s.flatCopy()}
	var err error
	if s.hasRef {
		ref := &jsSchema{ptr: s.ptr, maxItems: -1, maxLen: -1, hasRef: true, refPtr: s.refPtr}
		if branches, err = c.cross(branches, []*jsSchema{ref}, depth); err != nil {
			return nil, err
		}
	}
	for _, sub := range s.allOf {
		sb, err := c.normalize(sub, depth+1)
		if err != nil {
			return nil, err
		}
		if branches, err = c.cross(branches, sb, depth); err != nil {
			return nil, err
		}
	}
	if s.anyOf != nil {
		if branches, err = c.union(s.ptr, branches, s.anyOf, depth, false); err != nil {
			return nil, err
		}
	}
	if s.oneOf != nil {
		if branches, err = c.union(s.ptr, branches, s.oneOf, depth, true); err != nil {
			return nil, err
		}
	}
	return branches, nil
}

// union is base combined with each of subs, the results side by side; for
// oneOf the results must be pairwise disjoint.
func (c *jsCompiler) union(ptr string, base []*jsSchema, subs []*jsSchema, depth int, oneOf bool) ([]*jsSchema, error) {
	var parts [][]*jsSchema
	for _, sub := range subs {
		sb, err := c.normalize(sub, depth+1)
		if err != nil {
			return nil, err
		}
		part, err := c.cross(base, sb, depth)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	if oneOf {
		for i := range parts {
			for j := i + 1; j < len(parts); j++ {
				if !c.disjointSets(parts[i], parts[j], depth) {
					return nil, jsErr(ptr, "oneOf",
						"branches %d and %d may both match one value; oneOf is supported only when its branches are provably disjoint (by type, enum/const, or a required property with disjoint schemas)", i, j)
				}
			}
		}
	}
	var out []*jsSchema
	for _, p := range parts {
		out = append(out, p...)
	}
	if len(out) > maxBranches {
		return nil, jsErr(ptr, "", "anyOf/oneOf/allOf expand to over %d alternatives", maxBranches)
	}
	return out, nil
}

// cross merges every branch of a with every branch of b.
func (c *jsCompiler) cross(a, b []*jsSchema, depth int) ([]*jsSchema, error) {
	var out []*jsSchema
	for _, x := range a {
		for _, y := range b {
			m, err := c.merge(x, y, depth)
			if err != nil {
				return nil, err
			}
			out = append(out, m...)
			if len(out) > maxBranches {
				return nil, jsErr(x.ptr, "", "anyOf/oneOf/allOf expand to over %d alternatives", maxBranches)
			}
		}
	}
	return out, nil
}

// allOfPair is the schema of both a and b (nil is the schema true).
func allOfPair(a, b *jsSchema) *jsSchema {
	switch {
	case a == nil || a.unconstrained():
		return b
	case b == nil || b.unconstrained():
		return a
	}
	s := newJSSchema(a.ptr)
	s.allOf = []*jsSchema{a, b}
	return s
}

// propSchema is the schema s applies to property name (nil: any).
func (s *jsSchema) propSchema(name string) (*jsSchema, bool) {
	for _, p := range s.props {
		if p.name == name {
			return p.schema, true
		}
	}
	return s.addl, false
}

// merge is the intersection of two flat schemas, as branches.
func (c *jsCompiler) merge(a, b *jsSchema, depth int) ([]*jsSchema, error) {
	if a.unconstrained() {
		return []*jsSchema{b}, nil
	}
	if b.unconstrained() {
		return []*jsSchema{a}, nil
	}
	if a.hasRef || b.hasRef {
		if b.hasRef {
			a, b = b, a
		}
		target, err := c.resolve(a, depth+1)
		if err != nil {
			return nil, err
		}
		ta, err := c.normalize(target, depth+1)
		if err != nil {
			return nil, err
		}
		return c.cross(ta, []*jsSchema{b}, depth+1)
	}
	m := newJSSchema(a.ptr)
	m.hasType = a.hasType || b.hasType
	m.types = jtAll
	if a.hasType {
		m.types &= a.types
	}
	if b.hasType {
		m.types &= b.types
	}
	if !m.hasType {
		m.types = 0
	}
	switch {
	case a.hasEnum && b.hasEnum:
		m.hasEnum, m.enumKw = true, a.enumKw
		for _, x := range a.enum {
			for _, y := range b.enum {
				if jsonEqual(x, y) {
					m.enum = append(m.enum, x)
					break
				}
			}
		}
	case a.hasEnum:
		m.hasEnum, m.enum, m.enumKw = true, a.enum, a.enumKw
	case b.hasEnum:
		m.hasEnum, m.enum, m.enumKw = true, b.enum, b.enumKw
	}
	// Objects: a property's schema is its schema in properties, else
	// additionalProperties, on each side.
	seen := map[string]bool{}
	for _, side := range []*jsSchema{a, b} {
		for _, p := range side.props {
			if seen[p.name] {
				continue
			}
			seen[p.name] = true
			sa, _ := a.propSchema(p.name)
			sb, _ := b.propSchema(p.name)
			ps := allOfPair(sa, sb)
			if ps == nil {
				ps = newJSSchema(p.schema.ptr)
			}
			m.props = append(m.props, jsProp{p.name, ps})
		}
	}
	for _, side := range []*jsSchema{a, b} {
		for _, r := range side.required {
			if !containsString(m.required, r) {
				m.required = append(m.required, r)
			}
		}
	}
	m.addl = allOfPair(a.addl, b.addl)
	// Arrays: position by position.
	if a.prefix != nil || b.prefix != nil {
		n := max(len(a.prefix), len(b.prefix))
		m.prefix = []*jsSchema{}
		for i := 0; i < n; i++ {
			ps := allOfPair(a.itemSchema(i), b.itemSchema(i))
			if ps == nil {
				ps = newJSSchema(a.ptr)
			}
			m.prefix = append(m.prefix, ps)
		}
	}
	m.items = allOfPair(a.items, b.items)
	m.minItems = max(a.minItems, b.minItems)
	m.maxItems = minLimit(a.maxItems, b.maxItems)
	m.minLen = max(a.minLen, b.minLen)
	m.maxLen = minLimit(a.maxLen, b.maxLen)
	switch {
	case a.hasPattern && b.hasPattern && a.pattern != b.pattern:
		return nil, jsErr(b.ptr, "pattern", "two different patterns apply to one string (through allOf or $ref); their intersection is not supported")
	case a.hasPattern:
		m.pattern, m.hasPattern = a.pattern, true
	case b.hasPattern:
		m.pattern, m.hasPattern = b.pattern, true
	}
	switch {
	case a.hasFormat && b.hasFormat && a.format != b.format:
		return nil, jsErr(b.ptr, "format", "two different formats apply to one string (through allOf or $ref)")
	case a.hasFormat:
		m.format, m.hasFormat = a.format, true
	case b.hasFormat:
		m.format, m.hasFormat = b.format, true
	}
	m.min = ratMax(a.min, b.min)
	m.exMin = ratMax(a.exMin, b.exMin)
	m.max = ratMin(a.max, b.max)
	m.exMax = ratMin(a.exMax, b.exMax)
	return []*jsSchema{m}, nil
}

// itemSchema is the schema of array position i (nil: any).
func (s *jsSchema) itemSchema(i int) *jsSchema {
	if i < len(s.prefix) {
		return s.prefix[i]
	}
	return s.items
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// minLimit is the smaller of two limits where -1 means none.
func minLimit(a, b int) int {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

func ratMax(a, b *big.Rat) *big.Rat {
	if a == nil || b != nil && b.Cmp(a) > 0 {
		return b
	}
	return a
}

func ratMin(a, b *big.Rat) *big.Rat {
	if a == nil || b != nil && b.Cmp(a) < 0 {
		return b
	}
	return a
}
