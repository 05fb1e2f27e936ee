package grammar

import (
	"fmt"
	"math/big"
	"strings"
)

// Exact range grammars for integers and decimals, by digit strings.

// maxBoundDigits bounds the digits of a numeric bound (integer part and
// fraction each).
const maxBoundDigits = 400

// jsBound is one side of a numeric range; v nil means unbounded.
type jsBound struct {
	v    *big.Rat
	excl bool
}

// bounds is f's effective lower and upper bound: the stricter of the
// inclusive and exclusive keywords.
func (f *jsSchema) bounds() (lo, hi jsBound) {
	lo = jsBound{v: f.min}
	if f.exMin != nil && (lo.v == nil || f.exMin.Cmp(lo.v) >= 0) {
		lo = jsBound{v: f.exMin, excl: true}
	}
	hi = jsBound{v: f.max}
	if f.exMax != nil && (hi.v == nil || f.exMax.Cmp(hi.v) <= 0) {
		hi = jsBound{v: f.exMax, excl: true}
	}
	return lo, hi
}

// genNumber is the expression for numbers (integers only when intOnly)
// within f's bounds.
func (c *jsCompiler) genNumber(f *jsSchema, intOnly bool) (string, bool, error) {
	lo, hi := f.bounds()
	for _, b := range []struct {
		v  *big.Rat
		kw string
	}{{f.min, "minimum"}, {f.max, "maximum"}, {f.exMin, "exclusiveMinimum"}, {f.exMax, "exclusiveMaximum"}} {
		if b.v != nil {
			if ip, frac, ok := splitRat(new(big.Rat).Abs(b.v)); !ok || len(frac) > maxBoundDigits || len(ip.String()) > maxBoundDigits {
				return "", false, jsErr(f.ptr, b.kw, "bounds with over %d digits are not supported", maxBoundDigits)
			}
		}
	}
	sp := c.rule("space")
	if lo.v == nil && hi.v == nil {
		if intOnly {
			return c.rule("integer"), false, nil
		}
		return c.rule("number"), false, nil
	}
	var e string
	var never bool
	if intOnly {
		e, never = c.intRange(lo, hi)
	} else {
		e, never = c.decimalRange(lo, hi)
	}
	if never {
		return "", true, nil
	}
	return gSeq(e, sp), false, nil
}

// ratFloor and ratCeil round to integers.
func ratFloor(r *big.Rat) *big.Int {
	// DivMod is Euclidean: with a positive denominator it floors.
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	return q
}

func ratCeil(r *big.Rat) *big.Int {
	q := ratFloor(r)
	if !r.IsInt() {
		q.Add(q, big.NewInt(1))
	}
	return q
}

// intRange is integers within lo..hi.
func (c *jsCompiler) intRange(lo, hi jsBound) (string, bool) {
	var L, H *big.Int
	one := big.NewInt(1)
	if lo.v != nil {
		if lo.excl {
			L = new(big.Int).Add(ratFloor(lo.v), one)
		} else {
			L = ratCeil(lo.v)
		}
	}
	if hi.v != nil {
		if hi.excl {
			H = new(big.Int).Sub(ratCeil(hi.v), one)
		} else {
			H = ratFloor(hi.v)
		}
	}
	if L != nil && H != nil && L.Cmp(H) > 0 {
		return "", true
	}
	var alts []string
	if H == nil || H.Sign() >= 0 {
		a := big.NewInt(0)
		if L != nil && L.Sign() > 0 {
			a = L
		}
		alts = append(alts, c.natRange(a, H))
	}
	if L == nil || L.Sign() < 0 {
		a := big.NewInt(1)
		if H != nil && H.Sign() < 0 {
			a = new(big.Int).Neg(H)
		}
		var b *big.Int
		if L != nil {
			b = new(big.Int).Neg(L)
		}
		alts = append(alts, gSeq(`"-"`, gAtom(c.natRange(a, b))))
	}
	return gAlt(alts...), false
}

