package convert

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit"
	"wasmllm/internal/testkit/golden"
	"wasmllm/internal/testkit/shareddata"
	"wasmllm/loader"
	"wasmllm/model"
)

// kBlocks returns n random K-quant super-blocks of type d with values
// centred on zero, spread over about ±0.1 (scales and mins chosen so).
func kBlocks(r *rand.Rand, d loader.DType, n int) []byte {
	size := d.BlockBytes()
	out := make([]byte, n*size)
	// packK4 writes the 6-bit scales and mins of Q4_K/Q5_K (ggml's
	// get_scale_min_k4, inverted).
	packK4 := func(s []byte, sc, m [8]uint8) {
		for j := 0; j < 4; j++ {
			s[j] = sc[j] | (sc[j+4]>>4)<<6
			s[j+4] = m[j] | (m[j+4]>>4)<<6
			s[j+8] = sc[j+4]&0xf | (m[j+4]&0xf)<<4
		}
	}
	put := func(b []byte, v float32) { binary.LittleEndian.PutUint16(b, loader.F32ToF16(v)) }
	for b := 0; b < n; b++ {
		blk := out[b*size : (b+1)*size]
		for i := range blk {
			blk[i] = byte(r.IntN(256))
		}
		var sc [8]uint8
		for j := range sc {
			sc[j] = uint8(32 + r.IntN(32))
		}
		switch d {
		case loader.Q4_K: // x = (d*sc)*q - (dmin*m), q in 0..15; m = sc centres it
			put(blk, 1.4e-4)
			put(blk[2:], 7.5*1.4e-4)
			packK4(blk[4:16], sc, sc)
		case loader.Q5_K: // q in 0..31
			put(blk, 7e-5)
			put(blk[2:], 15.5*7e-5)
			packK4(blk[4:16], sc, sc)
		case loader.Q2_K: // x = (d*sc)*q - (dmin*m), q in 0..3, 4-bit sc and m
			for j := 0; j < 16; j++ {
				blk[j] = byte(8+r.IntN(8)) | byte(12+r.IntN(4))<<4
			}
			put(blk[80:], 2.5e-3)
			put(blk[82:], 2.5e-3)
		case loader.Q3_K: // x = (d*sc)*q, q in -4..3, sc 6-bit signed
			put(blk[108:], 7e-4)
		case loader.Q6_K: // x = (d*sc)*(q-32), int8 scales
			for j := 0; j < 16; j++ {
				blk[192+j] = sc[j%8]
			}
			put(blk[208:], 6.5e-5)
		}
	}
	return out
}

// TestKQuantEncode converts K-quant tensors: -quant keep writes the blocks
// as they are with zero error; -quant q4 and q8 re-quantise them, and the
// written values are Q4_0/Q8_0 math on the exactly dequantised source.
func TestKQuantEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		src        loader.DType
		quant      string
		dst        loader.DType
		relLo, rel float64
	}{
		{loader.Q4_K, quantKeep, loader.Q4_K, 0, 0}, {loader.Q5_K, quantKeep, loader.Q5_K, 0, 0}, {loader.Q6_K, quantKeep, loader.Q6_K, 0, 0},
		{loader.Q2_K, quantKeep, loader.Q2_K, 0, 0}, {loader.Q3_K, quantKeep, loader.Q3_K, 0, 0},
		{loader.Q4_K, quantQ4, loader.Q4, 0.02, 0.2}, {loader.Q5_K, quantQ8, loader.Q8, 1e-3, 0.02}, {loader.Q6_K, quantQ8, loader.Q8, 1e-3, 0.02},
	} {
		x := &loader.Tensor{Name: "blk.0.ffn_down.weight", DType: c.src, Shape: []int{64, 512}, Data: kBlocks(r, c.src, 128)}
		p, err := planTensor(c.quant, &model.Config{}, x, nil)
		lossless := c.rel == 0
		if err != nil || p.dst != c.dst || p.lossless != lossless {
			t.Fatalf("%s -quant %s: plan %+v %v, want %s (lossless %v)", c.src, c.quant, p, err, c.dst, lossless)
		}
		out, st, err := encodeTensor(t.Context(), "x", x, p, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		st.finish()
		t.Logf("%s -> %s: rms %.3g, max abs %.3g, relative rms %.3g", c.src, c.dst, st.RMS, st.MaxAbs, st.RelRMS)
		if lossless {
			if !bytes.Equal(out.Data, x.Data) || st.MaxAbs != 0 || st.RMS != 0 {
				t.Errorf("%s -quant keep: blocks changed or error %g reported, want them as they are", c.src, st.MaxAbs)
			}
			continue
		}
		src := f32(t, x)
		want, _ := loader.Quantize(blockType(c.dst), src)
		back, _ := loader.FromPlanar(out)
		if !bytes.Equal(back.Data, want) {
			t.Errorf("%s -> %s: blocks differ from %s of the dequantised source", c.src, c.dst, blockType(c.dst))
		}
		if st.RelRMS < c.relLo || st.RelRMS > c.rel {
			t.Errorf("%s -> %s: relative rms %.3g outside [%g, %g]", c.src, c.dst, st.RelRMS, c.relLo, c.rel)
		}
	}
}

