package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// merge is one BPE merge rule: the rank (lower merges first) and the id of
// the merged token.
type merge struct{ rank, id int32 }

// bpeModel is byte-level BPE over raw bytes. Token strings are kept in their
// byte-level form elsewhere; here everything is ids.
type bpeModel struct {
	byteID       [256]int32       // token of each single byte, -1 if none
	merges       map[uint64]merge // key pairKey(left, right)
	rawID        map[string]int32 // raw bytes of each token -> id
	ignoreMerges bool             // emit a whole word that is a token as is
	// literal marks a SentencePiece-style vocabulary (no ByteLevel
	// pre-tokenizer): rawID maps the token strings themselves, a word is
	// split into characters, and a character that is not a token becomes
	// its <0xNN> byte tokens (byteFallback) or unk.
	literal      bool
	byteFallback bool
	fuseUnk      bool
	unk          int32      // unk_token, -1 if none
	fallback     [256]int32 // <0xNN> token of each byte, -1 if none
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeScratch is reusable working memory for encodeWord.
type bpeScratch struct {
	ids        []int32
	prev, next []int32
	heap       mergeHeap
}

// mergeItem is a candidate merge of the pair starting at symbol pos; key
// packs rank and position so that one comparison orders by both.
type mergeItem struct {
	key uint64 // rank<<32 | pos
	id  int32
}

func newMergeItem(rank, pos, id int32) mergeItem {
	return mergeItem{uint64(uint32(rank))<<32 | uint64(uint32(pos)), id}
}

func (it mergeItem) pos() int32 { return int32(uint32(it.key)) }

// addMerge adds the merge of tokens a and b into ab with the given rank.
// A pair merged twice is an error (Hugging Face would keep one silently).
func (m *bpeModel) addMerge(a, b, ab int32, rank int) error {
	k := pairKey(a, b)
	if prev, ok := m.merges[k]; ok {
		return fmt.Errorf("duplicate merge: the pair is merge %d already", prev.rank)
	}
	m.merges[k] = merge{int32(rank), ab}
	return nil
}

// before orders merges by rank, then position: the lowest-ranked pair
// merges first, the leftmost one among equals.
func (it mergeItem) before(o mergeItem) bool { return it.key < o.key }

type mergeHeap = heapOf[mergeItem]

// encodeWord appends the BPE tokens of one pre-tokenized word. Bytes with no
// token (byteID -1) are dropped, as Hugging Face does without unk_token.
// It runs in O(n log n) for a word of n bytes.
func (m *bpeModel) encodeWord(word string, sc *bpeScratch, out []int32) []int32 {
	if m.ignoreMerges || len(word) == 1 {
		if id, ok := m.rawID[word]; ok {
			return append(out, id)
		}
	}
	var ids []int32
	if m.literal {
		ids = m.literalSymbols(word, sc.ids[:0])
	} else {
		ids = sc.ids[:0]
		for i := 0; i < len(word); i++ {
			if id := m.byteID[word[i]]; id >= 0 {
				ids = append(ids, id)
			}
		}
	}
	n := len(ids)
	if n <= 1 {
		sc.ids = ids
		return append(out, ids...)
	}
	if n <= linearMergeMax {
		out = m.mergeLinear(ids, sc, out)
		sc.ids = ids
		return out
	}
	prev, next := grow(sc.prev, n), grow(sc.next, n)
	h := sc.heap[:0]
	for i := 0; i < n; i++ {
		prev[i] = int32(i - 1)
		next[i] = int32(i + 1)
		if i+1 < n {
			if mg, ok := m.merges[pairKey(ids[i], ids[i+1])]; ok {
				h.push(newMergeItem(mg.rank, int32(i), mg.id))
			}
		}
	}
	next[n-1] = -1
	for len(h) > 0 {
		it := h.pop()
		p := it.pos()
		if ids[p] < 0 || next[p] < 0 {
			continue
		}
		q := next[p]
		if mg, ok := m.merges[pairKey(ids[p], ids[q])]; !ok || mg.id != it.id {
			continue // stale entry: a neighbour changed since it was pushed
		}
		ids[p] = it.id
		ids[q] = -1
		next[p] = next[q]
		if nq := next[q]; nq >= 0 {
			prev[nq] = p
		}
		if pp := prev[p]; pp >= 0 {
			if mg, ok := m.merges[pairKey(ids[pp], ids[p])]; ok {
				h.push(newMergeItem(mg.rank, pp, mg.id))
			}
		}
		if nq := next[p]; nq >= 0 {
			if mg, ok := m.merges[pairKey(ids[p], ids[nq])]; ok {
				h.push(newMergeItem(mg.rank, p, mg.id))
			}
		}
	}
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	sc.ids, sc.prev, sc.next, sc.heap = ids, prev, next, h
	return out
}

// literalSymbols is Hugging Face's BPE merge_word start for a literal
// vocabulary: each character that is a token is a symbol; any other
// becomes its byte tokens when every one exists (byte_fallback), else unk
// (consecutive unks fused into one with fuse_unk), else it is dropped.
func (m *bpeModel) literalSymbols(word string, ids []int32) []int32 {
	lastUnk := false
	for i := 0; i < len(word); {
		_, n := utf8.DecodeRuneInString(word[i:])
		c := word[i : i+n]
		i += n
		if id, ok := m.rawID[c]; ok {
			ids = append(ids, id)
			lastUnk = false
			continue
		}
		if m.byteFallback {
			all := true
			for j := 0; j < len(c); j++ {
				if m.fallback[c[j]] < 0 {
					all = false
					break
				}
			}
			if all {
				for j := 0; j < len(c); j++ {
					ids = append(ids, m.fallback[c[j]])
				}
				lastUnk = false
				continue
			}
		}
		if m.unk >= 0 {
			if !(m.fuseUnk && lastUnk) {
				ids = append(ids, m.unk)
			}
			lastUnk = true
		}
	}
	return ids
}

// linearMergeMax is the word length (in symbols) up to which mergeLinear,
// quadratic but with no heap, is faster than the heap.
const linearMergeMax = 24

const noMerge = int32(1<<31 - 1)

// mergeLinear merges the symbols of a short word: it keeps the rank of
// every adjacent pair and rescans them for the lowest (leftmost on ties).
func (m *bpeModel) mergeLinear(ids []int32, sc *bpeScratch, out []int32) []int32 {
	n := len(ids)
	ranks, news := grow(sc.prev, n), grow(sc.next, n)
	sc.prev, sc.next = ranks, news
	pair := func(i int) {
		if mg, ok := m.merges[pairKey(ids[i], ids[i+1])]; ok {
			ranks[i], news[i] = mg.rank, mg.id
		} else {
			ranks[i] = noMerge
		}
	}
	for i := 0; i+1 < n; i++ {
		pair(i)
	}
	for n > 1 {
		best := 0
		for i := 1; i+1 < n; i++ {
			if ranks[i] < ranks[best] {
				best = i
			}
		}
		if ranks[best] == noMerge {
			break
		}
		ids[best] = news[best]
		copy(ids[best+1:], ids[best+2:n])
		copy(ranks[best+1:], ranks[best+2:n])
		copy(news[best+1:], news[best+2:n])
		n--
		if best > 0 {
			pair(best - 1)
		}
		if best+1 < n {
			pair(best)
		}
	}
	return append(out, ids[:n]...)
}

func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
