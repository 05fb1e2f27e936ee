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
	"wasmllm/manifest"
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

// mix is the block types of one layer's matrices in a kquantModel.
type mix struct{ q, k, v, gate, up, down loader.DType }

// q4KM is llama-quantize's Q4_K_M on a "more bits" layer: attn_v and
// ffn_down Q6_K, the rest Q4_K.
var q4KM = mix{loader.Q4_K, loader.Q4_K, loader.Q6_K, loader.Q4_K, loader.Q4_K, loader.Q6_K}

// kquantModel writes a one-layer llama GGUF (D 256) whose matrices are in
// the types of mx, attn_output Q5_K and output Q6_K (Q4_K_M's, by
// default). Its vocabulary is tiny-llama3's.
func kquantModel(t *testing.T, mxs ...mix) string {
	t.Helper()
	mx := q4KM
	if len(mxs) > 0 {
		mx = mxs[0]
	}
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
		if d.BlockElems() == 256 {
			return &loader.Tensor{Name: name, DType: d, Shape: []int{rows, cols}, Data: kBlocks(r, d, rows*cols/256)}
		}
		f := make([]float32, rows*cols) // Q8_0, Q4_0: values of about ±0.1, as kBlocks'
		for i := range f {
			f[i] = float32(r.NormFloat64() * 0.05)
		}
		data, err := loader.Quantize(d, f)
		if err != nil {
			t.Fatal(err)
		}
		return &loader.Tensor{Name: name, DType: d, Shape: []int{rows, cols}, Data: data}
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
		k("blk.0.attn_q.weight", mx.q, 256, 256),
		k("blk.0.attn_k.weight", mx.k, 128, 256),
		k("blk.0.attn_v.weight", mx.v, 128, 256),
		k("blk.0.attn_output.weight", loader.Q5_K, 256, 256),
		norm("blk.0.ffn_norm.weight"),
		k("blk.0.ffn_gate.weight", mx.gate, 512, 256),
		k("blk.0.ffn_up.weight", mx.up, 512, 256),
		k("blk.0.ffn_down.weight", mx.down, 256, 512),
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

// TestKQuantModel converts a Q4_K_M-mixed model with -quant keep and q8:
// keep writes every K-quant as it is, the merged q/k/v of Q4_K q and k and
// a Q6_K v as two row blocks in their own types, with zero error, so the
// converted model's logits are the source's; q8's stay close.
func TestKQuantModel(t *testing.T) {
	in := kquantModel(t)
	src := sourceWeights(t, in)
	qkv := src.Tensors["blk.0.attn_qkv.weight"]
	if qkv.DType != loader.Mixed || len(qkv.Stack) != 2 || qkv.Stack[0].DType != loader.Q4_K || qkv.Stack[1].DType != loader.Q6_K ||
		qkv.Stack[0].Rows() != 384 || qkv.Stack[1].Rows() != 128 {
		t.Fatalf("Q4_K q, k and Q6_K v merged as %s %v, want a stack of Q4_K (384 rows) and Q6_K (128 rows)", qkv.DType, qkv.Shape)
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
			"token_embd.weight": "Q4_K", "blk.0.attn_qkv.weight#0": "Q4_K", "blk.0.attn_qkv.weight#1": "Q6_K", "blk.0.attn_output.weight": "Q5_K",
			"blk.0.ffn_gate_up.weight": "Q4_K", "blk.0.ffn_down.weight": "Q6_K", "output.weight": "Q6_K", "output_norm.weight": "F32",
		}, 0},
		{quantQ8, map[string]string{"token_embd.weight": "q8", "blk.0.attn_qkv.weight": "q8", "blk.0.ffn_gate_up.weight": "q8", "output.weight": "q8"}, 0.05},
	} {
		dir, r := convertTo(t, in, c.quant)
		seen := 0
		for _, s := range r.Tensors {
			if want, ok := c.layout[s.Name]; ok {
				seen++
				if s.Dst != want {
					t.Errorf("-quant %s: %s (%s) written as %s, want %s", c.quant, s.Name, s.Src, s.Dst, want)
				}
			}
			t.Logf("-quant %s: %-26s %4s -> %-3s relative rms %.3g", c.quant, s.Name, s.Src, s.Dst, s.RelRMS)
		}
		if seen != len(c.layout) {
			t.Errorf("-quant %s: %d of the %d tensors expected reported", c.quant, seen, len(c.layout))
		}
		if c.quant == quantKeep {
			if r.Total.MaxAbs != 0 || r.Total.RMS != 0 {
				t.Errorf("-quant keep: error over the model max abs %g, rms %g; want zero", r.Total.MaxAbs, r.Total.RMS)
			}
			checkStackedFolder(t, in, dir, "blk.0.attn_qkv.weight", "Q4_K", "Q6_K")
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

// checkStackedFolder checks the folder dir that -quant keep wrote from the
// GGUF in: name is a "mixed" entry whose row blocks have the types want,
// and the folder's weight bytes equal the GGUF's within 1%.
func checkStackedFolder(t *testing.T, in, dir, name string, want ...string) {
	t.Helper()
	m, err := manifest.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := m.Lookup(name)
	if !ok || ti.DType != "mixed" || len(ti.Stack) != len(want) {
		t.Fatalf("%s: manifest entry %+v, want a mixed tensor of %d row blocks", name, ti, len(want))
	}
	var sum int64
	for k, b := range ti.Stack {
		bi, _ := m.Lookup(b)
		if bi == nil || bi.DType != want[k] {
			t.Errorf("%s row block %d: %+v, want %s", name, k, bi, want[k])
			continue
		}
		sum += bi.Bytes
	}
	if sum != ti.Bytes {
		t.Errorf("%s: row blocks of %d bytes, the entry says %d", name, sum, ti.Bytes)
	}
	checkFolderBytes(t, in, m)
}

// checkFolderBytes checks that the weight bytes of the folder m that
// -quant keep wrote from the GGUF in are the GGUF's within 1%, and that
// nothing was widened to F32.
func checkFolderBytes(t *testing.T, in string, m *manifest.Manifest) {
	t.Helper()
	g, err := loader.ReadGGUF(in)
	if err != nil {
		t.Fatal(err)
	}
	var gguf, folder int64
	for _, x := range g.Tensors {
		gguf += x.Size
	}
	for _, x := range m.Tensors {
		if len(x.Stack) == 0 {
			folder += x.Bytes
		}
	}
	t.Logf("weight bytes: GGUF %d, folder %d (%.4f)", gguf, folder, float64(folder)/float64(gguf))
	if r := float64(folder) / float64(gguf); r < 0.99 || r > 1.01 {
		t.Errorf("folder's weight bytes %d are %.4f of the GGUF's %d, want within 1%%", folder, r, gguf)
	}
}

// TestKQuantMixes converts models in the type mixes llama-quantize makes
// (the _S/_M/_L K-quant mixes, and the Q8_0 and Q4_0 fallbacks beside
// K-quants) with -quant keep: every merge whose parts differ is stacked in
// its parts' layouts, nothing is widened to F32, the folder's bytes are the
// GGUF's within 1%, and its logits equal the source's on the CPU engine.
func TestKQuantMixes(t *testing.T) {
	for _, c := range []struct {
		name string
		mx   mix
		qkv  []string // the row blocks' types; nil: one type
		gu   []string
	}{
		{"q3_k_m", mix{loader.Q3_K, loader.Q3_K, loader.Q5_K, loader.Q3_K, loader.Q3_K, loader.Q4_K}, []string{"Q3_K", "Q5_K"}, nil},
		{"q2_k", mix{loader.Q2_K, loader.Q2_K, loader.Q3_K, loader.Q2_K, loader.Q2_K, loader.Q3_K}, []string{"Q2_K", "Q3_K"}, nil},
		{"q3_k_l", mix{loader.Q3_K, loader.Q3_K, loader.Q5_K, loader.Q3_K, loader.Q3_K, loader.Q5_K}, []string{"Q3_K", "Q5_K"}, nil},
		{"q5_k_m", mix{loader.Q5_K, loader.Q5_K, loader.Q6_K, loader.Q5_K, loader.Q5_K, loader.Q6_K}, []string{"Q5_K", "Q6_K"}, nil},
		{"q8_0 kv", mix{loader.Q4_K, loader.Q8_0, loader.Q8_0, loader.Q4_K, loader.Q4_K, loader.Q6_K}, []string{"Q4_K", "q8"}, nil},
		{"q4_0 gate", mix{loader.Q4_K, loader.Q4_K, loader.Q6_K, loader.Q4_0, loader.Q4_K, loader.Q6_K}, []string{"Q4_K", "Q6_K"}, []string{"q4", "Q4_K"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := kquantModel(t, c.mx)
			src := sourceWeights(t, in)
			dir, r := convertTo(t, in, quantKeep)
			for _, s := range r.Tensors {
				if s.Dst == "F32" && s.Src != "F32" {
					t.Errorf("%s (%s) widened to F32", s.Name, s.Src)
				}
			}
			for name, want := range map[string][]string{"blk.0.attn_qkv.weight": c.qkv, "blk.0.ffn_gate_up.weight": c.gu} {
				if want != nil {
					checkStackedFolder(t, in, dir, name, want...)
				}
			}
			w, _ := loadFolder(t, dir)
			ids := []int32{509, 17, 300, 42}
			a, b := forwardCPU(t, src, ids), forwardCPU(t, w, ids)
			if e := rowError(a, b); e > 1e-6 {
				t.Errorf("converted folder's logits differ from the GGUF's: row error %.3g", e)
			}
		})
	}
}

// forwardCPU is the logits of ids in one batch on the CPU engine.
func forwardCPU(t *testing.T, w *model.Weights, ids []int32) []float32 {
	t.Helper()
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
	if err := m.Backend().ReadF32(out, f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestKQuantGoldens converts each K-quant GGUF (Q2_K, Q3_K_M; llama,
// qwen3, qwen3moe) with -quant keep, wants zero error reported, the
// merges of parts in different types stacked and the folder's weight
// bytes the GGUF's, and runs the converted folder on the CPU against the
// exact golden. The llama and
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
	if testkit.Extended() { // every shared file: the three models in the five mixes
		for _, arch := range []string{"k-llama3", "k-qwen3", "k-qwen3moe"} {
			for _, mix := range []string{"q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k"} {
				if name := arch + "-" + mix; name != "k-qwen3-q2_k" && name != "k-llama3-q3_k_m" { // vendored
					cases = append(cases, kcase{name, true})
				}
			}
		}
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
				if s.Dst == "F32" && s.Src != "F32" {
					t.Errorf("%s (%s) widened to F32", s.Name, s.Src)
				}
			}
			t.Logf("kept as they are: %v; total max abs error %g", kept, r.Total.MaxAbs)
			if r.Total.MaxAbs != 0 || kept["Q2_K"]+kept["Q3_K"]+kept["Q4_K"]+kept["Q5_K"]+kept["Q6_K"] == 0 {
				t.Errorf("total max abs error %g, K-quants kept %v", r.Total.MaxAbs, kept)
			}
			m, err := manifest.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			stacked := 0
			for _, ti := range m.Tensors {
				if len(ti.Stack) > 0 {
					stacked++
				}
			}
			if stacked == 0 && !strings.HasSuffix(c.name, "q6_k") {
				t.Errorf("no stacked tensor: %s's mix gives its q/k/v parts of different types", c.name)
			}
			t.Logf("%d stacked tensors", stacked)
			checkFolderBytes(t, src, m)
			w, _ := loadFolder(t, dir)
			checkExact(t, w, golden.Read(t, want))
		})
	}
}
