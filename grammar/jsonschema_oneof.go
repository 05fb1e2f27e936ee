package grammar

// Disjointness proofs for oneOf: oneOf is anyOf when no value can match two
// branches. The proofs are conservative: false means "not proven".

// disjointSets reports that no value matches a branch of a and one of b.
func (c *jsCompiler) disjointSets(a, b []*jsSchema, depth int) bool {
	for _, x := range a {
		for _, y := range b {
			if !c.disjoint(x, y, depth) {
				return false
			}
		}
	}
	return true
}

// typesOf is the types a flat schema can admit.
func (s *jsSchema) typesOf() jsTypes {
	t := jtAll
	if s.hasType {
		t = s.types
	}
	if s.hasEnum {
		var et jsTypes
		for _, v := range s.enum {
			et |= jsonTypeOf(v)
		}
		t &= et
	}
	return t
}

// expandRef replaces a pure $ref by its target's branches.
func (c *jsCompiler) expandRef(s *jsSchema, depth int) ([]*jsSchema, bool) {
	if !s.hasRef {
		return []*jsSchema{s}, true
	}
	target, err := c.resolve(s, depth+1)
	if err != nil {
		return nil, false
	}
	bs, err := c.normalize(target, depth+1)
	return bs, err == nil
}

// disjoint reports that no value matches both flat schemas.
func (c *jsCompiler) disjoint(a, b *jsSchema, depth int) bool {
	if depth > MaxSchemaDepth {
		return false
	}
	if a.hasRef || b.hasRef {
		as, ok1 := c.expandRef(a, depth)
		bs, ok2 := c.expandRef(b, depth)
		return ok1 && ok2 && c.disjointSets(as, bs, depth+1)
	}
	ta, tb := a.typesOf(), b.typesOf()
	common := ta & tb
	if common == 0 {
		return true
	}
	if a.hasEnum && b.hasEnum {
		if c.spend(len(a.enum)*len(b.enum)) != nil {
			return false
		}
		for _, x := range a.enum {
			for _, y := range b.enum {
				if jsonTypeOf(x)&common != 0 && jsonEqual(x, y) {
					return false
				}
			}
		}
		return true
	}
	for bit := jsTypes(1); bit <= jtFrac; bit <<= 1 {
		if common&bit == 0 {
			continue
		}
		if bit != jtObject || !c.objectsDisjoint(a, b, depth) {
			return false
		}
	}
	return true
}

// objectsDisjoint finds a property that one side requires and whose
// schemas on the two sides admit no common value.
func (c *jsCompiler) objectsDisjoint(a, b *jsSchema, depth int) bool {
	if c.spend(len(a.required)+len(b.required)+len(a.props)+len(b.props)) != nil {
		return false
	}
	ia, ib := a.propIndex(), b.propIndex()
	for _, pair := range [2][2]*jsSchema{{a, b}, {b, a}} {
		x, y := pair[0], pair[1]
		ix, iy := ia, ib
		if x == b {
			ix, iy = ib, ia
		}
		for _, name := range x.required {
			sx, _ := x.propIn(ix, name)
			sy, _ := y.propIn(iy, name)
			if sy != nil && sy.isBool && !sy.boolV {
				return true // y forbids a property x requires
			}
			if sx == nil || sy == nil {
				continue
			}
			bx, err1 := c.normalize(sx, depth+1)
			by, err2 := c.normalize(sy, depth+1)
			if err1 == nil && err2 == nil && c.disjointSets(bx, by, depth+1) {
				return true
			}
		}
	}
	return false
}
