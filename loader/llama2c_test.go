package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLlama2CStories260K checks the llama2.c checkpoint against the official
// GGUF conversion of the same model: header values, and every tensor equal
// byte for byte under its GGUF name, Q and K included. Both formats keep Q/K
// in the interleaved-pairs RoPE layout (llama2.c's run.c and llama.cpp's
// LLAMA_ROPE_TYPE_NORM rotate adjacent pairs), so the relationship is the
// identity; the test also shows that llama.cpp's HF permutation would not be.
func TestLlama2CStories260K(t *testing.T) {
	m, err := ReadLlama2C(modelsDir + "stories260K.bin")
	if err != nil {
		t.Fatal(err)
	}
	want := Llama2CConfig{Dim: 64, HiddenDim: 172, Layers: 5, Heads: 8, KVHeads: 4, Vocab: 512, SeqLen: 512, SharedClassifier: true}
	if m.Config != want {
		t.Fatalf("config %+v, want %+v", m.Config, want)
	}
	g, err := ReadGGUF(modelsDir + "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tensors) != 2+9*5 {
		t.Errorf("%d tensors, want 47", len(m.Tensors))
	}
	for _, bt := range m.Tensors {
		gt, err := g.Tensor(bt.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(bt.Shape, gt.Shape) || !bytes.Equal(bt.Data, gt.Data) {
			t.Errorf("%s %v differs from the GGUF's %v", bt.Name, bt.Shape, gt.Shape)
		}
		if q, k := strings.HasSuffix(bt.Name, "attn_q.weight"), strings.HasSuffix(bt.Name, "attn_k.weight"); q || k {
			heads := m.Config.Heads
			if k {
				heads = m.Config.KVHeads
			}
			if bytes.Equal(permuteQK(bt.Data, bt.Rows(), bt.Cols()*4, heads), gt.Data) {
				t.Errorf("%s: llama.cpp's permutation also matches, so the test proves nothing", bt.Name)
			}
		}
	}
	// The classifier is shared: GGUF stores a copy of the embedding as output.weight.
	emb, _ := m.Tensor("token_embd.weight")
	out, err := g.Tensor("output.weight")
	if err != nil || !bytes.Equal(out.Data, emb.Data) {
		t.Errorf("GGUF output.weight is not the shared embedding (%v)", err)
	}
	if _, err := m.Tensor("output.weight"); !errors.Is(err, ErrNotFound) {
		t.Errorf("shared classifier: output.weight should be absent, got %v", err)
	}
}

// l2cFile builds a small llama2.c checkpoint whose float i is i, and the
// byte span of each part, for error tests.
type l2cPart struct {
	field      string
	start, end int
}

func l2cFile(dim, hidden, layers, heads, kv, vocab, seq int32) ([]byte, []l2cPart) {
	b := binary.LittleEndian.AppendUint32(nil, uint32(dim))
	for _, v := range []int32{hidden, layers, heads, kv, vocab, seq} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	v := int(vocab)
	if v < 0 {
		v = -v
	}
	d, h, l, hd := int(dim), int(hidden), int(layers), int(dim/heads)
	kvd := int(kv) * hd
	sizes := []struct {
		f string
		n int
	}{
		{"token_embedding", v * d}, {"rms_att_weight", l * d}, {"wq", l * d * d}, {"wk", l * kvd * d}, {"wv", l * kvd * d},
		{"wo", l * d * d}, {"rms_ffn_weight", l * d}, {"w1", l * h * d}, {"w2", l * d * h}, {"w3", l * h * d},
		{"rms_final_weight", d}, {"freq_cis_real", int(seq) * hd / 2}, {"freq_cis_imag", int(seq) * hd / 2},
	}
	if vocab < 0 {
		sizes = append(sizes, struct {
			f string
			n int
		}{"wcls", v * d})
	}
	var parts []l2cPart
	k := 0
	for _, s := range sizes {
		start := len(b)
		for i := 0; i < s.n; i++ {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(k)))
			k++
		}
		parts = append(parts, l2cPart{s.f, start, len(b)})
	}
	return b, parts
}