// natRange is the decimal numerals (no leading zeros) of a..b, a >= 0;
// b nil is unbounded.
func (c *jsCompiler) natRange(a, b *big.Int) string {
	as := a.String()
	la := len(as)
	if b == nil {
		return gAlt(sameLenRange(as, strings.Repeat("9", la)),
			gSeq("[1-9]", c.w.repeat("[0-9]", la, -1)))
	}
	bs := b.String()
	lb := len(bs)
	if la == lb {
		return sameLenRange(as, bs)
	}
	alts := []string{sameLenRange(as, strings.Repeat("9", la))}
	if lb-la >= 2 {
		alts = append(alts, gSeq("[1-9]", c.w.repeat("[0-9]", la, lb-2)))
	}
	alts = append(alts, sameLenRange("1"+strings.Repeat("0", lb-1), bs))
	return gAlt(alts...)
}

// digits is [lo-hi] as a class (or the digit).
func digits(lo, hi byte) string {
	if lo == hi {
		return gbnfQuote(string(lo))
	}
	return fmt.Sprintf("[%c-%c]", lo, hi)
}

// anyDigits is n digits.
func anyDigits(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "[0-9]"
	}
	return fmt.Sprintf("[0-9]{%d}", n)
}

func allOf(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			return false
		}
	}
	return true
}

// sameLenRange is the digit strings of lo's length between lo and hi.
func sameLenRange(lo, hi string) string {
	if lo == hi {
		return gbnfQuote(lo)
	}
	i := 0
	for lo[i] == hi[i] {
		i++
	}
	prefix := ""
	if i > 0 {
		prefix = gbnfQuote(lo[:i])
	}
	lo, hi = lo[i:], hi[i:]
	n := len(lo) - 1
	d1, d2 := lo[0], hi[0]
	loZero, hiNine := allOf(lo[1:], '0'), allOf(hi[1:], '9')
	var alts []string
	m1, m2 := d1+1, d2-1
	if loZero {
		m1 = d1
	} else {
		alts = append(alts, gSeq(gbnfQuote(string(d1)), geDigits(lo[1:])))
	}
	if hiNine {
		m2 = d2
	}
	if m1 <= m2 {
		alts = append(alts, gSeq(digits(m1, m2), anyDigits(n)))
	}
	if !hiNine {
		alts = append(alts, gSeq(gbnfQuote(string(d2)), leDigits(hi[1:])))
	}
	return gSeq(prefix, gAlt(alts...))
}

// geDigits is the digit strings of s's length that are >= s.
func geDigits(s string) string {
	n := len(s)
	if allOf(s, '0') {
		return anyDigits(n)
	}
	if allOf(s[1:], '0') {
		return gSeq(digits(s[0], '9'), anyDigits(n-1))
	}
	alts := []string{gSeq(gbnfQuote(s[:1]), geDigits(s[1:]))}
	if s[0] < '9' {
		alts = append(alts, gSeq(digits(s[0]+1, '9'), anyDigits(n-1)))
	}
	return gAlt(alts...)
}

// leDigits is the digit strings of s's length that are <= s.
func leDigits(s string) string {
	n := len(s)
	if allOf(s, '9') {
		return anyDigits(n)
	}
	if allOf(s[1:], '9') {
		return gSeq(digits('0', s[0]), anyDigits(n-1))
	}
	alts := []string{gSeq(gbnfQuote(s[:1]), leDigits(s[1:]))}
	if s[0] > '0' {
		alts = append(alts, gSeq(digits('0', s[0]-1), anyDigits(n-1)))
	}
	return gAlt(alts...)
}

// splitRat is a non-negative decimal as its integer part and fraction
// digits (no trailing zeros); ok is false for a non-decimal fraction.
func splitRat(r *big.Rat) (*big.Int, string, bool) {
	ip := ratFloor(r)
	rem := new(big.Rat).Sub(r, new(big.Rat).SetInt(ip))
	var b strings.Builder
	ten := big.NewRat(10, 1)
	for rem.Sign() != 0 {
		if b.Len() > maxBoundDigits {
			return ip, b.String(), false
		}
		rem.Mul(rem, ten)
		d := ratFloor(rem)
		b.WriteByte(byte('0' + d.Int64()))
		rem.Sub(rem, new(big.Rat).SetInt(d))
	}
	return ip, b.String(), true
}

