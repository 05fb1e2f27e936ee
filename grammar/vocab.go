package grammar

import (
	"bytes"
	"fmt"
	"math/bits"
	"slices"
)

// Vocab is a tokenizer's vocabulary as the grammar sees it: the bytes each
// token adds to the text. Build it once per tokenizer and share it.
type Vocab struct {
	n     int
	eos   []int32
	isEOS []bool
	views [2]vocabView // [0] after the first byte, [1] for the first token
	strip bool
}

// vocabView is the tokens' bytes sorted, with each one's common prefix
// length with the one before.
type vocabView struct {
	toks  [][]byte
	order []int32
	lcp   []int32
}

// NewVocab builds the grammar's view of a vocabulary of n tokens. token
// gives each token's bytes, nil for a token the text can never contain
// (special and control tokens: their text is not part of the output); eos
// are the tokens that end generation. stripLeadingSpace is SentencePiece's
// decoder rule that drops the first token's leading space: the first
// token is then matched without it.
func NewVocab(n int, token func(id int32) []byte, eos []int32, stripLeadingSpace bool) *Vocab {
	v := &Vocab{n: n, isEOS: make([]bool, n), strip: stripLeadingSpace}
	for _, id := range eos {
		if id >= 0 && int(id) < n && !v.isEOS[id] {
			v.isEOS[id] = true
			v.eos = append(v.eos, id)
		}
	}
	toks := make([][]byte, n)
	for id := range n {
		if v.isEOS[id] {
			continue
		}
		if b := token(int32(id)); len(b) > 0 {
			toks[id] = b
		}
	}
	v.views[0] = newView(toks)
	if stripLeadingSpace {
		first := make([][]byte, n)
		for id, b := range toks {
			if len(b) > 0 && b[0] == ' ' {
				b = b[1:]
			}
			if len(b) > 0 {
				first[id] = b
			}
		}
		v.views[1] = newView(first)
	} else {
		v.views[1] = v.views[0]
	}
	return v
}

func newView(toks [][]byte) vocabView {
	w := vocabView{toks: toks}
	for id, b := range toks {
		if b != nil {
			w.order = append(w.order, int32(id))
		}
	}
	slices.SortFunc(w.order, func(a, b int32) int { return bytes.Compare(toks[a], toks[b]) })
	w.lcp = make([]int32, len(w.order))
	for i := 1; i < len(w.order); i++ {
		a, b := toks[w.order[i-1]], toks[w.order[i]]
		k := 0
		for k < len(a) && k < len(b) && a[k] == b[k] {
			k++
		}
		w.lcp[i] = int32(k)
	}
	return w
}

// Size is the number of tokens, the mask's bits.
func (v *Vocab) Size() int { return v.n }

// MaskWords is the length in uint32 words of a mask over v.
func (v *Vocab) MaskWords() int { return (v.n + 31) / 32 }

func (v *Vocab) view(started bool) *vocabView {
	if !started && v.strip {
		return &v.views[1]
	}
	return &v.views[0]
}

// Mask writes into dst (MaskWords long) the tokens that may come next: bit
// id%32 of word id/32 is set for an allowed token. EOS is allowed exactly
// when the grammar may end. It returns the number of allowed tokens.
// A matcher stopped by a bound (Err) allows nothing.
func (m *Matcher) Mask(v *Vocab, dst []uint32) int {
	clear(dst)
	if m.ended || m.err != nil {
		return 0
	}
	t := m.t
	defer m.retireFailed()
	t.mu.Lock()
	defer t.mu.Unlock()
	key := maskKey{v: v, state: m.state, atStart: !m.started && v.strip, limit: -1}
	mask, ok := t.masks[key]
	if !ok {
		if mask, ok = t.walkMask(v, m.state, v.view(m.started), -1, nil); !ok {
			m.err = t.err
			return 0
		}
		t.remember(key, mask)
	}
	copy(dst, mask.words)
	return mask.n
}