func TestLlama2CHandMade(t *testing.T) {
	data, parts := l2cFile(8, 6, 2, 2, 1, -5, 3)
	m, err := ParseLlama2C("x.bin", data)
	if err != nil {
		t.Fatal(err)
	}
	want := Llama2CConfig{Dim: 8, HiddenDim: 6, Layers: 2, Heads: 2, KVHeads: 1, Vocab: 5, SeqLen: 3}
	if m.Config != want || m.Config.HeadDim() != 4 {
		t.Fatalf("config %+v", m.Config)
	}
	// Float values count up from 0 through the file, so each tensor's first
	// value says where it starts: wk of layer 1 starts after the embedding
	// (40), rms_att (16), wq (128) and layer 0's wk (4*8 = 32).
	first := map[string]float32{
		"token_embd.weight": 0, "blk.0.attn_norm.weight": 40, "blk.1.attn_norm.weight": 48,
		"blk.0.attn_q.weight": 56, "blk.1.attn_k.weight": 40 + 16 + 128 + 32, "output_norm.weight": float32(parts[10].start-28) / 4,
		"output.weight": float32(parts[13].start-28) / 4, "blk.1.ffn_up.weight": float32(parts[9].start-28)/4 + 48,
	}
	shapes := map[string][]int{"blk.1.attn_k.weight": {4, 8}, "blk.0.ffn_down.weight": {8, 6}, "blk.0.ffn_gate.weight": {6, 8}, "output.weight": {5, 8}, "output_norm.weight": {8}}
	for name, v := range first {
		tt, err := m.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := tt.F32()
		if x[0] != v {
			t.Errorf("%s starts with %v, want %v", name, x[0], v)
		}
	}
	for name, s := range shapes {
		tt, _ := m.Tensor(name)
		if !cmp.Equal(tt.Shape, s) || tt.CheckSize() != nil {
			t.Errorf("%s shape %v, want %v", name, tt.Shape, s)
		}
	}
	if len(m.Tensors) != 3+2*9 {
		t.Errorf("%d tensors", len(m.Tensors))
	}
}

// TestLlama2CTruncated cuts the file at every byte: the error names the
// header value or tensor the cut falls in, at its offset.
func TestLlama2CTruncated(t *testing.T) {
	data, parts := l2cFile(8, 6, 2, 2, 1, -5, 3)
	for n := 0; n < len(data); n++ {
		_, err := ParseLlama2C("cut.bin", data[:n])
		field, at := "", 0
		if n < 28 {
			field, at = llama2cHeader[n/4], n/4*4
		} else {
			for _, p := range parts {
				if n < p.end {
					field, at = p.field, p.start
					break
				}
			}
		}
		wantFormatError(t, err, "cut.bin", field, int64(at), ErrTruncated)
	}
}

func TestLlama2CErrors(t *testing.T) {
	good, _ := l2cFile(8, 6, 2, 2, 1, 5, 3)
	set := func(i int, v int32) []byte {
		d := bytes.Clone(good)
		binary.LittleEndian.PutUint32(d[4*i:], uint32(v))
		return d
	}
	for _, c := range []struct {
		name  string
		data  []byte
		field string
		at    int64
		cause error
	}{
		{"zero dim", set(0, 0), "dim", 0, ErrCorrupt},
		{"negative hidden", set(1, -6), "hidden_dim", 4, ErrCorrupt},
		{"zero layers", set(2, 0), "n_layers", 8, ErrCorrupt},
		{"zero heads", set(3, 0), "n_heads", 12, ErrCorrupt},
		{"zero kv heads", set(4, 0), "n_kv_heads", 16, ErrCorrupt},
		{"zero vocab", set(5, 0), "vocab_size", 20, ErrCorrupt},
		{"min int vocab", set(5, math.MinInt32), "token_embedding", 28, ErrTruncated},
		{"zero seq_len", set(6, 0), "seq_len", 24, ErrCorrupt},
		{"dim not divisible", set(3, 3), "n_heads", 12, ErrCorrupt},
		{"odd head size", set(3, 8), "n_heads", 12, ErrCorrupt},
		{"kv not dividing", set(4, 3), "n_kv_heads", 16, ErrCorrupt},
		{"more kv than heads", set(4, 4), "n_kv_heads", 16, ErrCorrupt},
		{"absurd sizes", l2cHeader(1<<31-4, 1, 1, 2, 1, 1<<31-1, 1), "token_embedding", 28, ErrTooLarge},
		{"large sizes", l2cHeader(1<<20, 1, 1, 2, 1, 1<<20, 1), "token_embedding", 28, ErrTruncated},
		{"huge layers", append(l2cHeader(2, 1, 1<<31-1, 1, 1, 1, 1), make([]byte, 8)...), "rms_att_weight", 36, ErrTruncated},
		{"trailing bytes", append(bytes.Clone(good), 0, 0, 0, 0), "end of file", int64(len(good)), ErrCorrupt},
		{"versioned export", append([]byte("24ka"), good[4:]...), "magic", 0, ErrUnsupported},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseLlama2C("bad.bin", c.data)
			wantFormatError(t, err, "bad.bin", c.field, c.at, c.cause)
		})
	}
}

// l2cHeader is a bare llama2.c header.
func l2cHeader(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}
