package engine

import (
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/golden"
)

// TestLongRoPEPrefillOnePass: a LongRoPE model's prompt prefilled in chunks
// takes the factor set of the whole prompt, as Hugging Face's one forward
// does: tiny-phi4mini (original context 256) given 300 ids in chunks of 7
// gives the first token of one 300-id pass (the long factors for every
// position), which differs from its chunks' own choice here (the short
// factors up to position 256).
func TestLongRoPEPrefillOnePass(t *testing.T) {
	e, err := Load("../testdata/phi3/models/tiny-phi4mini-q4_0.gguf", cpu.New(0), LoadOptions{Options: Options{Context: 320, PrefillChunk: 7}})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, 300)
	for i := range ids {
		ids[i] = int32((i*131 + 7) % 509)
	}
	m := e.Model
	V := m.Config.Vocab
	cache, err := m.NewCache(300)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Forward(cache, ids, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, V)
	if err := m.Backend().ReadF32(logits, row); err != nil {
		t.Fatal(err)
	}
	want := golden.Argmax(row)
	res := gen(t, e, &Request{Tokens: ids, Params: greedy(1)})
	if len(res.Tokens) != 1 || res.Tokens[0] != want {
		t.Errorf("tokens %v, want [%d] (one pass)", res.Tokens, want)
	}
	// The short factors over the first 256 positions give another row.
	if _, err := m.Forward(cache, ids[:256], 0, false); err != nil {
		t.Fatal(err)
	}
	logits, err = m.Forward(cache, ids[256:], 256, false)
	if err != nil {
		t.Fatal(err)
	}
	split := make([]float32, V)
	if err := m.Backend().ReadF32(logits, split); err != nil {
		t.Fatal(err)
	}
	if e, _ := golden.RowError(split, row); e < 1e-3 {
		t.Errorf("two passes differ from one by %.3g: the test cannot tell them apart", e)
	}
}
