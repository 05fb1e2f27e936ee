package grammar

import (
	"encoding/binary"
	"sync"
)

// Bounds on one generation of a grammar's tables: past them, new matchers
// start on fresh tables (the old ones stay with the matchers using them).
const (
	maxStates    = 1 << 14
	maxNodes     = 1 << 20
	maxMaskBytes = 16 << 20
)

// node is one stack frame: a position in Grammar.elems and the node to
// continue with when its alternative ends (-1: the grammar ends).
type node struct{ pos, parent int32 }

// state is a set of stacks: the nodes at a byte-set element (sorted), and
// whether the grammar may end here.
type state struct {
	tops []int32
	end  bool
	next []int32 // per byte: the next state, dead (0), or unknown (-1)
	need int32   // 1 + the fewest tokens that end the text (see need), 0 unknown
}

const deadState = 0

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
// generation when the current one is full.
func (g *Grammar) current() *tables {
	g.tabs.mu.Lock()
	defer g.tabs.mu.Unlock()
	t := g.tabs.cur
	if t != nil {
		t.mu.Lock()
		full := len(t.states) > maxStates || len(t.nodes) > maxNodes
		t.mu.Unlock()
		if !full {
			return t
		}
	}
	t = newTables(g)
	g.tabs.cur = t
	return t
}

func newTables(g *Grammar) *tables {
	t := &tables{g: g, nodeIDs: map[node]int32{}, stateIDs: map[string]int32{}, masks: map[maskKey]cachedMask{}, needs: map[maskKey][]int32{}}
	t.states = append(t.states, state{}) // dead
	t.stateIDs[""] = deadState
	t.out = t.out[:0]
	t.begin()
	for _, a := range g.alts[g.root] {
		t.expand(t.cont(a, -1))
	}
	t.init = t.intern()
	return t
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
// reading a byte (-1 adds the end).
func (t *tables) expand(c int32) {
	if c < 0 {
		t.out = append(t.out, -1)
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
		t.out = append(t.out, c)
		return
	}
	next := t.cont(n.pos+1, n.parent)
	for _, a := range t.g.alts[e.rule] {
		t.expand(t.cont(a, next))
	}
}

// intern turns the collected nodes into a state id.
func (t *tables) intern() int32 {
	out := t.out
	// Insertion sort and dedup: states are small.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
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
	t.states = append(t.states, state{tops: append([]int32(nil), out...), end: end})
	t.stateIDs[string(t.key)] = id
	return id
}

// step is the state after byte c from s (deadState if none).
func (t *tables) step(s int32, c byte) int32 {
	st := &t.states[s]
	if st.next == nil {
		if len(st.tops) == 0 {
			return deadState
		}
		st.next = make([]int32, 256)
		for i := range st.next {
			st.next[i] = -1
		}
	}
	if v := st.next[c]; v >= 0 {
		return v
	}
	t.begin()
	for _, n := range st.tops {
		nd := t.nodes[n]
		if t.g.sets[t.g.elems[nd.pos].set].has(c) {
			t.expand(t.cont(nd.pos+1, nd.parent))
		}
	}
	v := int32(deadState)
	if len(t.out) > 0 {
		v = t.intern()
	}
	t.states[s].next[c] = v // st may have moved
	return v
}