// decimalRange is numbers without exponent within lo..hi.
func (c *jsCompiler) decimalRange(lo, hi jsBound) (string, bool) {
	if lo.v != nil && hi.v != nil {
		if d := lo.v.Cmp(hi.v); d > 0 || d == 0 && (lo.excl || hi.excl) {
			return "", true
		}
	}
	zero := new(big.Rat)
	var alts []string
	// Non-negative values: magnitudes in max(lo, 0)..hi.
	if hi.v == nil || hi.v.Sign() > 0 || hi.v.Sign() == 0 && !hi.excl {
		l := lo
		if l.v == nil || l.v.Sign() < 0 {
			l = jsBound{v: zero}
		}
		if e, never := c.magnitude(l, hi); !never {
			alts = append(alts, e)
		}
	}
	// Negative values: magnitudes in max(-hi, 0 exclusive)..-lo.
	if lo.v == nil || lo.v.Sign() < 0 {
		l := jsBound{v: zero, excl: true}
		if hi.v != nil && hi.v.Sign() < 0 {
			l = jsBound{v: new(big.Rat).Neg(hi.v), excl: hi.excl}
		}
		u := jsBound{}
		if lo.v != nil {
			u = jsBound{v: new(big.Rat).Neg(lo.v), excl: lo.excl}
		}
		if e, never := c.magnitude(l, u); !never {
			alts = append(alts, gSeq(`"-"`, gAtom(e)))
		}
	}
	if len(alts) == 0 {
		return "", true
	}
	return gAlt(alts...), false
}

// magnitude is unsigned decimals I or I.F within l..u (l.v >= 0; u.v nil
// is unbounded).
func (c *jsCompiler) magnitude(l, u jsBound) (string, bool) {
	if u.v != nil {
		if d := l.v.Cmp(u.v); d > 0 || d == 0 && (l.excl || u.excl) {
			return "", true
		}
	}
	a, alpha, _ := splitRat(l.v)
	anyFrac := gbnfQuote(".") + " [0-9]+"
	withFrac := func(ip, frac string, fracOK bool, bare bool) (string, bool) {
		switch {
		case fracOK && bare:
			return gSeq(ip, "("+gbnfQuote(".")+" "+frac+")?"), false
		case fracOK:
			return gSeq(ip, gbnfQuote("."), frac), false
		case bare:
			return ip, false
		}
		return "", true
	}
	if u.v != nil {
		b, beta, _ := splitRat(u.v)
		if a.Cmp(b) == 0 {
			frac, ok := c.fracRange(&alpha, !l.excl, &beta, !u.excl)
			bare := alpha == "" && !l.excl && (beta != "" || !u.excl)
			return withFrac(gbnfQuote(a.String()), frac, ok, bare)
		}
		var alts []string
		mid := new(big.Int).Add(a, big.NewInt(1))
		if alpha == "" && !l.excl {
			mid = a
		} else {
			frac, ok := c.fracRange(&alpha, !l.excl, nil, false)
			if e, never := withFrac(gbnfQuote(a.String()), frac, ok, false); !never {
				alts = append(alts, e)
			}
		}
		top := new(big.Int).Sub(b, big.NewInt(1))
		if mid.Cmp(top) <= 0 {
			alts = append(alts, gSeq(gAtom(c.natRange(mid, top)), "("+anyFrac+")?"))
		}
		frac, ok := c.fracRange(nil, false, &beta, !u.excl)
		if e, never := withFrac(gbnfQuote(b.String()), frac, ok, beta != "" || !u.excl); !never {
			alts = append(alts, e)
		}
		if len(alts) == 0 {
			return "", true
		}
		return gAlt(alts...), false
	}
	var alts []string
	mid := new(big.Int).Add(a, big.NewInt(1))
	if alpha == "" && !l.excl {
		mid = a
	} else {
		frac, ok := c.fracRange(&alpha, !l.excl, nil, false)
		if e, never := withFrac(gbnfQuote(a.String()), frac, ok, false); !never {
			alts = append(alts, e)
		}
	}
	alts = append(alts, gSeq(gAtom(c.natRange(mid, nil)), "("+anyFrac+")?"))
	return gAlt(alts...), false
}