// walkMask walks the sorted tokens from state s, sharing the work of
// common prefixes and skipping every token under a dead prefix. With
// limit >= 0 a token is allowed only when the state it leaves needs at
// most limit tokens to end (EOS needs none); visit, when set, sees the
// state each allowed token leaves. ok is false when a step passed the
// tables' bounds (t.err): the mask is then incomplete.
func (t *tables) walkMask(v *Vocab, s int32, w *vocabView, limit int32, visit func(after int32)) (mask cachedMask, ok bool) {
	words := make([]uint32, v.MaskWords())
	if t.states[s].end {
		for _, id := range v.eos {
			words[id>>5] |= 1 << (id & 31)
		}
	}
	if len(t.states[s].tops) == 0 {
		return countMask(words), true
	}
	var st []int32
	st = append(st, s)
	for i := 0; i < len(w.order); {
		id := w.order[i]
		tok := w.toks[id]
		d := int(w.lcp[i])
		if d >= len(st) {
			d = len(st) - 1
		}
		st = st[:d+1]
		for d < len(tok) {
			nx := t.step(st[d], tok[d])
			if nx == failState {
				return cachedMask{}, false
			}
			if nx == deadState {
				break
			}
			st = append(st, nx)
			d++
		}
		if d == len(tok) {
			if limit < 0 || t.need(st[d]) <= limit {
				words[id>>5] |= 1 << (id & 31)
				if visit != nil {
					visit(st[d])
				}
			}
			i++
			continue
		}
		// tok[:d+1] is dead: so is every following token that shares it.
		for i++; i < len(w.order) && int(w.lcp[i]) > d; i++ {
		}
	}
	return countMask(words), true
}

// cachedMask is a state's mask and how many tokens it allows.
type cachedMask struct {
	words []uint32
	n     int
}

func countMask(words []uint32) cachedMask {
	n := 0
	for _, w := range words {
		n += bits.OnesCount32(w)
	}
	return cachedMask{words, n}
}

// remember caches a mask, dropping the oldest past the memory bound.
func (t *tables) remember(k maskKey, mask cachedMask) {
	t.masks[k] = mask
	t.maskOrder = append(t.maskOrder, k)
	t.maskBytes += 4 * len(mask.words)
	t.held.Add(int64(4 * len(mask.words)))
	for t.maskBytes > maxMaskBytes && len(t.maskOrder) > 1 {
		old := t.maskOrder[0]
		t.maskOrder = t.maskOrder[1:]
		t.maskBytes -= 4 * len(t.masks[old].words)
		t.held.Add(-int64(4 * len(t.masks[old].words)))
		delete(t.masks, old)
	}
}

// TokenError reports a token the grammar does not allow at this point.
type TokenError struct {
	ID   int32
	Text string
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("grammar: token %d (%q) does not continue the grammar", e.ID, e.Text)
}

// Allows reports whether token id may come next, without moving.
func (m *Matcher) Allows(v *Vocab, id int32) bool {
	return m.Clone().AcceptToken(v, id) == nil
}

// AcceptToken moves over token id's bytes (EOS: ends the matcher, allowed
// only when the grammar may end). A matcher stopped by a bound returns
// its Err.
func (m *Matcher) AcceptToken(v *Vocab, id int32) error {
	if m.err != nil {
		return m.err
	}
	if id < 0 || int(id) >= v.n {
		return &TokenError{ID: id}
	}
	if v.isEOS[id] {
		if m.ended || !m.CanEnd() {
			return &TokenError{ID: id, Text: "<eos>"}
		}
		m.ended = true
		return nil
	}
	b := v.view(m.started).toks[id]
	if b == nil || !m.acceptBytes(b) {
		if m.err != nil {
			return m.err
		}
		return &TokenError{ID: id, Text: string(v.views[0].toks[id])}
	}
	return nil
}

// Ended reports whether EOS was accepted.
func (m *Matcher) Ended() bool { return m.ended }
