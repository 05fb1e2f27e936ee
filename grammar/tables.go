package grammar

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Bounds on one generation of a grammar's tables. Past the soft ones new
// matchers start on fresh tables (the old ones stay with the matchers
// using them). Past the hard ones, or at a state of more than
// maxStateStacks stacks, a step that needs a new state fails with a
// *LimitError instead: a grammar whose configurations multiply with the
// text (ambiguous nested repetitions) costs a bounded memory and time,
// whatever it is, and a generation on it ends with that error.
const (
	softTableBytes = 16 << 20
	hardTableBytes = 64 << 20
	// Work is counted in stack frames visited while expanding states.
	softTableWork  = 1 << 23
	hardTableWork  = 1 << 25
	maxStateStacks = 1 << 16
	maxMaskBytes   = 16 << 20
)

// What the tables' memory is counted in: a node (its entry in nodes,
// nodeIDs, fin and seen), a state (its struct and map entry, plus 8 bytes
// a stack for tops and the key), a state's transition row.
const (
	nodeBytes  = 48
	stateBytes = 128
	rowBytes   = 256 * 4
)

// LimitError reports a grammar whose automaton outgrew the matcher's
// bounds: a state of too many stacks, or tables past their memory or
// work budget. It comes from grammars whose ways of matching a text
// multiply with its length, such as nested repetitions with bounds
// (x{1,100}){0,100} where the text does not say where each copy ends.
type LimitError struct {
	Msg string
}

func (e *LimitError) Error() string { return "grammar: " + e.Msg }

// node is one stack frame: a position in Grammar.elems and the node to
// continue with when its alternative ends (-1: the grammar ends).
type node struct{ pos, parent int32 }

// state is a set of stacks: the nodes at a byte-set element (sorted), and
// whether the grammar may end here.
type state struct {
	tops []int32
	end  bool
	read byteSet // the bytes some top reads: any other byte is dead at once
	next []int32 // per byte: the next state, dead (0), or unknown (-1)
	need int32   // 1 + the fewest tokens that end the text (see need), 0 unknown
}

const deadState = 0

// failState is what step returns when the state it needs cannot be made
// within the bounds (t.err says why); it is never stored as a transition.
const failState = -1

// tables are the interned nodes and states of one grammar and the masks
// computed for them. All access holds mu.
type tables struct {
	mu       sync.Mutex
	g        *Grammar
	nodes    []node
	nodeIDs  map[node]int32
	states   []state
	stateIDs map[string]int32
	init     int32

	masks     map[maskKey]cachedMask
	maskOrder []maskKey
	maskBytes int

	// bytes estimates the memory of nodes, states and transitions; work
	// counts the frames expansions visited; err is set, for good, once a
	// bound is passed (new matchers then start on fresh tables).
	bytes int
	work  int
	err   *LimitError
	// held is bytes plus maskBytes, for Grammar.Bytes to read without
	// waiting for a mask being computed.
	held atomic.Int64

	// For MaskWithin: per node the fewest bytes that empty its stack (-1
	// unknown), per state the need values its tokens leave.
	fin   []int32
	needs map[maskKey][]int32

	// scratch for expansion
	seen  []uint32
	stamp uint32
	out   []int32
	key   []byte
}

type maskKey struct {
	v       *Vocab
	state   int32
	atStart bool
	limit   int32 // MaskWithin's bound on the need a token leaves; -1 none
}

type tablesRef struct {
	mu  sync.Mutex
	cur *tables
}

// current returns the tables new matchers use, starting a fresh
// generation when the current one is full. The tables it returns may have
// failed (err set) when even a fresh generation cannot hold the start.
func (g *Grammar) current() *tables {
	g.tabs.mu.Lock()
	defer g.tabs.mu.Unlock()
	t := g.tabs.cur
	if t != nil {
		t.mu.Lock()
		full := t.err != nil || t.bytes > softTableBytes || t.work > softTableWork
		t.mu.Unlock()
		if !full {
			return t
		}
	}
	t = newTables(g)
	g.tabs.cur = t
	return t
}

// grow counts n more bytes of nodes, states or transitions. Held t.mu.
func (t *tables) grow(n int) {
	t.bytes += n
	t.held.Add(int64(n))
}

// Bytes estimates the memory g holds: its compiled form and its current
// tables (states, transitions, cached masks). Caches of grammars bound
// their memory with it.
func (g *Grammar) Bytes() int {
	g.sizeOnce.Do(func() {
		g.size = 8*len(g.elems) + 28*len(g.alts) + 32*len(g.sets) + 4*len(g.elems) // rest, once MaskWithin makes it
		for _, a := range g.alts {
			g.size += 4 * len(a)
		}
	})
	g.tabs.mu.Lock()
	t := g.tabs.cur
	g.tabs.mu.Unlock()
	if t == nil {
		return g.size
	}
	return g.size + int(t.held.Load())
}

// newTables starts a generation of g's tables at the start state; when
// the start state itself is past the bounds, the tables come back with
// err set (and no start).
func newTables(g *Grammar) *tables {
	t := &tables{g: g, nodeIDs: map[node]int32{}, stateIDs: map[string]int32{}, masks: map[maskKey]cachedMask{}, needs: map[maskKey][]int32{}}
	t.states = append(t.states, state{}) // dead
	t.stateIDs[""] = deadState
	t.begin()
	for _, a := range g.alts[g.root] {
		t.expand(t.cont(a, -1))
	}
	t.init = t.intern()
	return t
}

