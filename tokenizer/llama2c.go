package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"

	"wasmllm/loader"
)

// Ids fixed by llama2.c's tokenizer.bin layout.
const (
	llama2cUnk = 0
	llama2cBOS = 1
	llama2cEOS = 2
	// llama2cByte0 is the id of byte 0x00; byte b is llama2cByte0+b.
	llama2cByte0 = 3
)

// FromLlama2C reads llama2.c's tokenizer.bin (such as tok512.bin): an int32
// max token length, then per token a float32 score, an int32 length and the
// bytes. The file does not store its size: vocabSize comes from the model
// checkpoint header; vocabSize <= 0 reads tokens until the data ends.
func FromLlama2C(data []byte, vocabSize int) (*Tokenizer, error) {
	const file = "tokenizer.bin"
	fail := func(off int, field string, err error) error {
		return &loader.FormatError{File: file, Field: field, Offset: int64(off), Err: err}
	}
	if len(data) < 4 {
		return nil, fail(0, "max token length", loader.ErrTruncated)
	}
	maxLen := int32(binary.LittleEndian.Uint32(data))
	if maxLen < 0 {
		return nil, fail(0, "max token length", fmt.Errorf("%w: %d", loader.ErrCorrupt, maxLen))
	}
	// Every token takes at least 8 bytes.
	if vocabSize > (len(data)-4)/8 || vocabSize > maxVocab {
		return nil, fail(4, "vocabulary", fmt.Errorf("%w: %d tokens in %d bytes", loader.ErrTooLarge, vocabSize, len(data)))
	}
	var texts []string
	var scores []float32
	if vocabSize > 0 {
		texts = make([]string, 0, vocabSize)
		scores = make([]float32, 0, vocabSize)
	}
	off := 4
	for i := 0; vocabSize <= 0 && off < len(data) || i < vocabSize; i++ {
		field := fmt.Sprintf("token %d", i)
		if len(data)-off < 8 {
			return nil, fail(off, field, loader.ErrTruncated)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int32(binary.LittleEndian.Uint32(data[off+4:]))
		if n < 0 || int(n) > len(data)-off-8 {
			return nil, fail(off+4, field+" length", fmt.Errorf("%w: %d bytes", loader.ErrTruncated, n))
		}
		if math.IsNaN(float64(score)) {
			return nil, fail(off, field+" score", fmt.Errorf("%w: NaN", loader.ErrCorrupt))
		}
		texts = append(texts, string(data[off+8:off+8+int(n)]))
		scores = append(scores, score)
		off += 8 + int(n)
	}
	if len(texts) <= llama2cEOS {
		return nil, fail(off, "vocabulary", fmt.Errorf("%w: %d tokens", loader.ErrTruncated, len(texts)))
	}
	n := len(texts)
	t := &Tokenizer{
		kind:       modelLlama2C,
		texts:      texts,
		pieces:     make([]string, n),
		special:    make([]bool, n),
		bos:        llama2cBOS,
		eos:        []int32{llama2cEOS},
		prefix:     []int32{llama2cBOS},
		stripSpace: true,
	}
	s := &spmModel{toID: make(map[string]int32, n), texts: texts, scores: scores, unk: llama2cUnk, addSpacePrefix: true, llama2c: true}
	t.spm = s
	for i := n - 1; i >= 0; i-- {
		s.toID[texts[i]] = int32(i)
	}
	for b := 0; b < 256; b++ {
		s.byteTok[b] = -1
		if id := llama2cByte0 + b; id < n {
			s.byteTok[b] = int32(id)
		}
	}
	for i, tok := range texts {
		t.pieces[i] = tok
		if b, ok := parseByteToken(tok); ok {
			t.pieces[i] = string([]byte{b})
		}
	}
	for _, id := range []int{llama2cUnk, llama2cBOS, llama2cEOS} {
		t.special[id] = true
	}
	t.bosToken, t.hasBOSToken = texts[llama2cBOS], true
	t.eosToken, t.hasEOSToken = texts[llama2cEOS], true
	return t, nil
}
