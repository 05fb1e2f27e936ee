package jinja

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Limits bound the work of compiling and rendering one template, so that a
// hostile template (one that comes with a model file, say) fails with a
// *LimitError instead of exhausting memory, the stack or the CPU.
//
// A zero field takes its value from DefaultLimits; a negative one means no
// limit.
type Limits struct {
	// MaxOutputBytes bounds the rendered text.
	MaxOutputBytes int64
	// MaxValueBytes bounds the largest value an expression, filter, method,
	// macro call or block may build: a string's bytes, a list's items times
	// ValueSize, a dict's entries times 2*ValueSize. It is checked before
	// the value is allocated.
	MaxValueBytes int64
	// MaxAllocBytes bounds the bytes of all the strings, lists and dicts a
	// render builds (output included), added up: nothing is taken off when
	// a value is dropped. It bounds the memory a render can keep alive,
	// and the garbage it makes.
	MaxAllocBytes int64
	// MaxSteps bounds the work of a render: a step for each template node
	// and expression evaluated, for each item a filter, method, test or
	// comparison visits, and for each 64 bytes of string data read or
	// built; 8 for a loop iteration and 4 for a macro, caller or recursive
	// loop call, which cost more.
	MaxSteps int64
	// MaxRange bounds the number of items range() returns.
	MaxRange int64
	// MaxDepth bounds nesting: of blocks and of expressions (brackets,
	// parentheses, operators, filters) when compiling, and when rendering
	// of macro, caller and recursive loop calls and of the lists and dicts
	// that printing, tojson and comparisons walk.
	MaxDepth int
	// Timeout bounds the wall time of a render. The clock is read every
	// 1024 steps, so it is a backstop: MaxSteps normally ends a runaway
	// render first.
	Timeout time.Duration
}

// ValueSize is the size of one Value, the unit of a list's size for
// MaxValueBytes.
const ValueSize = int64(unsafe.Sizeof(Value{}))

// DefaultLimits returns the limits Compile, Render and RenderValues use:
// far above what chat templates need, and low enough that a hostile
// template fails within about a second and well under 256 MiB of heap.
//
// For scale: the 19 model templates under testdata, each rendering
// conversations of about 770 KB (some 200k tokens, hundreds of messages),
// took at most 1.6M steps, 10 MB of MaxAllocBytes, call depth 9 and
// nesting depth 28.
func DefaultLimits() Limits {
	return Limits{
		MaxOutputBytes: 16 << 20,
		MaxValueBytes:  16 << 20,
		MaxAllocBytes:  64 << 20,
		MaxSteps:       10_000_000,
		MaxRange:       100_000,
		MaxDepth:       200,
		Timeout:        5 * time.Second,
	}
}

// resolve fills the zero fields from DefaultLimits and turns negative ones
// into no limit.
func (l Limits) resolve() Limits {
	d := DefaultLimits()
	i64 := func(v *int64, def int64) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = math.MaxInt64
		}
	}
	i64(&l.MaxOutputBytes, d.MaxOutputBytes)
	i64(&l.MaxValueBytes, d.MaxValueBytes)
	i64(&l.MaxAllocBytes, d.MaxAllocBytes)
	i64(&l.MaxSteps, d.MaxSteps)
	i64(&l.MaxRange, d.MaxRange)
	switch {
	case l.MaxDepth == 0:
		l.MaxDepth = d.MaxDepth
	case l.MaxDepth < 0:
		l.MaxDepth = math.MaxInt
	}
	switch {
	case l.Timeout == 0:
		l.Timeout = d.Timeout
	case l.Timeout < 0:
		l.Timeout = math.MaxInt64
	}
	return l
}

// Limit names, the values of LimitError.Limit.
const (
	LimitOutputBytes = "max_output_bytes"
	LimitValueBytes  = "max_value_bytes"
	LimitAllocBytes  = "max_alloc_bytes"
	LimitSteps       = "max_steps"
	LimitRange       = "max_range"
	LimitDepth       = "max_depth"
	LimitTimeout     = "timeout"
)

// LimitError reports a compile or render stopped by one of its Limits.
type LimitError struct {
	// Limit names the limit: one of the Limit constants, such as
	// "max_steps".
	Limit string
	// Value is the limit's value: bytes, steps, items, levels, or for
	// "timeout" nanoseconds.
	Value int64
}