// retire drops t as its grammar's current tables, once they have failed,
// so that the grammar (in a cache) does not hold their memory; the
// matchers on them keep them while they live. Not under t.mu.
func (t *tables) retire() {
	g := t.g
	g.tabs.mu.Lock()
	if g.tabs.cur == t {
		g.tabs.cur = nil
	}
	g.tabs.mu.Unlock()
}

// fail records that a bound was passed.
func (t *tables) fail(format string, args ...any) {
	if t.err == nil {
		t.err = &LimitError{Msg: fmt.Sprintf(format, args...)}
	}
}

// cont is the continuation at pos with parent: the node, or parent itself
// when pos ends its alternative.
func (t *tables) cont(pos, parent int32) int32 {
	if t.g.isEnd(pos) {
		return parent
	}
	n := node{pos, parent}
	id, ok := t.nodeIDs[n]
	if !ok {
		id = int32(len(t.nodes))
		t.nodes = append(t.nodes, n)
		t.nodeIDs[n] = id
		if t.grow(nodeBytes); t.bytes > hardTableBytes {
			t.fail("the grammar's automaton needs over %d MiB: its ways of matching the text multiply (nested repetitions whose copies the text does not delimit?)", hardTableBytes>>20)
		}
	}
	return id
}

// begin starts collecting a new state's nodes.
func (t *tables) begin() {
	t.out = t.out[:0]
	t.stamp++
	if t.stamp == 0 {
		clear(t.seen)
		t.stamp = 1
	}
}

// expand adds the byte-set positions reachable from continuation c without
// reading a byte (-1 adds the end). It stops early once t.err is set.
func (t *tables) expand(c int32) {
	if t.err != nil {
		return
	}
	if c < 0 {
		t.out = append(t.out, -1)
		return
	}
	if t.work++; t.work > hardTableWork {
		t.fail("the grammar's automaton takes over %d steps to build: its ways of matching the text multiply (nested repetitions whose copies the text does not delimit?)", hardTableWork)
		return
	}
	for int(c) >= len(t.seen) {
		t.seen = append(t.seen, 0)
	}
	if t.seen[c] == t.stamp {
		return
	}
	t.seen[c] = t.stamp
	n := t.nodes[c]
	e := t.g.elems[n.pos]
	if !e.isRule() {
		if t.out = append(t.out, c); len(t.out) > maxStateStacks {
			t.fail("a state of the grammar has over %d stacks: its ways of matching the text multiply (nested repetitions whose copies the text does not delimit?)", maxStateStacks)
		}
		return
	}
	next := t.cont(n.pos+1, n.parent)
	for _, a := range t.g.alts[e.rule] {
		t.expand(t.cont(a, next))
	}
}

// intern turns the collected nodes into a state id, or failState when an
// expansion passed a bound.
func (t *tables) intern() int32 {
	if t.err != nil {
		return failState
	}
	out := t.out
	slices.Sort(out)
	w, end := 0, false
	for i, v := range out {
		if v < 0 {
			end = true
			continue
		}
		if i > 0 && v == out[i-1] {
			continue
		}
		out[w] = v
		w++
	}
	out = out[:w]
	t.key = t.key[:0]
	if end {
		t.key = append(t.key, 1)
	} else if len(out) > 0 {
		t.key = append(t.key, 0)
	}
	for _, v := range out {
		t.key = binary.LittleEndian.AppendUint32(t.key, uint32(v))
	}
	if id, ok := t.stateIDs[string(t.key)]; ok {
		return id
	}
	id := int32(len(t.states))
	var read byteSet
	for _, n := range out {
		set := &t.g.sets[t.g.elems[t.nodes[n].pos].set]
		for i := range read {
			read[i] |= set[i]
		}
	}
	t.states = append(t.states, state{tops: append([]int32(nil), out...), end: end, read: read})
	t.stateIDs[string(t.key)] = id
	if t.grow(stateBytes + 8*len(out)); t.bytes > hardTableBytes {
		t.fail("the grammar's automaton needs over %d MiB: its ways of matching the text multiply (nested repetitions whose copies the text does not delimit?)", hardTableBytes>>20)
	}
	return id
}

// step is the state after byte c from s (deadState if none; failState
// when a new state is needed and the tables are past a bound).
func (t *tables) step(s int32, c byte) int32 {
	st := &t.states[s]
	if !st.read.has(c) {
		return deadState
	}
	if st.next == nil {
		if len(st.tops) == 0 {
			return deadState
		}
		if t.err != nil {
			return failState
		}
		st.next = make([]int32, 256)
		for i := range st.next {
			st.next[i] = -1
		}
		t.grow(rowBytes)
	}
	if v := st.next[c]; v >= 0 {
		return v
	}
	if t.err != nil {
		return failState
	}
	t.begin()
	t.work += len(st.tops)
	for _, n := range st.tops {
		nd := t.nodes[n]
		if t.g.sets[t.g.elems[nd.pos].set].has(c) {
			t.expand(t.cont(nd.pos+1, nd.parent))
		}
	}
	v := int32(deadState)
	if len(t.out) > 0 || t.err != nil {
		v = t.intern()
	}
	if v != failState {
		t.states[s].next[c] = v // st may have moved
	}
	return v
}
