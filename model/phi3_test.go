package model_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"wasmllm/cpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/internal/testkit/shareddata"
	"wasmllm/loader"
	"wasmllm/model"
)

const phi3Dir = "../testdata/phi3"

// buildPhi3 builds a phi3 golden's model on b, picking the LongRoPE
// factor set per cache as llama.cpp did for the goldens.
func buildPhi3(t *testing.T, b model.Backend, g *golden.File) *model.Model {
	t.Helper()
	m, err := model.Build(b, loadWeights(t, g.ModelPath()))
	if err != nil {
		t.Fatal(err)
	}
	m.LongRoPE = model.LongRoPEPerContext
	return m
}

// phi3Model is one entry of phi3_models.json (the shared set's record of
// every hyperparameter).
type phi3Model struct {
	File     string `json:"file"`
	LongRoPE struct {
		AttnFactorF32 float64   `json:"attn_factor_f32"`
		Short         []float32 `json:"short_factor"`
		Long          []float32 `json:"long_factor"`
	} `json:"longrope"`
}

// TestPhi3Config: tiny-phi4mini's GGUF gives Phi-4-mini's config (partial
// NEOX rotary over 24 of 32 dims, LongRoPE from 256 positions with the
// stored attention factor, GQA 4/2, tied embeddings, the sliding window
// ignored), its factor tensors are phi3_models.json's, and the fused
// attn_qkv and ffn_up are the canonical qkv and gate_up as they are.
func TestPhi3Config(t *testing.T) {
	path := phi3Dir + "/models/tiny-phi4mini-q4_0.gguf"
	g, err := loader.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	var models []phi3Model
	data, err := os.ReadFile(phi3Dir + "/models/phi3_models.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &models); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(models, func(m phi3Model) bool { return m.File == "tiny-phi4mini-f32.gguf" })
	if i < 0 {
		t.Fatal("phi3_models.json has no tiny-phi4mini")
	}
	rec := models[i]
	c := w.Config
	want := model.Config{Arch: model.ArchPhi3, Vocab: 512, Hidden: 128, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 256,
		RMSEps: c.RMSEps, RopeTheta: 1e4, RopeNeoX: true, RopeDim: 24, MaxContext: 8192, TiedEmbeddings: true,
		RopeScaling: &model.RopeScaling{Type: model.RopeLongRoPE, Factor: 32, OriginalMaxPositionEmbeddings: 256,
			AttentionFactor: rec.LongRoPE.AttnFactorF32}}
	if math.Abs(c.RMSEps-1e-5) > 1e-12 || c.RopeScaling == nil || *c.RopeScaling != *want.RopeScaling {
		t.Errorf("rms eps %v, rope scaling %+v, want %+v", c.RMSEps, c.RopeScaling, want.RopeScaling)
	}
	c.RopeScaling, want.RopeScaling = nil, nil
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("config %+v\nwant %+v", c, want)
	}
	for name, wantF := range map[string][]float32{model.NameRopeFactorsShort: rec.LongRoPE.Short, model.NameRopeFactorsLong: rec.LongRoPE.Long} {
		f, err := w.Tensors[name].F32()
		if err != nil || !slices.Equal(f, wantF) {
			t.Errorf("%s = %v (%v), want %v", name, f, err, wantF)
		}
	}
	for l := range w.Config.Layers {
		for canon, src := range map[string]string{model.NameQKV: "blk.%d.attn_qkv.weight", model.NameGateUp: "blk.%d.ffn_up.weight"} {
			got := w.Tensors[fmt.Sprintf(canon, l)]
			st, err := g.Tensor(fmt.Sprintf(src, l))
			if err != nil {
				t.Fatal(err)
			}
			if got.DType != st.DType || !slices.Equal(got.Shape, st.Shape) || string(got.Data) != string(st.Data) {
				t.Errorf("layer %d: %s is not %s as stored", l, canon, src)
			}
		}
	}
}

// phi3Goldens are the vendored exact goldens (tiny-phi4mini-q4_0: its
// 12-token prompt uses the short factors).
func phi3Goldens(t *testing.T) []*golden.File {
	files := golden.Files(t, phi3Dir+"/golden", "exact", true, false)
	if len(files) != 1 {
		t.Fatalf("%d exact phi3 goldens, want 1", len(files))
	}
	return files
}