// kquantModel writes a one-layer llama GGUF (D 256) whose matrices are
// K-quants as in a Q4_K_M file: attn_v, ffn_down and output Q6_K, attn_output
// Q5_K, the rest Q4_K. Its vocabulary is tiny-llama3's.
func kquantModel(t *testing.T) string {
	t.Helper()
	tiny, err := loader.ReadGGUF(filepath.Join(testdata, "models", "tiny-llama3-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	meta := []loader.MetaKV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "llama.embedding_length", Value: uint32(256)},
		{Key: "llama.block_count", Value: uint32(1)},
		{Key: "llama.attention.head_count", Value: uint32(2)},
		{Key: "llama.attention.head_count_kv", Value: uint32(1)},
		{Key: "llama.feed_forward_length", Value: uint32(512)},
		{Key: "llama.context_length", Value: uint32(256)},
		{Key: "llama.rope.freq_base", Value: float32(10000)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(1e-5)},
	}
	for _, kv := range tiny.MetaKVs() {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			meta = append(meta, kv)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	k := func(name string, d loader.DType, rows, cols int) *loader.Tensor {
		return &loader.Tensor{Name: name, DType: d, Shape: []int{rows, cols}, Data: kBlocks(r, d, rows*cols/256)}
	}
	norm := func(name string) *loader.Tensor {
		b := make([]byte, 4*256)
		for i := 0; i < 256; i++ {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(0.8+0.4*r.Float64())))
		}
		return &loader.Tensor{Name: name, DType: loader.F32, Shape: []int{256}, Data: b}
	}
	ts := []*loader.Tensor{
		k("token_embd.weight", loader.Q4_K, 512, 256),
		norm("blk.0.attn_norm.weight"),
		k("blk.0.attn_q.weight", loader.Q4_K, 256, 256),
		k("blk.0.attn_k.weight", loader.Q4_K, 128, 256),
		k("blk.0.attn_v.weight", loader.Q6_K, 128, 256),
		k("blk.0.attn_output.weight", loader.Q5_K, 256, 256),
		norm("blk.0.ffn_norm.weight"),
		k("blk.0.ffn_gate.weight", loader.Q4_K, 512, 256),
		k("blk.0.ffn_up.weight", loader.Q4_K, 512, 256),
		k("blk.0.ffn_down.weight", loader.Q6_K, 256, 512),
		norm("output_norm.weight"),
		k("output.weight", loader.Q6_K, 512, 256),
	}
	var buf bytes.Buffer
	if err := loader.WriteGGUF(&buf, 3, meta, ts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kquant.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestKQuantModel converts a K-quant model with -quant keep and q8: keep
// writes every K-quant as it is (a merge of Q4_K and Q6_K parts as F32)
// with zero error, so the converted model's logits are the source's; q8's
// stay close.
func TestKQuantModel(t *testing.T) {
	in := kquantModel(t)
	src := sourceWeights(t, in)
	if src.Tensors["blk.0.attn_qkv.weight"].DType != loader.F32 {
		t.Fatalf("mixed Q4_K/Q6_K merge is %s, expected package model to widen it", src.Tensors["blk.0.attn_qkv.weight"].DType)
	}
	ids := []int32{509, 17, 300, 42, 7, 480, 99, 256}
	logits := func(w *model.Weights) []float32 {
		m, err := model.Build(cpu.New(2), w)
		if err != nil {
			t.Fatal(err)
		}
		cache, _ := m.NewCache(len(ids))
		out, err := m.Forward(cache, ids, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		f := make([]float32, len(ids)*m.Config.Vocab)
		m.Backend().ReadF32(out, f)
		return f
	}
	want := logits(src)
	for _, c := range []struct {
		quant  string
		layout map[string]string
		maxErr float64
	}{
		{quantKeep, map[string]string{
			"token_embd.weight": "Q4_K", "blk.0.attn_qkv.weight": "F32", "blk.0.attn_output.weight": "Q5_K",
			"blk.0.ffn_gate_up.weight": "Q4_K", "blk.0.ffn_down.weight": "Q6_K", "output.weight": "Q6_K", "output_norm.weight": "F32",
		}, 0},
		{quantQ8, map[string]string{"token_embd.weight": "q8", "blk.0.ffn_gate_up.weight": "q8", "output.weight": "q8"}, 0.05},
	} {
		dir, r := convertTo(t, in, c.quant)
		for _, s := range r.Tensors {
			if want, ok := c.layout[s.Name]; ok && s.Dst != want {
				t.Errorf("-quant %s: %s (%s) written as %s, want %s", c.quant, s.Name, s.Src, s.Dst, want)
			}
			t.Logf("-quant %s: %-26s %4s -> %-3s relative rms %.3g", c.quant, s.Name, s.Src, s.Dst, s.RelRMS)
		}
		if c.quant == quantKeep && (r.Total.MaxAbs != 0 || r.Total.RMS != 0) {
			t.Errorf("-quant keep: error over the model max abs %g, rms %g; want zero", r.Total.MaxAbs, r.Total.RMS)
		}
		w, _ := loadFolder(t, dir)
		got := logits(w)
		V := w.Config.Vocab
		worst, agree := 0.0, 0
		for p := range ids {
			worst = math.Max(worst, rowError(got[p*V:(p+1)*V], want[p*V:(p+1)*V]))
			if argmax(got[p*V:(p+1)*V]) == argmax(want[p*V:(p+1)*V]) {
				agree++
			}
		}
		t.Logf("-quant %s: model relative rms %.3g, worst logits row error %.3g, argmax agrees at %d/%d positions", c.quant, r.Total.RelRMS, worst, agree, len(ids))
		if worst > c.maxErr {
			t.Errorf("-quant %s: worst logits row error %.3g > %g", c.quant, worst, c.maxErr)
		}
	}
}

// TestKQuantGoldens converts each K-quant GGUF (Q2_K, Q3_K_M; llama,
// qwen3, qwen3moe) with -quant keep, wants zero error reported, and runs
// the converted folder on the CPU against the exact golden. The llama and
// qwen3 files are vendored (testdata/k); the qwen3moe one (1.7 MB) is read
// from the shared data (internal/testkit/shareddata: testdata-k, the
// original of testdata/k) and runs in make test-extended
// (WASMLLM_EXTENDED=1) only.
func TestKQuantGoldens(t *testing.T) {
	type kcase struct {
		name   string
		shared bool
	}
	cases := []kcase{{"k-qwen3-q2_k", false}, {"k-llama3-q3_k_m", false}}
	if testkit.Extended() {
		cases = append(cases, kcase{"k-qwen3moe-q2_k", true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(testdata, "k", "models", c.name+".gguf")
			want := filepath.Join(testdata, "k", "golden", c.name+".golden")
			if c.shared {
				k := shareddata.Dir(t, "testdata-k")
				src = filepath.Join(k, "models", c.name+".gguf")
				want = filepath.Join(k, "golden", c.name+".json") // the original JSON form
			}
			dir, r := convertTo(t, src, quantKeep)
			kept := map[string]int{}
			for _, s := range r.Tensors {
				if !s.Lossless || s.MaxAbs != 0 {
					t.Errorf("%s: %s -> %s not lossless (max abs %g)", s.Name, s.Src, s.Dst, s.MaxAbs)
				}
				if s.Src == s.Dst {
					kept[s.Dst]++
				}
			}
			t.Logf("kept as they are: %v; total max abs error %g", kept, r.Total.MaxAbs)
			if r.Total.MaxAbs != 0 || kept["Q2_K"]+kept["Q3_K"] == 0 {
				t.Errorf("total max abs error %g, K-quants kept %v", r.Total.MaxAbs, kept)
			}
			w, _ := loadFolder(t, dir)
			checkExact(t, w, golden.Read(t, want))
		})
	}
}
