package tokenizer

import (
	"fmt"
	"strings"

	"wasmllm/loader"
)

// ggufGemma4 reads a GGUF vocabulary of tokenizer model "gemma4" (what
// llama.cpp's converter writes for Gemma 4): BPE over the raw UTF-8 of
// SentencePiece-style pieces ('▁' for a space; no GPT-2 byte mapping),
// the merges in rank order, spaces replaced by '▁' first, the text split
// only at newlines, and <0xNN> byte tokens for what no piece covers. It
// is the model of Gemma 3's tokenizer.json (fromHF) read from a GGUF.
func (t *Tokenizer) ggufGemma4(m *ggufMeta, types []int32) error {
	t.kind = modelBPE
	t.normOps = []normOp{{from: " ", to: spmSpace, isReplace: true}}
	t.pre = []splitter{newlineSplitter{}}
	merges, ok := m.g.Meta["tokenizer.ggml.merges"].([]string)
	if !ok {
		m.fail("tokenizer.ggml.merges", fmt.Errorf("%w: missing or not a string array", loader.ErrCorrupt))
		return m.err
	}
	bpe := &bpeModel{rawID: make(map[string]int32, len(t.texts)), merges: make(map[uint64]merge, len(merges)),
		literal: true, byteFallback: true, unk: -1}
	t.bpe = bpe
	for b := range bpe.fallback {
		bpe.fallback[b] = -1
	}
	for i, s := range t.texts {
		switch types[i] {
		case ggufControl, ggufUserDefined, ggufUnknown:
			t.pieces[i] = s
			continue
		case ggufByte:
			if b, ok := parseByteToken(s); ok {
				t.pieces[i] = string([]byte{b})
				if bpe.fallback[b] < 0 {
					bpe.fallback[b] = int32(i)
				}
				continue
			}
		}
		bpe.rawID[s] = int32(i)
		t.pieces[i] = strings.ReplaceAll(s, spmSpace, " ")
	}
	if unk := m.id("tokenizer.ggml.unknown_token_id", len(t.texts)); unk >= 0 {
		bpe.unk = unk
	}
	for b := 0; b < 256; b++ {
		bpe.byteID[b] = bpe.unk
		if id, ok := bpe.rawID[string([]byte{byte(b)})]; ok {
			bpe.byteID[b] = id
		}
	}
	t.byteTokens = true
	for i, s := range merges {
		a, b, ok := strings.Cut(s, " ")
		ia, oka := bpe.rawID[a]
		ib, okb := bpe.rawID[b]
		im, okm := bpe.rawID[a+b]
		if !ok || !oka || !okb || !okm {
			m.fail(fmt.Sprintf("tokenizer.ggml.merges[%d]", i), fmt.Errorf("%w: merge %q is not two vocabulary pieces forming a third", loader.ErrCorrupt, s))
			return m.err
		}
		if err := bpe.addMerge(ia, ib, im, i); err != nil {
			m.fail(fmt.Sprintf("tokenizer.ggml.merges[%d]", i), fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
			return m.err
		}
	}
	return nil
}

// newlineSplitter cuts text into runs of newlines and runs of anything
// else (llama.cpp's gemma4 pre-tokenizer: BPE never merges across a
// newline boundary).
type newlineSplitter struct{}

func (newlineSplitter) split(s string, emit func(string)) error {
	for len(s) > 0 {
		nl := s[0] == '\n'
		i := 1
		for i < len(s) && (s[i] == '\n') == nl {
			i++
		}
		emit(s[:i])
		s = s[i:]
	}
	return nil
}