// TestGoldenCPUPhi3 runs the vendored phi3 golden on the CPU engine, with
// the factor set chosen per cache (llama.cpp) and per pass (Hugging Face,
// the default): both pick the short factors for it.
func TestGoldenCPUPhi3(t *testing.T) {
	for _, g := range phi3Goldens(t) {
		t.Run(g.Name+"/per-context", func(t *testing.T) { checkGolden(t, buildPhi3(t, cpu.New(0), g), g, g.Tolerance) })
		t.Run(g.Name+"/per-pass", func(t *testing.T) {
			m := buildPhi3(t, cpu.New(0), g)
			m.LongRoPE = model.LongRoPEPerPass
			checkGolden(t, m, g, g.Tolerance)
		})
		t.Run(g.Name+"/ranks=2", func(t *testing.T) {
			checkGolden(t, buildPhi3(t, cpu.NewLocalRanks(cpu.RankOptions{Ranks: 2, MinShardBytes: 1}), g), g, g.Tolerance)
		})
	}
}

// TestGoldenCPUPhi3Native checks the llama.cpp-native golden of
// tiny-phi4mini-q4_0 loosely, as the README says.
func TestGoldenCPUPhi3Native(t *testing.T) {
	checkNative(t, golden.Files(t, phi3Dir+"/golden", "quantized-native", false, false), 1)
}

// TestGoldenCPUPhi3Shared runs every exact golden of the shared phi3 set
// (tiny-phi4mini and tiny-phi35mini in F32, Q8_0 and Q4_0, and the two
// 256-token goldens, whose 265-position caches take the long factors) and
// the four llama.cpp-native ones (make test-extended).
func TestGoldenCPUPhi3Shared(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-phi3"), "golden")
	files := golden.FilesJSON(t, dir, "exact", true, false)
	if len(files) != 8 {
		t.Fatalf("%d exact phi3 goldens, want 8", len(files))
	}
	for _, g := range files {
		t.Run(g.Name, func(t *testing.T) { checkGolden(t, buildPhi3(t, cpu.New(0), g), g, g.Tolerance) })
	}
	checkNative(t, golden.FilesJSON(t, dir, "quantized-native", false, false), 4)
}

// TestLongRoPEPerPassShared: Hugging Face's choice, per pass. The long
// golden's 256 prompt ids and its first greedy id run in one pass of 257
// positions (past original_max_position_embeddings 256: the long factors
// for every row) give the long golden's rows and its second greedy id; the 12-token golden in a
// cache of 512 positions still takes the short factors (make
// test-extended).
func TestLongRoPEPerPassShared(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t, "testdata-phi3"), "golden")
	for _, name := range []string{"tiny-phi4mini-f32", "tiny-phi35mini-f32"} {
		t.Run(name, func(t *testing.T) {
			g := golden.Read(t, filepath.Join(dir, name+".long.json"))
			m := buildPhi3(t, cpu.New(0), g)
			m.LongRoPE = model.LongRoPEPerPass
			ids := append(slices.Clone(g.Tokens), g.Greedy[0])
			rows := phi3Rows(t, m, ids, 512)
			V := m.Config.Vocab
			for r, want := range g.Logits {
				p := g.Position(r)
				if e, i := golden.RowError(rows[p*V:(p+1)*V], want); e > g.Tolerance {
					t.Errorf("row %d: error %.3g at %d", p, e, i)
				}
			}
			if id := golden.Argmax(rows[len(g.Tokens)*V:]); id != g.Greedy[1] {
				t.Errorf("row %d: argmax %d, want the second greedy id %d", len(g.Tokens), id, g.Greedy[1])
			}
			short := golden.Read(t, filepath.Join(dir, name+".json"))
			rows = phi3Rows(t, m, short.Tokens, 512)
			for r, want := range short.Logits {
				if e, i := golden.RowError(rows[r*V:(r+1)*V], want); e > short.Tolerance {
					t.Errorf("short row %d: error %.3g at %d", r, e, i)
				}
			}
		})
	}
}

