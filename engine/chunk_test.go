package engine

import (
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/model"
)

// chunky is the CPU backend with a preferred prefill batch.
type chunky struct {
	*cpu.Backend
	chunk int
}

func (c chunky) PrefillChunk() int { return c.chunk }

var _ model.PrefillChunker = chunky{}

// TestPrefillChunkDefault: without Options.PrefillChunk the engine takes
// the backend's model.PrefillChunker (128 for a backend without one, the
// option when set), and the greedy story of a 40-token prompt run in
// batches of 5 is the one run in a single batch.
func TestPrefillChunkDefault(t *testing.T) {
	const path = "../testdata/models/stories260K.gguf"
	var stories [][]int32
	for _, c := range []struct {
		b          model.Backend
		opt, chunk int
	}{{cpu.New(0), 0, 128}, {chunky{cpu.New(0), 5}, 0, 5}, {chunky{cpu.New(0), 5}, 9, 9}} {
		e, err := Load(path, c.b, LoadOptions{Options: Options{Context: 256, PrefillChunk: c.opt}})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.PrefillChunk(); got != c.chunk {
			t.Errorf("%T with option %d: chunk %d, want %d", c.b, c.opt, got, c.chunk)
		}
		prompt := make([]int32, 40)
		for i := range prompt {
			prompt[i] = int32(1 + (i*37)%400)
		}
		res := gen(t, e, &Request{Tokens: prompt, Params: greedy(12)})
		stories = append(stories, res.Tokens)
	}
	for i, s := range stories[1:] {
		if !slices.Equal(s, stories[0]) {
			t.Errorf("case %d: %v, one batch %v", i+1, s, stories[0])
		}
	}
}
