package grammar

import (
	"container/heap"
	"slices"
)

// Fitting a text into a token budget (MaskWithin): the fewest bytes that
// end the grammar from each position are computed once per grammar, the
// fewest from each stack and state as the matcher meets them, and a
// token is allowed only when what it leaves can still end within the
// tokens left. Every byte is a token of its own in the vocabularies this
// engine reads (byte-level BPE, SentencePiece's byte fallback), so a
// state that can end in k bytes can end in k tokens, and the budget never
// runs out.

// unbounded stands for a length no derivation reaches (a rule that never
// ends); sums saturate at it.
const unbounded = int32(1 << 30)

func satAdd(a, b int32) int32 { return min(a+b, unbounded) }

// minRest returns, per element position, the fewest bytes from that
// element to the end of its alternative. The fewest bytes each rule
// derives are found with Knuth's generalisation of Dijkstra's algorithm
// to grammars: a rule's length is final when it is the smallest candidate
// left, and an alternative becomes a candidate once every rule it names
// is final.
func (g *Grammar) minRest() []int32 {
	g.restOnce.Do(func() {
		type alt struct{ rule, start, pending, sum int32 }
		var alts []alt
		users := make([][]int32, len(g.alts)) // per rule, the alternatives naming it (once per mention)
		for r, starts := range g.alts {
			for _, a := range starts {
				id := int32(len(alts))
				al := alt{rule: int32(r), start: a}
				for p := a; !g.isEnd(p); p++ {
					if e := g.elems[p]; e.isRule() {
						al.pending++
						users[e.rule] = append(users[e.rule], id)
					} else {
						al.sum++
					}
				}
				alts = append(alts, al)
			}
		}
		ruleLen := make([]int32, len(g.alts))
		for i := range ruleLen {
			ruleLen[i] = -1
		}
		h := &lenHeap{}
		for _, a := range alts {
			if a.pending == 0 {
				heap.Push(h, lenItem{a.sum, a.rule})
			}
		}
		for h.Len() > 0 {
			it := heap.Pop(h).(lenItem)
			if ruleLen[it.rule] >= 0 {
				continue
			}
			ruleLen[it.rule] = it.n
			for _, id := range users[it.rule] {
				a := &alts[id]
				a.sum = satAdd(a.sum, it.n)
				if a.pending--; a.pending == 0 {
					heap.Push(h, lenItem{a.sum, a.rule})
				}
			}
		}
		rest := make([]int32, len(g.elems))
		for _, a := range alts {
			end := a.start
			for !g.isEnd(end) {
				end++
			}
			for p := end - 1; p >= a.start; p-- {
				c := int32(1)
				if e := g.elems[p]; e.isRule() {
					c = ruleLen[e.rule]
					if c < 0 {
						c = unbounded
					}
				}
				rest[p] = satAdd(c, rest[p+1])
			}
		}
		g.rest = rest
	})
	return g.rest
}

type lenItem struct{ n, rule int32 }

type lenHeap []lenItem

func (h lenHeap) Len() int           { return len(h) }
func (h lenHeap) Less(i, j int) bool { return h[i].n < h[j].n }
func (h lenHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lenHeap) Push(x any)        { *h = append(*h, x.(lenItem)) }
func (h *lenHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// finLen is the fewest bytes that empty node n's stack: the rest of its
// alternative, then its parent's. Held t.mu.
func (t *tables) finLen(n int32) int32 {
	rest := t.g.minRest()
	for len(t.fin) < len(t.nodes) {
		t.fin = append(t.fin, -1)
	}
	// Walk up to the first known ancestor, then fill in on the way down.
	var chain []int32
	for n >= 0 && t.fin[n] < 0 {
		chain = append(chain, n)
		n = t.nodes[n].parent
	}
	acc := int32(0)
	if n >= 0 {
		acc = t.fin[n]
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		acc = satAdd(rest[t.nodes[c].pos], acc)
		t.fin[c] = acc
	}
	if len(chain) > 0 {
		return t.fin[chain[0]]
	}
	return acc
}

// need is the fewest tokens that end the text from state s: 0 when
// nothing can follow, else the bytes to an end and one EOS. Held t.mu.
func (t *tables) need(s int32) int32 {
	st := &t.states[s]
	if st.need > 0 {
		return st.need - 1
	}
	var n int32
	switch {
	case len(st.tops) == 0:
		n = 0
	case st.end:
		n = 1
	default:
		n = unbounded
		for _, top := range st.tops {
			n = min(n, t.finLen(top))
		}
		n = satAdd(n, 1)
	}
	t.states[s].need = n + 1
	return n
}

// MinTokens is the fewest tokens that end the text from here, EOS
// included: a lower bound on what the rest of a generation takes, and,
// with one token per byte, one that can be met.
func (m *Matcher) MinTokens() int {
	if m.ended {
		return 0
	}
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	return int(m.t.need(m.state))
}

// MaskWithin is Mask for a text that must end within tokens more tokens,
// this one included: a token is allowed only when the fewest tokens that
// end the text after it fit in the rest. When the text cannot end in
// tokens from here (the budget was already short, or other processors
// took the tokens that fit), it is Mask.
func (m *Matcher) MaskWithin(v *Vocab, dst []uint32, tokens int) int {
	n := m.Mask(v, dst)
	if n == 0 || tokens <= 0 {
		return n
	}
	t := m.t
	defer m.retireFailed()
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(t.need(m.state)) > tokens {
		return n
	}
	key := maskKey{v: v, state: m.state, atStart: !m.started && v.strip, limit: -1}
	needs, ok := t.needs[key]
	if !ok {
		if needs, ok = t.tokenNeeds(v, m.state, v.view(m.started)); !ok {
			m.err = t.err
			clear(dst)
			return 0
		}
		t.needs[key] = needs
	}
	limit := int32(tokens - 1)
	k, _ := slices.BinarySearch(needs, limit+1)
	if k == len(needs) || k == 0 {
		return n
	}
	// Masks are kept per distinct bound that changes them.
	key.limit = needs[k-1]
	mask, ok := t.masks[key]
	if !ok {
		if mask, ok = t.walkMask(v, m.state, v.view(m.started), key.limit, nil); !ok {
			m.err = t.err
			clear(dst)
			return 0
		}
		t.remember(key, mask)
	}
	copy(dst, mask.words)
	return mask.n
}

// tokenNeeds is the sorted set of need values the tokens allowed at s
// leave; ok is false when a step passed the tables' bounds. Held t.mu.
func (t *tables) tokenNeeds(v *Vocab, s int32, w *vocabView) (needs []int32, ok bool) {
	if _, ok := t.walkMask(v, s, w, -1, func(after int32) {
		n := t.need(after)
		if i, found := slices.BinarySearch(needs, n); !found {
			needs = slices.Insert(needs, i, n)
		}
	}); !ok {
		return nil, false
	}
	if t.states[s].end && len(v.eos) > 0 {
		if i, found := slices.BinarySearch(needs, 0); !found {
			needs = slices.Insert(needs, i, 0)
		}
	}
	return needs, true
}