// TestLongRoPESwitch: which factor set each mode picks, on the vendored
// model. In a cache of 512 positions the per-context mode takes the long
// factors, and the 12-token golden (short factors) is missed by far; the
// per-pass mode keeps the short ones until a pass ends past 256, so one
// pass of 300 ids equals the per-context mode's (long) and one of 256 the
// per-context mode's in a cache of 256 (short), row for row; a prompt
// prefilled in chunks with SetPassEnd is the one pass. LongRoPEShort and
// LongRoPELong keep their set whatever the cache.
func TestLongRoPESwitch(t *testing.T) {
	g := phi3Goldens(t)[0]
	perContext := buildPhi3(t, cpu.New(0), g)
	perPass := buildPhi3(t, cpu.New(0), g)
	perPass.LongRoPE = model.LongRoPEPerPass
	V := perPass.Config.Vocab

	rows := phi3Rows(t, perContext, g.Tokens, 512)
	worst := 0.0
	for r, want := range g.Logits {
		e, _ := golden.RowError(rows[r*V:(r+1)*V], want)
		worst = max(worst, e)
	}
	if worst < 0.05 {
		t.Errorf("long factors: worst row error %.3g against the short golden, want > 0.05", worst)
	}
	// The fixed modes: short in that cache gives the golden's rows, long
	// the per-context mode's.
	fixed := buildPhi3(t, cpu.New(0), g)
	fixed.LongRoPE = model.LongRoPEShort
	rowsShort := phi3Rows(t, fixed, g.Tokens, 512)
	for r, want := range g.Logits {
		if e, i := golden.RowError(rowsShort[r*V:(r+1)*V], want); e > g.Tolerance {
			t.Errorf("LongRoPEShort row %d: error %.3g at %d", r, e, i)
		}
	}
	fixed.LongRoPE = model.LongRoPELong
	if e, i := golden.RowError(phi3Rows(t, fixed, g.Tokens, 64), rows); e > 1e-6 {
		t.Errorf("LongRoPELong: error %.3g at %d against the per-context mode's long rows", e, i)
	}

	ids := make([]int32, 300)
	for i := range ids {
		ids[i] = int32((i*131 + 7) % 509)
	}
	same := func(what string, got, want []float32) {
		t.Helper()
		if e, i := golden.RowError(got, want); e > 1e-6 {
			t.Errorf("%s: error %.3g at %d", what, e, i)
		}
	}
	same("300 ids in one pass", phi3Rows(t, perPass, ids, 300), phi3Rows(t, perContext, ids, 512))
	same("256 ids in one pass", phi3Rows(t, perPass, ids[:256], 512), phi3Rows(t, perContext, ids[:256], 256))

	// A prompt in chunks of 128: with the pass's end, every chunk takes
	// the long factors, as the one pass does; without, the first two
	// chunks take the short ones.
	whole := phi3Rows(t, perPass, ids, 300)
	last := whole[299*V:]
	chunked := func(end int) []float32 {
		cache, err := perPass.NewCache(300)
		if err != nil {
			t.Fatal(err)
		}
		perPass.SetPassEnd(end)
		defer perPass.SetPassEnd(0)
		var logits model.Tensor
		for pos := 0; pos < 300; pos += 128 {
			n := min(128, 300-pos)
			if logits, err = perPass.Forward(cache, ids[pos:pos+n], pos, false); err != nil {
				t.Fatal(err)
			}
		}
		row := make([]float32, V)
		if err := perPass.Backend().ReadF32(logits, row); err != nil {
			t.Fatal(err)
		}
		return row
	}
	same("chunks of one pass", chunked(300), last)
	if e, _ := golden.RowError(chunked(0), last); e < 1e-3 {
		t.Errorf("chunks as separate passes: error %.3g, want the short factors' difference", e)
	}
}

// phi3Rows runs ids in one pass from position 0 in a cache of capacity
// positions and returns every row's logits.
func phi3Rows(t *testing.T, m *model.Model, ids []int32, capacity int) []float32 {
	t.Helper()
	cache, err := m.NewCache(capacity)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Forward(cache, ids, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(ids)*m.Config.Vocab)
	if err := m.Backend().ReadF32(logits, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkNative checks quantized-native goldens (want of them) as their
// README says: argmax agreement at 75% of the prompt positions, mean
// |diff| within 0.1 of each row's std.
func checkNative(t *testing.T, files []*golden.File, want int) {
	t.Helper()
	if len(files) != want {
		t.Fatalf("%d quantized-native goldens, want %d", len(files), want)
	}
	for _, g := range files {
		t.Run(g.Name, func(t *testing.T) {
			m := buildPhi3(t, cpu.New(0), g)
			all := phi3Rows(t, m, g.Tokens, len(g.Tokens))
			V := m.Config.Vocab
			agree := 0
			for r, want := range g.Logits {
				same, mean, std := golden.NativeMatch(all[r*V:(r+1)*V], want)
				if same {
					agree++
				}
				if mean > 0.1*std {
					t.Errorf("row %d: mean |diff| %.3g > 0.1 x std %.3g", r, mean, std)
				}
			}
			if 4*agree < 3*len(g.Logits) {
				t.Errorf("argmax agrees at %d of %d positions", agree, len(g.Logits))
			}
			t.Logf("argmax agreement %d/%d", agree, len(g.Logits))
		})
	}
}
