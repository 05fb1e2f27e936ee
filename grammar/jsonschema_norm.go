package grammar

import (
	"math/big"
	"slices"
)

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
	if err := c.spend(1); err != nil {
		return nil, err
	}
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
	// allOf: runs of subschemas of one branch each are merged into every
	// branch at once (mergeAll); a subschema of several distributes.
	var run []*jsSchema
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		var out []*jsSchema
		for _, x := range branches {
			m, err := c.mergeAll(append([]*jsSchema{x}, run...), depth)
			if err != nil {
				return err
			}
			if out = append(out, m...); len(out) > maxBranches {
				return jsErr(s.ptr, "", "anyOf/oneOf/allOf expand to over %d alternatives", maxBranches)
			}
		}
		branches, run = out, nil
		return nil
	}
	for _, sub := range s.allOf {
		sb, err := c.normalize(sub, depth+1)
		if err != nil {
			return nil, err
		}
		if len(sb) == 1 {
			run = append(run, sb[0])
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		if branches, err = c.cross(branches, sb, depth); err != nil {
			return nil, err
		}
	}
	if err := flush(); err != nil {
		return nil, err
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
				if err := c.spend(len(parts[i]) * len(parts[j])); err != nil {
					return nil, err
				}
				if !c.disjointSets(parts[i], parts[j], depth) {
					if c.err != nil {
						return nil, c.err
					}
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

// propSchema is the schema s applies to property name (nil: any).
func (s *jsSchema) propSchema(name string) (*jsSchema, bool) {
	for _, p := range s.props {
		if p.name == name {
			return p.schema, true
		}
	}
	return s.addl, false
}

// propIndex maps s's property names to their schemas, for callers that
// look up many names (propSchema is a scan).
func (s *jsSchema) propIndex() map[string]*jsSchema {
	m := make(map[string]*jsSchema, len(s.props))
	for _, p := range s.props {
		if _, ok := m[p.name]; !ok {
			m[p.name] = p.schema
		}
	}
	return m
}

// propIn is propSchema through an index made by propIndex.
func (s *jsSchema) propIn(idx map[string]*jsSchema, name string) (*jsSchema, bool) {
	if p, ok := idx[name]; ok {
		return p, true
	}
	return s.addl, false
}

// merge is the intersection of two flat schemas, as branches.
func (c *jsCompiler) merge(a, b *jsSchema, depth int) ([]*jsSchema, error) {
	return c.mergeAll([]*jsSchema{a, b}, depth)
}

// mergeAll is the intersection of flat schemas, as branches. It merges
// them in one pass, so that an allOf of n subschemas costs in proportion
// to their size (merging them two by two copied what was merged so far n
// times).
func (c *jsCompiler) mergeAll(list []*jsSchema, depth int) ([]*jsSchema, error) {
	var sides []*jsSchema
	for _, s := range list {
		if !s.unconstrained() {
			sides = append(sides, s)
		}
	}
	switch len(sides) {
	case 0:
		return []*jsSchema{list[len(list)-1]}, nil
	case 1:
		return []*jsSchema{sides[0]}, nil
	}
	work := 1
	for _, s := range sides {
		work += 1 + len(s.props) + len(s.required) + len(s.prefix)
	}
	if err := c.spend(work); err != nil {
		return nil, err
	}
	for i, s := range sides {
		if !s.hasRef {
			continue
		}
		// The target's branches, each merged with the rest.
		target, err := c.resolve(s, depth+1)
		if err != nil {
			return nil, err
		}
		ta, err := c.normalize(target, depth+1)
		if err != nil {
			return nil, err
		}
		others := append(append([]*jsSchema(nil), sides[:i]...), sides[i+1:]...)
		rest, err := c.mergeAll(others, depth+1)
		if err != nil {
			return nil, err
		}
		return c.cross(ta, rest, depth+1)
	}
	first := sides[0]
	m := newJSSchema(first.ptr)
	m.types = jtAll
	for _, s := range sides {
		if s.hasType {
			m.hasType = true
			m.types &= s.types
		}
		if !s.hasEnum {
			continue
		}
		if !m.hasEnum {
			m.hasEnum, m.enum, m.enumKw = true, s.enum, s.enumKw
			continue
		}
		if err := c.spend(len(m.enum) * len(s.enum)); err != nil {
			return nil, err
		}
		var keep []any
		for _, x := range m.enum {
			for _, y := range s.enum {
				if jsonEqual(x, y) {
					keep = append(keep, x)
					break
				}
			}
		}
		m.enum = keep
	}
	if !m.hasType {
		m.types = 0
	}
	// Objects: a property's schema is its schema in properties, else
	// additionalProperties, on each side.
	type declared struct {
		schemas []*jsSchema // in the order of the sides that declare it
		sides   []int
	}
	var names []string
	byName := map[string]*declared{}
	var withAddl []int // the sides whose additionalProperties constrain
	for i, s := range sides {
		if s.addl != nil {
			withAddl = append(withAddl, i)
		}
		for _, p := range s.props {
			d := byName[p.name]
			if d == nil {
				d = &declared{}
				byName[p.name] = d
				names = append(names, p.name)
			}
			if len(d.sides) == 0 || d.sides[len(d.sides)-1] != i {
				d.schemas = append(d.schemas, p.schema)
				d.sides = append(d.sides, i)
			}
		}
	}
	if err := c.spend(len(names) * len(withAddl)); err != nil {
		return nil, err
	}
	for _, name := range names {
		d := byName[name]
		all := d.schemas
		for _, i := range withAddl {
			if !slices.Contains(d.sides, i) {
				all = append(all, sides[i].addl)
			}
		}
		ps := allOfList(all)
		if ps == nil {
			ps = newJSSchema(d.schemas[0].ptr)
		}
		m.props = append(m.props, jsProp{name, ps})
	}
	req := map[string]bool{}
	var addls, items []*jsSchema
	npre := -1
	for _, s := range sides {
		for _, r := range s.required {
			if !req[r] {
				req[r] = true
				m.required = append(m.required, r)
			}
		}
		addls = append(addls, s.addl)
		items = append(items, s.items)
		if s.prefix != nil {
			npre = max(npre, len(s.prefix))
		}
	}
	m.addl = allOfList(addls)
	// Arrays: position by position.
	if npre >= 0 {
		if err := c.spend(npre * len(sides)); err != nil {
			return nil, err
		}
		m.prefix = []*jsSchema{}
		at := make([]*jsSchema, len(sides))
		for i := 0; i < npre; i++ {
			for j, s := range sides {
				at[j] = s.itemSchema(i)
			}
			ps := allOfList(at)
			if ps == nil {
				ps = newJSSchema(first.ptr)
			}
			m.prefix = append(m.prefix, ps)
		}
	}
	m.items = allOfList(items)
	for _, s := range sides {
		m.minItems = max(m.minItems, s.minItems)
		m.maxItems = minLimit(m.maxItems, s.maxItems)
		m.minLen = max(m.minLen, s.minLen)
		m.maxLen = minLimit(m.maxLen, s.maxLen)
		switch {
		case s.hasPattern && m.hasPattern && s.pattern != m.pattern:
			return nil, jsErr(s.ptr, "pattern", "two different patterns apply to one string (through allOf or $ref); their intersection is not supported")
		case s.hasPattern:
			m.pattern, m.hasPattern = s.pattern, true
		}
		switch {
		case s.hasFormat && m.hasFormat && s.format != m.format:
			return nil, jsErr(s.ptr, "format", "two different formats apply to one string (through allOf or $ref)")
		case s.hasFormat:
			m.format, m.hasFormat = s.format, true
		}
		m.min = ratMax(m.min, s.min)
		m.exMin = ratMax(m.exMin, s.exMin)
		m.max = ratMin(m.max, s.max)
		m.exMax = ratMin(m.exMax, s.exMax)
	}
	return []*jsSchema{m}, nil
}

// allOfList is the schema of all of list's schemas (nil entries and the
// schema true are any value; nil when all are).
func allOfList(list []*jsSchema) *jsSchema {
	var keep []*jsSchema
	for _, s := range list {
		if s != nil && !s.unconstrained() {
			keep = append(keep, s)
		}
	}
	switch len(keep) {
	case 0:
		return nil
	case 1:
		return keep[0]
	}
	s := newJSSchema(keep[0].ptr)
	s.allOf = keep
	return s
}

// itemSchema is the schema of array position i (nil: any).
func (s *jsSchema) itemSchema(i int) *jsSchema {
	if i < len(s.prefix) {
		return s.prefix[i]
	}
	return s.items
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
