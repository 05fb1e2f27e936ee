package model_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// fuzzBases are real GGUFs of each family and weight kind: a dense Llama
// in q4_0, a Qwen3-MoE in q4_0, a Qwen3 whose weights are Q2_K to Q6_K.
var fuzzBases = []string{
	"../testdata/models/tiny-llama3-q4_0.gguf",
	"../testdata/models/tiny-qwen3moe-q4_0.gguf",
	"../testdata/k/models/k-qwen3-q2_k.gguf",
	"../testdata/phi3/models/tiny-phi4mini-q4_0.gguf", // phi3: LongRoPE's keys and factor tensors
}

type fuzzBase struct {
	version uint32
	meta    []loader.MetaKV
	tensors []*loader.Tensor
}

var (
	fuzzOnce  sync.Once
	fuzzFiles []fuzzBase
	fuzzErr   error
)

func fuzzLoad() ([]fuzzBase, error) {
	fuzzOnce.Do(func() {
		for _, p := range fuzzBases {
			g, err := loader.ReadGGUF(p)
			if err != nil {
				fuzzErr = err
				return
			}
			b := fuzzBase{version: g.Version, meta: g.MetaKVs()}
			for i := range g.Tensors {
				b.tensors = append(b.tensors, g.TensorAt(i))
			}
			fuzzFiles = append(fuzzFiles, b)
		}
	})
	return fuzzFiles, fuzzErr
}

// fuzzValue turns the fuzzer's bytes into a metadata value of one of the
// types a GGUF key holds.
func fuzzValue(v []byte) any {
	if len(v) == 0 {
		return uint32(0)
	}
	kind, v := v[0], v[1:]
	word := func() uint64 {
		var b [8]byte
		copy(b[:], v)
		return binary.LittleEndian.Uint64(b[:])
	}
	switch kind % 8 {
	case 0:
		return uint32(word())
	case 1:
		return int32(word())
	case 2:
		return math.Float32frombits(uint32(word()))
	case 3:
		return word()
	case 4:
		return string(v)
	case 5:
		var a []int32
		for i := 0; i+4 <= len(v) && len(a) < 64; i += 4 {
			a = append(a, int32(binary.LittleEndian.Uint32(v[i:])))
		}
		return a
	case 6:
		return strings.Fields(string(v))
	default:
		return kind&0x10 != 0
	}
}

// FuzzGGUFModel changes one metadata value or one tensor's shape of a real
// GGUF (or drops the key) and runs what a user's file goes through:
// loader.ParseGGUF, model.FromGGUF, Build on the CPU backend and a
// two-token forward. A hostile file must fail with an error naming the
// file (a *loader.FormatError from the parse and the config), never panic
// or run a forward on weights that do not fit the config.
func FuzzGGUFModel(f *testing.F) {
	bases, err := fuzzLoad()
	if err != nil {
		f.Fatal(err)
	}
	for which := range bases {
		f.Add(uint8(which), uint16(0), uint8(3), []byte{})        // unchanged
		f.Add(uint8(which), uint16(5), uint8(0), []byte{0, 7})    // a metadata integer
		f.Add(uint8(which), uint16(9), uint8(1), []byte{})        // a key dropped
		f.Add(uint8(which), uint16(2), uint8(2), []byte{1, 0})    // a tensor's dims swapped
		f.Add(uint8(which), uint16(4), uint8(0), []byte{4, 'x'})  // a string
		f.Add(uint8(which), uint16(7), uint8(0), []byte{2, 0, 0}) // a float
	}
	f.Fuzz(func(t *testing.T, which uint8, idx uint16, op uint8, val []byte) {
		b := bases[int(which)%len(bases)]
		meta := append([]loader.MetaKV(nil), b.meta...)
		tensors := append([]*loader.Tensor(nil), b.tensors...)
		switch op % 4 {
		case 0:
			i := int(idx) % len(meta)
			meta[i].Value = fuzzValue(val)
		case 1:
			i := int(idx) % len(meta)
			meta = append(meta[:i], meta[i+1:]...)
		case 2:
			i := int(idx) % len(tensors)
			c := *tensors[i]
			c.Shape = append([]int(nil), c.Shape...)
			if len(val) >= 2 && len(c.Shape) >= 2 {
				a, z := int(val[0])%len(c.Shape), int(val[1])%len(c.Shape)
				c.Shape[a], c.Shape[z] = c.Shape[z], c.Shape[a]
			} else {
				c.Shape = []int{int(c.NumElements())}
			}
			tensors[i] = &c
		}
		unchanged := op%4 == 3 // the real file: every step must pass
		var buf bytes.Buffer
		if err := loader.WriteGGUF(&buf, b.version, meta, tensors); err != nil {
			if unchanged {
				t.Fatal(err)
			}
			return // the writer refuses what no GGUF can hold
		}
		g, err := loader.ParseGGUF("fuzz.gguf", buf.Bytes())
		if err != nil {
			wantFuzzError(t, "ParseGGUF", err, unchanged)
			return
		}
		w, err := model.FromGGUF(g)
		if err != nil {
			wantFuzzError(t, "FromGGUF", err, unchanged)
			return
		}
		m, err := model.Build(cpu.New(0), w)
		if err != nil {
			if unchanged || !strings.Contains(err.Error(), "fuzz.gguf") {
				t.Fatalf("Build: %v", err)
			}
			return
		}
		c, err := m.NewCache(8)
		if err != nil {
			t.Fatalf("NewCache: %v", err)
		}
		ids := []int32{0, min(1, int32(w.Config.Vocab-1))}
		out, err := m.Forward(c, ids, 0, false)
		if err != nil {
			if unchanged {
				t.Fatalf("Forward: %v", err)
			}
			return
		}
		if unchanged {
			logits := make([]float32, w.Config.Vocab)
			if err := m.Backend().ReadF32(out, logits); err != nil {
				t.Fatal(err)
			}
			for i, v := range logits {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("logit %d of the unchanged file: %v", i, v)
				}
			}
		}
	})
}

// wantFuzzError checks err is a *loader.FormatError that names the file,
// and that the file was changed.
func wantFuzzError(t *testing.T, what string, err error, unchanged bool) {
	t.Helper()
	var fe *loader.FormatError
	if unchanged || !errors.As(err, &fe) || fe.File != "fuzz.gguf" || fe.Field == "" {
		t.Fatalf("%s: %v (%T), want a *loader.FormatError naming fuzz.gguf and a field", what, err, err)
	}
}