func (e *LimitError) Error() string {
	if e.Limit == LimitTimeout {
		return fmt.Sprintf("template exceeded its %s limit (%v)", e.Limit, time.Duration(e.Value))
	}
	return fmt.Sprintf("template exceeded its %s limit (%d)", e.Limit, e.Value)
}

// =============================================================================
// Budget
// =============================================================================

// limitPanic carries a *LimitError up the stack to the recover in render:
// limits are checked deep inside helpers (comparisons, printing, filters)
// that have no error result.
type limitPanic struct{ err *LimitError }

// budget is the state of one render's limits, shared by every evaluator
// of the render (macros, loops, call and filter blocks). A nil *budget
// enforces nothing; the exported Value methods use it.
type budget struct {
	lim      Limits
	steps    int64
	alloc    int64
	ticks    int64 // steps and KiB since the clock was last read
	deadline time.Time
	calls    int // macro, caller and recursive loop calls under way
}

// The costs of work in steps, so that a step takes roughly the same time
// whatever the template does: from some tens of nanoseconds for an
// expression to a few hundred for a loop iteration or macro call, which
// allocate scopes and loop variables.
const (
	bytesPerStep = 64 // bytes of string data read or built
	iterSteps    = 8  // a loop iteration
	callSteps    = 4  // a macro, caller or recursive loop call
)

// checkEvery is how many steps pass between readings of the clock.
const checkEvery = 1024

func newBudget(lim Limits) *budget {
	b := &budget{lim: lim.resolve()}
	if b.lim.Timeout != math.MaxInt64 {
		b.deadline = time.Now().Add(b.lim.Timeout)
	}
	return b
}

func (b *budget) fail(limit string, value int64) {
	panic(limitPanic{&LimitError{Limit: limit, Value: value}})
}

// recoverLimit turns a limit panic into *err. Use it deferred.
func recoverLimit(err *error) {
	if r := recover(); r != nil {
		lp, ok := r.(limitPanic)
		if !ok {
			panic(r)
		}
		*err = lp.err
	}
}

// step charges n steps.
func (b *budget) step(n int64) {
	if b == nil {
		return
	}
	b.steps += n
	if b.steps > b.lim.MaxSteps || b.steps < 0 {
		b.fail(LimitSteps, b.lim.MaxSteps)
	}
	b.tick(n)
}

func (b *budget) tick(n int64) {
	b.ticks += n
	if b.ticks >= checkEvery {
		b.ticks = 0
		if !b.deadline.IsZero() && time.Now().After(b.deadline) {
			b.fail(LimitTimeout, int64(b.lim.Timeout))
		}
	}
}

// scan charges the work of reading n bytes.
func (b *budget) scan(n int) {
	if b == nil || n < bytesPerStep {
		return
	}
	b.step(int64(n) / bytesPerStep)
}

// scanNums charges the parsing of the strings among vs as numbers.
func (b *budget) scanNums(vs ...Value) {
	for _, v := range vs {
		if v.IsString() {
			b.scan(len(v.AsString()))
		}
	}
}

// size checks that a value of n bytes may be built, and charges its
// allocation and the work of filling it. Call it before allocating.
func (b *budget) size(n int64) {
	if b == nil {
		return
	}
	// A saturated size is too large even without a limit.
	if n > b.lim.MaxValueBytes || n < 0 || n == math.MaxInt64 {
		b.fail(LimitValueBytes, b.lim.MaxValueBytes)
	}
	b.alloc = addSize(b.alloc, n)
	if b.alloc > b.lim.MaxAllocBytes {
		b.fail(LimitAllocBytes, b.lim.MaxAllocBytes)
	}
	if n >= bytesPerStep {
		b.step(n / bytesPerStep)
	}
}

// temp charges a temporary allocation of n bytes, such as a string's
// runes: it counts towards MaxAllocBytes and MaxSteps, not MaxValueBytes.
func (b *budget) temp(n int64) {
	if b == nil {
		return
	}
	b.alloc = addSize(b.alloc, n)
	if b.alloc > b.lim.MaxAllocBytes {
		b.fail(LimitAllocBytes, b.lim.MaxAllocBytes)
	}
	if n >= bytesPerStep {
		b.step(n / bytesPerStep)
	}
}

