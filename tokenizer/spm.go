package tokenizer

import "strings"

// spmModel is a SentencePiece-style vocabulary scored per token: llama.cpp's
// "llama" GGUF vocab, or llama2.c's tokenizer.bin.
type spmModel struct {
	toID    map[string]int32
	texts   []string
	scores  []float32
	byteTok [256]int32 // <0xNN> token of each byte, -1 if none
	unk     int32
	// addSpacePrefix puts a space before text that starts the input or
	// follows a special token.
	addSpacePrefix bool
	// llama2c selects llama2.c's algorithm: no '▁' escaping, characters
	// that are not tokens become byte tokens that never merge.
	llama2c bool
}

const spmSpace = "\u2581" // ▁

func (t *Tokenizer) encodeSPM(text string, specialAsText bool, out []int32) []int32 {
	prevSpecial := true
	t.added.split(text, false, specialAsText, func(seg string, id int32) {
		if id >= 0 {
			out = append(out, id)
			prevSpecial = true
			return
		}
		if t.spm.llama2c {
			out = t.spm.encodeLlama2C(seg, out)
		} else {
			out = t.spm.encode(seg, t.spm.addSpacePrefix && prevSpecial, out)
		}
		prevSpecial = false
	})
	return out
}

type spmItem struct {
	score       float32
	left, right int32
	size        int32
}

// before orders bigrams by score, highest first; among equal scores the
// leftmost pair comes first, as in llama.cpp's llm_bigram_spm comparator.
func (it spmItem) before(o spmItem) bool {
	return it.score > o.score || (it.score == o.score && it.left < o.left)
}

type spmHeap = heapOf[spmItem]

// utf8SeqLen is llama.cpp's unicode_len_utf8: the sequence length implied
// by a lead byte, with no validation.
func utf8SeqLen(c byte) int {
	switch c >> 4 {
	case 0xC, 0xD:
		return 2
	case 0xE:
		return 3
	case 0xF:
		return 4
	}
	return 1
}

// encode is llama.cpp's llm_tokenizer_spm_session: merge the best-scoring
// adjacent pair whose concatenation is a token until none is left, then
// emit each symbol as its token or as byte tokens.
func (m *spmModel) encode(text string, prefix bool, out []int32) []int32 {
	if prefix {
		text = " " + text
	}
	text = strings.ReplaceAll(text, " ", spmSpace)
	if text == "" {
		return out
	}
	// Symbols are spans [start[i], start[i]+n[i]) of text.
	var start, n, prev, next []int32
	for off := 0; off < len(text); {
		l := min(utf8SeqLen(text[off]), len(text)-off)
		i := int32(len(start))
		start = append(start, int32(off))
		n = append(n, int32(l))
		prev = append(prev, i-1)
		next = append(next, i+1)
		off += l
	}
	next[len(next)-1] = -1
	var h spmHeap
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		s := text[start[l] : start[r]+n[r]]
		id, ok := m.toID[s]
		if !ok {
			return
		}
		h.push(spmItem{m.scores[id], l, r, int32(len(s))})
	}
	for i := int32(1); i < int32(len(start)); i++ {
		try(i-1, i)
	}
	for len(h) > 0 {
		b := h.pop()
		if n[b.left] == 0 || n[b.right] == 0 || n[b.left]+n[b.right] != b.size {
			continue
		}
		n[b.left] += n[b.right]
		n[b.right] = 0
		next[b.left] = next[b.right]
		if nr := next[b.right]; nr >= 0 {
			prev[nr] = b.left
		}
		try(prev[b.left], b.left)
		try(b.left, next[b.left])
	}
	for i := int32(0); i >= 0; i = next[i] {
		s := text[start[i] : start[i]+n[i]]
		if id, ok := m.toID[s]; ok {
			out = append(out, id)
			continue
		}
		for k := 0; k < len(s); k++ {
			out = append(out, m.byteToken(s[k]))
		}
	}
	return out
}

// byteToken is llama.cpp's byte_to_token: <0xNN>, else the byte as a
// one-character token, else unk.
func (m *spmModel) byteToken(b byte) int32 {
	if id := m.byteTok[b]; id >= 0 {
		return id
	}
	if id, ok := m.toID[string([]byte{b})]; ok {
		return id
	}
	return m.unk
}

// encodeLlama2C is run.c's encode: a dummy-prefix space, one token per
// character (or byte tokens), then repeatedly merge the adjacent pair whose
// concatenated strings form the best-scoring token, leftmost on ties.
func (m *spmModel) encodeLlama2C(text string, out []int32) []int32 {
	if text == "" {
		return out
	}
	var ids []int32
	if id, ok := m.toID[" "]; ok {
		ids = append(ids, id)
	}
	for i := 0; i < len(text); {
		j := i + 1
		for j < len(text) && j-i < 4 && text[j]&0xC0 == 0x80 {
			j++
		}
		if id, ok := m.toID[text[i:j]]; ok {
			ids = append(ids, id)
		} else {
			for k := i; k < j; k++ {
				ids = append(ids, m.byteToken(text[k]))
			}
		}
		i = j
	}
	if len(ids) == 0 {
		return out
	}
	nsym := len(ids)
	prev, next := make([]int32, nsym), make([]int32, nsym)
	for i := range ids {
		prev[i], next[i] = int32(i-1), int32(i+1)
	}
	next[nsym-1] = -1
	var h spmHeap
	var buf []byte
	// size carries the merged token id so that stale entries are detected.
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		buf = append(append(buf[:0], m.texts[ids[l]]...), m.texts[ids[r]]...)
		id, ok := m.toID[string(buf)]
		if !ok || m.scores[id] <= -1e10 {
			return
		}
		h.push(spmItem{m.scores[id], l, r, id})
	}
	for i := int32(1); i < int32(nsym); i++ {
		try(i-1, i)
	}
	for len(h) > 0 {
		b := h.pop()
		if ids[b.left] < 0 || next[b.left] != b.right || ids[b.right] < 0 {
			continue
		}
		buf = append(append(buf[:0], m.texts[ids[b.left]]...), m.texts[ids[b.right]]...)
		if id, ok := m.toID[string(buf)]; !ok || id != b.size {
			continue
		}
		ids[b.left] = b.size
		ids[b.right] = -1
		next[b.left] = next[b.right]
		if nr := next[b.right]; nr >= 0 {
			prev[nr] = b.left
		}
		try(prev[b.left], b.left)
		try(b.left, next[b.left])
	}
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}