// fracRange is the non-empty digit strings F with lo <= 0.F <= hi (each
// bound optional, inclusive or not), as a rule: a digit automaton whose
// states track whether F still equals each bound's prefix.
func (c *jsCompiler) fracRange(lo *string, loIncl bool, hi *string, hiIncl bool) (string, bool) {
	m := 0
	if lo != nil {
		m = max(m, len(*lo))
	}
	if hi != nil {
		m = max(m, len(*hi))
	}
	digitAt := func(s *string, i int) byte {
		if i < len(*s) {
			return (*s)[i]
		}
		return '0'
	}
	zeroFrom := func(s *string, i int) bool { return i >= len(*s) || allOf((*s)[i:], '0') }
	type st struct {
		i      int
		tl, tu bool
	}
	canEnd := func(s st) bool {
		if s.i == 0 {
			return false
		}
		lowOK := !s.tl || zeroFrom(lo, s.i) && loIncl
		highOK := !s.tu || !zeroFrom(hi, s.i) || hiIncl
		return lowOK && highOK
	}
	type edge struct {
		d1, d2 byte
		to     st
	}
	next := func(s st) []edge {
		var out []edge
		for d := byte('0'); d <= '9'; d++ {
			if s.tl && d < digitAt(lo, s.i) || s.tu && d > digitAt(hi, s.i) {
				continue
			}
			to := st{min(s.i+1, max(m, 1)), s.tl && d == digitAt(lo, s.i), s.tu && d == digitAt(hi, s.i)}
			if !to.tl && !to.tu {
				to.i = 1 // every loose state is the same
			}
			if n := len(out); n > 0 && out[n-1].to == to && out[n-1].d2 == d-1 {
				out[n-1].d2 = d
				continue
			}
			out = append(out, edge{d, d, to})
		}
		return out
	}
	start := st{0, lo != nil, hi != nil}
	// Reachable states, then the live ones (that can reach an end).
	var states []st
	seen := map[st]bool{start: true}
	for q := []st{start}; len(q) > 0; q = q[1:] {
		states = append(states, q[0])
		for _, e := range next(q[0]) {
			if !seen[e.to] {
				seen[e.to] = true
				q = append(q, e.to)
			}
		}
	}
	live := map[st]bool{}
	for changed := true; changed; {
		changed = false
		for _, s := range states {
			if live[s] {
				continue
			}
			ok := canEnd(s)
			for _, e := range next(s) {
				ok = ok || live[e.to]
			}
			if ok {
				live[s], changed = true, true
			}
		}
	}
	if !live[start] {
		return "", false
	}
	names := map[st]string{}
	ref := func(s st) string {
		if !s.tl && !s.tu {
			return "[0-9]*"
		}
		if names[s] == "" {
			names[s] = c.w.fresh("frac")
		}
		return names[s]
	}
	if !start.tl && !start.tu {
		return "[0-9]+", true
	}
	startName := ref(start)
	for _, s := range states {
		if !live[s] || !s.tl && !s.tu {
			continue
		}
		var alts []string
		for _, e := range next(s) {
			if live[e.to] {
				alts = append(alts, gSeq(digits(e.d1, e.d2), ref(e.to)))
			}
		}
		if canEnd(s) {
			alts = append(alts, `""`)
		}
		c.w.define(ref(s), strings.Join(alts, " | "))
	}
	return startName, true
}