// check fails if a value of n bytes, already built, is over
// MaxValueBytes. It is for the results of operations that may grow their
// input by a small factor (case mapping, invalid UTF-8 becoming U+FFFD),
// whose input size was checked before.
func (b *budget) check(n int64) {
	if b != nil && n > b.lim.MaxValueBytes {
		b.fail(LimitValueBytes, b.lim.MaxValueBytes)
	}
}

// checked checks the size of a built string and returns it as a Value.
func (b *budget) checked(s string) Value {
	b.check(int64(len(s)))
	return NewString(s)
}

// items checks and charges a new list of n items.
func (b *budget) items(n int) { b.growList(n, n) }

// growList checks that a list may hold n items, and charges the added
// ones.
func (b *budget) growList(n, added int) { b.grow(n, added, ValueSize) }

// dictEntry is the size of one dict entry for MaxValueBytes: its key and
// value, its map slot and its place in Keys, roughly.
const dictEntry = 2 * ValueSize

// growDict checks that a dict may hold n entries, and charges the added
// ones.
func (b *budget) growDict(n, added int) { b.grow(n, added, dictEntry) }

func (b *budget) grow(n, added int, unit int64) {
	if b == nil {
		return
	}
	if mulSize(int64(n), unit) > b.lim.MaxValueBytes {
		b.fail(LimitValueBytes, b.lim.MaxValueBytes)
	}
	bytes := mulSize(int64(added), unit)
	b.alloc = addSize(b.alloc, bytes)
	if b.alloc > b.lim.MaxAllocBytes {
		b.fail(LimitAllocBytes, b.lim.MaxAllocBytes)
	}
	if bytes >= bytesPerStep {
		b.step(bytes / bytesPerStep)
	}
}

// enter starts a macro, caller or recursive loop call; leave ends it.
func (b *budget) enter() {
	if b == nil {
		return
	}
	b.calls++
	if b.calls > b.lim.MaxDepth {
		b.fail(LimitDepth, int64(b.lim.MaxDepth))
	}
	b.step(callSteps)
}

func (b *budget) leave() {
	if b != nil {
		b.calls--
	}
}

// nested checks the depth of a walk through nested lists and dicts.
func (b *budget) nested(depth int) {
	if b != nil && depth > b.lim.MaxDepth {
		b.fail(LimitDepth, int64(b.lim.MaxDepth))
	}
}

// mulSize multiplies sizes, saturating instead of overflowing.
func mulSize(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// addSize adds sizes, saturating instead of overflowing.
func addSize(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// =============================================================================
// Bounded builder
// =============================================================================

// limitedBuilder is a strings.Builder that fails its budget's limit rather
// than grow past max bytes, and charges what it writes. With a nil budget
// it is a plain strings.Builder.
type limitedBuilder struct {
	strings.Builder
	b       *budget
	max     int64
	limit   string
	pending int // bytes written since the last step charged for them
}

// newBuilder returns a builder for a value: bounded by MaxValueBytes.
func (b *budget) newBuilder() *limitedBuilder {
	w := &limitedBuilder{b: b, limit: LimitValueBytes}
	if b != nil {
		w.max = b.lim.MaxValueBytes
	}
	return w
}

func (w *limitedBuilder) reserve(n int) {
	b := w.b
	if b == nil {
		return
	}
	if int64(w.Len())+int64(n) > w.max {
		b.fail(w.limit, w.max)
	}
	b.alloc += int64(n)
	if b.alloc > b.lim.MaxAllocBytes {
		b.fail(LimitAllocBytes, b.lim.MaxAllocBytes)
	}
	w.pending += n
	if w.pending >= bytesPerStep {
		b.step(int64(w.pending / bytesPerStep))
		w.pending %= bytesPerStep
	}
}

func (w *limitedBuilder) WriteString(s string) (int, error) {
	w.reserve(len(s))
	return w.Builder.WriteString(s)
}

func (w *limitedBuilder) Write(p []byte) (int, error) {
	w.reserve(len(p))
	return w.Builder.Write(p)
}

func (w *limitedBuilder) WriteByte(c byte) error {
	w.reserve(1)
	return w.Builder.WriteByte(c)
}

func (w *limitedBuilder) WriteRune(r rune) (int, error) {
	n := utf8.RuneLen(r)
	if n < 0 {
		n = utf8.RuneLen(utf8.RuneError)
	}
	w.reserve(n)
	return w.Builder.WriteRune(r)
}
