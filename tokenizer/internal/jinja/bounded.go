package jinja

// The budget-aware forms of the helpers that walk values: printing,
// equality, ordering, membership and iteration. Each charges a step per
// item it visits and checks how deep it has gone; a nil budget makes them
// behave as upstream's unbounded helpers, which the exported Value methods
// still are.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// str converts a Value to its template output string, as printValue does.
func (b *budget) str(v Value) string {
	switch v.kind {
	case KindList, KindDict:
		return b.repr(v)
	}
	return printScalar(v)
}

// repr returns the Python-style representation of v, as Value.String
// does, bounded by MaxValueBytes.
func (b *budget) repr(v Value) string {
	w := b.newBuilder()
	b.writeRepr(w, v, nil)
	return w.String()
}

// writeRepr writes the representation of v. It tracks ancestors, not all
// visited containers: shared references are not cycles.
func (b *budget) writeRepr(w *limitedBuilder, v Value, ancestors []any) {
	b.step(1)
	switch v.kind {
	case KindUndefined:
		w.WriteString("Undefined")

	case KindNone:
		w.WriteString("None")

	case KindBool:
		if v.v.(bool) {
			w.WriteString("True")
		} else {
			w.WriteString("False")
		}

	case KindInt:
		w.WriteString(fmt.Sprintf("%d", v.v.(int64)))

	case KindFloat:
		w.WriteString(printScalar(v))

	case KindString:
		writeReprString(w, v.v.(string))

	case KindList:
		list := v.v.(*List)
		if slices.Contains(ancestors, any(list)) {
			w.WriteString("[...]")
			return
		}
		b.nested(len(ancestors) + 1)
		ancestors = append(ancestors, list)
		if list.tuple {
			w.WriteByte('(')
		} else {
			w.WriteByte('[')
		}
		for i, item := range list.Items {
			if i > 0 {
				w.WriteString(", ")
			}
			b.writeRepr(w, item, ancestors)
		}
		if list.tuple {
			if list.Len() == 1 {
				w.WriteByte(',')
			}
			w.WriteByte(')')
		} else {
			w.WriteByte(']')
		}

	case KindDict:
		d := v.v.(*Dict)
		if slices.Contains(ancestors, any(d)) {
			w.WriteString("{...}")
			return
		}
		b.nested(len(ancestors) + 1)
		ancestors = append(ancestors, d)
		w.WriteByte('{')
		for i, key := range d.Keys {
			if i > 0 {
				w.WriteString(", ")
			}
			writeReprString(w, key)
			w.WriteString(": ")
			b.writeRepr(w, d.Data[key], ancestors)
		}
		w.WriteByte('}')

	case KindCallable:
		c := v.v.(Callable)
		fmt.Fprintf(w, "<callable %s>", c.Name)

	default:
		w.WriteString("Undefined")
	}
}

func writeReprString(b *limitedBuilder, s string) {
	quote := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	b.WriteRune(quote)
	for _, r := range s {
		switch {
		case r == quote || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 32 || r == 127:
			fmt.Fprintf(b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteRune(quote)
}

// equal reports whether v and other hold the same value, as Value.Equals
// does; depth is how deep in containers the comparison is.
func (b *budget) equal(v, other Value, depth int) bool {
	b.step(1)
	if v.kind != other.kind {
		if !(v.IsNumber() || v.IsBool()) || !(other.IsNumber() || other.IsBool()) {
			return false
		}

		// Put a mixed comparison's float on the right.
		if v.IsFloat() {
			v, other = other, v
		}
		if other.IsFloat() {
			f := other.AsFloat()
			// Convert only integral floats in the int64 range. These bounds
			// also reject infinities and NaN without converting them.
			return f >= -0x1p63 && f < 0x1p63 && math.Trunc(f) == f && toInt64(v) == int64(f)
		}

		return toInt64(v) == toInt64(other)
	}

	switch v.kind {
	case KindUndefined, KindNone:
		return true

	case KindBool:
		return v.v.(bool) == other.v.(bool)

	case KindInt:
		return v.v.(int64) == other.v.(int64)

	case KindFloat:
		return v.v.(float64) == other.v.(float64)

	case KindString:
		x, y := v.v.(string), other.v.(string)
		if len(x) == len(y) {
			b.scan(len(x))
		}
		return x == y

	case KindList:
		x := v.v.(*List)
		y := other.v.(*List)
		if x.tuple != y.tuple {
			return false
		}
		if x == y {
			return true
		}
		if x.Len() != y.Len() {
			return false
		}
		b.nested(depth + 1)
		for i := range x.Items {
			if !b.equal(x.Items[i], y.Items[i], depth+1) {
				return false
			}
		}
		return true

	case KindDict:
		x := v.v.(*Dict)
		y := other.v.(*Dict)
		if x == y {
			return true
		}
		if x.Len() != y.Len() {
			return false
		}
		b.nested(depth + 1)
		for _, key := range x.Keys {
			yv, ok := y.Get(key)
			if !ok {
				return false
			}
			if !b.equal(x.Data[key], yv, depth+1) {
				return false
			}
		}
		return true

	case KindCallable:
		return false
	}

	return false
}

// compare returns the ordering and whether the values are ordered, as
// compareValues does.
func (b *budget) compare(x, y Value, depth int) (int, bool) {
	b.step(1)
	if x.IsString() && y.IsString() {
		b.scan(min(len(x.AsString()), len(y.AsString())))
		return strings.Compare(x.AsString(), y.AsString()), true
	}
	if x.IsList() && y.IsList() {
		b.nested(depth + 1)
		left, right := x.AsList().Items, y.AsList().Items
		for i := range min(len(left), len(right)) {
			if b.equal(left[i], right[i], depth+1) {
				continue
			}
			return b.compare(left[i], right[i], depth+1)
		}
		return cmp.Compare(len(left), len(right)), true
	}
	// A string compared with a number is read as one.
	b.scanNums(x, y)
	return compareScalars(x, y)
}

// compareScalars orders values that are not both strings or both lists.
// A comparison involving a floating-point NaN is unordered.
func compareScalars(a, b Value) (int, bool) {
	if (a.IsFloat() && math.IsNaN(a.AsFloat())) || (b.IsFloat() && math.IsNaN(b.AsFloat())) {
		return 0, false
	}

	aIntegral := a.IsInt() || a.IsBool()
	bIntegral := b.IsInt() || b.IsBool()
	switch {
	case aIntegral && bIntegral:
		return cmp.Compare(toInt64(a), toInt64(b)), true
	case aIntegral && b.IsFloat():
		return compareIntFloat(toInt64(a), b.AsFloat()), true
	case a.IsFloat() && bIntegral:
		return -compareIntFloat(toInt64(b), a.AsFloat()), true
	}

	af := toFloat64(a)
	bf := toFloat64(b)
	if af < bf {
		return -1, true
	}
	if af > bf {
		return 1, true
	}
	if a.IsString() && b.IsString() {
		return strings.Compare(a.AsString(), b.AsString()), true
	}
	return 0, true
}

// contains reports whether item is in container, as containsValue does.
func (b *budget) contains(container, item Value) bool {
	if container.IsList() {
		for _, v := range container.AsList().Items {
			if b.equal(v, item, 0) {
				return true
			}
		}
		return false
	}
	if container.IsDict() && item.IsString() {
		return container.AsDict().Has(item.AsString())
	}
	if container.IsString() && item.IsString() {
		b.scan(len(container.AsString()))
		return strings.Contains(container.AsString(), item.AsString())
	}
	return false
}

// iterableItems returns the items iterating over v visits: a list's
// items, a dict's keys, a string's characters. A dict's or string's items
// are a new list, checked against MaxValueBytes before it is built.
func (b *budget) iterableItems(v Value) []Value {
	switch {
	case v.IsList():
		return v.AsList().Items
	case v.IsDict():
		b.items(len(v.AsDict().Keys))
		items := make([]Value, len(v.AsDict().Keys))
		for i, key := range v.AsDict().Keys {
			items[i] = NewString(key)
		}
		return items
	case v.IsString():
		s := v.AsString()
		n := utf8.RuneCountInString(s)
		b.items(n)
		if n == 0 {
			return nil
		}
		items := make([]Value, 0, n)
		for _, r := range s {
			items = append(items, NewString(string(r)))
		}
		return items
	}
	return nil
}

// containsCycle reports whether v contains itself. Only references to
// ancestors form cycles; siblings may share a container.
func (b *budget) containsCycle(v Value, ancestors []any) bool {
	switch v.kind {
	case KindList:
		b.step(1)
		list := v.AsList()
		if slices.Contains(ancestors, any(list)) {
			return true
		}
		b.nested(len(ancestors) + 1)
		ancestors = append(ancestors, list)
		for _, item := range list.Items {
			if b.containsCycle(item, ancestors) {
				return true
			}
		}

	case KindDict:
		b.step(1)
		d := v.AsDict()
		if slices.Contains(ancestors, any(d)) {
			return true
		}
		b.nested(len(ancestors) + 1)
		ancestors = append(ancestors, d)
		for _, key := range d.Keys {
			if b.containsCycle(d.Data[key], ancestors) {
				return true
			}
		}
	}
	return false
}
