package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"wasmllm/cmd/bench/internal/result"
	wconvert "wasmllm/convert"
	"wasmllm/cpu"
	"wasmllm/internal/testkit"
	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/synth"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

func testModel(name string) string { return browsertest.RepoFile("testdata/models/" + name) }

// Every prompt encodes to exactly its length, with each tokenizer kind.
func TestBuildPrompts(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "tiny-llama3-q4_0.gguf", "tiny-qwen3-q8_0.gguf"} {
		tok, err := ggufTokenizer(testModel(name))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := buildPrompts(tok, []int{16, 33, 128, 512}, 3)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range ps {
			seen := map[string]bool{}
			for i, text := range p.Texts {
				if got, err := tok.Encode(text, true); err != nil || len(got) != p.Len || !slices.Equal(got, p.IDs[i]) {
					t.Errorf("%s: prompt %d/%d encodes to %d tokens", name, p.Len, i, len(got))
				}
				if seen[text] {
					t.Errorf("%s: prompt %d repeats a text", name, p.Len)
				}
				seen[text] = true
			}
		}
	}
}

func TestBanNonASCII(t *testing.T) {
	tok, err := ggufTokenizer(testModel("tiny-llama3-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	bias := banNonASCII(tok)
	if len(bias) == 0 {
		t.Fatal("no token banned in a byte-level vocabulary")
	}
	for id := range int32(tok.VocabSize()) {
		s := tok.Decode([]int32{id})
		ascii := true
		for i := 0; i < len(s); i++ {
			ascii = ascii && s[i] < 0x80
		}
		if _, banned := bias[strings.TrimSpace(itoa(id))]; banned == ascii {
			t.Errorf("token %d (%q): banned %v", id, s, banned)
		}
	}
}

func itoa(i int32) string { b, _ := json.Marshal(i); return string(b) }

// A small model of the synthetic kind loads, tokenizes like its base and
// runs on the CPU backend.
func TestWriteSynthetic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "synth.gguf")
	base := testModel("tiny-llama3-q4_0.gguf")
	s := synth.Shape{Arch: "llama", Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 1024, DType: loader.Q4_0}
	if err := synth.Write(path, base, s); err != nil {
		t.Fatal(err)
	}
	g, err := loader.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	c := w.Config
	if c.Layers != 2 || c.Hidden != 64 || c.Heads != 4 || c.KVHeads != 2 || c.HeadDim != 16 || c.FFN != 128 || c.Vocab != 1024 || !c.TiedEmbeddings {
		t.Fatalf("config %+v", c)
	}
	tok, err := tokenizer.FromGGUF(g)
	if err != nil {
		t.Fatal(err)
	}
	baseTok, err := ggufTokenizer(base)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 1024 {
		t.Errorf("vocabulary of %d", tok.VocabSize())
	}
	ids, err := tok.Encode(corpus, true)
	if err != nil {
		t.Fatal(err)
	}
	if base, err := baseTok.Encode(corpus, true); err != nil || !slices.Equal(ids, base) {
		t.Error("the padded vocabulary tokenizes the corpus unlike its base")
	}
	m, err := model.Build(cpu.New(1), w)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := m.NewCache(32)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Forward(cache, ids[:8], 0, false)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, c.Vocab)
	if err := m.Backend().ReadF32(logits, row); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, v := range row {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("logit %v", v)
		}
		sum += math.Abs(float64(v))
	}
	if sum == 0 {
		t.Error("all logits are zero")
	}
}

// The ratios follow their definitions on a report built by hand.
func TestRatios(t *testing.T) {
	r := &Report{Prompts: []int{16, 128}, Headline: 128, Roofline: result.Roofline{ReadGBps: 10, FMAGFLOPs: 100},
		Kernels: []result.Kernel{{Name: "gemv_q4", Shape: "q4 N=8 K=256", Ratio: 0.5, Unit: "GB/s", Rate: 5},
			{Name: "gemv_q2_k", Shape: "Q2_K N=8 K=256", Ratio: 0.4, Unit: "GB/s", Rate: 4},
			{Name: "gemv_q8", Shape: "q8 N=8 K=512", Ratio: 0.6, Unit: "GB/s", Rate: 6}}, // no q4 twin
		Firefox: &result.Kernels{Roofline: result.Roofline{ReadGBps: 20},
			Kernels: []result.Kernel{{Name: "gemv_q4", Shape: "q4 N=8 K=256", Ratio: 0.25, Unit: "GB/s", Rate: 5},
				{Name: "gemv_q2_k", Shape: "Q2_K N=8 K=256", Ratio: 0.15, Unit: "GB/s", Rate: 3}}}}
	gpu := &EngineReport{Engine: engineGPU, WeightBytes: 3 << 30, ActiveBytes: 1e9, KVBytesPerPos: 1e6, LayerDispatches: []int{9, 11, 10}, Runs: []result.Run{
		{Prompt: 16, PrefillMs: 100, DecodeTokens: 10, DecodeMs: 1000},
		{Prompt: 128, PrefillMs: 400, DecodeTokens: 10, DecodeMs: 2000},
		{Prompt: 128, PrefillMs: 800, DecodeTokens: 10, DecodeMs: 4000},
		{Prompt: 128, PrefillMs: 200, DecodeTokens: 10, DecodeMs: 1000}}}
	peer := &EngineReport{Engine: enginePeer, Runs: []result.Run{{Prompt: 128, PrefillMs: 1600, DecodeTokens: 10, DecodeMs: 5000},
		{Prompt: 16, PrefillMs: 20, DecodeTokens: 10, DecodeMs: 1000}}}
	cpu := &EngineReport{Engine: engineCPU, Runs: []result.Run{{Prompt: 128, PrefillMs: 1600, DecodeTokens: 10, DecodeMs: 5000},
		{Prompt: 16, PrefillMs: 50, DecodeTokens: 10, DecodeMs: 2000}}}
	cpu.Extra = map[string]any{"ranks": 2}
	// one rank: 1.6x slower decode at 128 and 16, prefill 2x slower at 128, equal at 16
	cpu1 := &EngineReport{Engine: engineCPU1, Runs: []result.Run{{Prompt: 128, PrefillMs: 3200, DecodeTokens: 10, DecodeMs: 8000},
		{Prompt: 16, PrefillMs: 50, DecodeTokens: 10, DecodeMs: 3200}}}
	cpu1.fill()
	// natively: decode 2 and 10 tok/s at 16 and 128 against llama.cpp's 4
	// and 8; prefill 320 and 80 against 160 and 160
	nat := &EngineReport{Engine: engineNative, Runs: []result.Run{{Prompt: 16, PrefillMs: 50, DecodeTokens: 10, DecodeMs: 5000},
		{Prompt: 128, PrefillMs: 1600, DecodeTokens: 10, DecodeMs: 1000}}}
	llc := &EngineReport{Engine: engineLlamaCpp, Runs: []result.Run{{Prompt: 16, PrefillMs: 100, DecodeTokens: 10, DecodeMs: 2500},
		{Prompt: 128, PrefillMs: 800, DecodeTokens: 10, DecodeMs: 1250}}}
	nat.fill()
	llc.fill()
	one, most := 1.0, 0.9
	gpu.StepsAhead = &one
	ff := &EngineReport{Engine: engineFirefox, StepsAhead: &most, Runs: []result.Run{{Prompt: 128, PrefillMs: 100, DecodeTokens: 10, DecodeMs: 1000}}}
	gpu.fill()
	peer.fill()
	ff.fill()
	cpu.fill()
	r.Models = []*ModelReport{{Name: "Tiny-Model_q4", Decode: 10, Engines: []*EngineReport{gpu, ff, peer, cpu, cpu1, nat, llc}}}
	r.computeRatios()
	want := map[string]float64{
		// median decode at 128 is 5 tok/s; 1 GB + 1 MB × (128 + 5) a token
		"decode_bw_tiny_model_q4": (1e9 + 1e6*133) * 5 / 10e9,
		"kernel_gemv_q4":          0.5,
		"kernel_gemv_q2_k":        0.4,
		"kernel_gemv_q8":          0.6,
		// per weight byte: 4 GB/s against q4's 5 at the same shape, 3
		// against 5 in Firefox
		"kernel_gemv_q2_k_per_byte_vs_q4":         0.8,
		"kernel_firefox_gemv_q4":                  0.25,
		"kernel_firefox_gemv_q2_k":                0.15,
		"kernel_firefox_gemv_q2_k_per_byte_vs_q4": 0.6,
		"decode_vs_wllama_tiny_model_q4":          5.0 / 2,
		"prefill_vs_wllama_tiny_model_q4":         320.0 / 80,
		// the CPU engine: equal at 128, half wllama's decode and 0.4 of
		// its prefill at 16
		"decode_cpu_vs_wllama_tiny_model_q4":  0.5,
		"prefill_cpu_vs_wllama_tiny_model_q4": 0.4,
		// Firefox decodes 10 tok/s at 128 against Chromium's 5
		"decode_firefox_vs_chromium_tiny_model_q4": 10.0 / 5,
		// the most dispatches one layer recorded, on a dense model
		"dispatches_per_layer_dense": 11,
		// the lower of Chromium's and Firefox's
		"decode_submitted_ahead": 0.9,
		// 2 ranks over 1: the lowest over the prompt lengths
		"cpu_rank_speedup_2":         1.6,
		"cpu_rank_speedup_prefill_2": 1,
		// natively against llama.cpp: the lowest over the prompt lengths
		"decode_native_vs_llamacpp":  0.5,
		"prefill_native_vs_llamacpp": 0.5,
	}
	if len(r.Ratios) != len(want) {
		t.Errorf("ratios %v", r.Ratios)
	}
	for _, x := range r.Ratios {
		if w, ok := want[x.Name]; !ok || math.Abs(x.Value-w) > 1e-9*w {
			t.Errorf("ratio %s = %v, want %v", x.Name, x.Value, w)
		}
	}
	var txt strings.Builder
	r.writeText(&txt)
	for name := range want {
		if !strings.Contains(txt.String(), "\nratio "+name+" ") {
			t.Errorf("no ratio line for %s in\n%s", name, txt.String())
		}
	}
	if !strings.Contains(txt.String(), "\nkernels in Firefox (") || !strings.Contains(txt.String(), "0.400  0.80\n") ||
		!strings.Contains(txt.String(), "0.150  0.60\n") {
		t.Errorf("no per-byte column or no Firefox kernel table in\n%s", txt.String())
	}
	if !strings.Contains(txt.String(), "w bound/t") || !strings.Contains(txt.String(), "3.00 GiB  953.7 MiB") {
		t.Errorf("no weight bytes bound and read per token in\n%s", txt.String())
	}
	// a software adapter, as told by either browser's table (-engines
	// firefox runs Firefox's alone)
	if r.software() || !(&Report{Firefox: &result.Kernels{Adapter: result.Adapter{Fallback: true}}}).software() {
		t.Errorf("software adapter: %v with neither table on one", r.software())
	}
	var svg strings.Builder
	if err := r.writeChart(&svg); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal([]byte(svg.String()), new(struct{})); err != nil || strings.Count(svg.String(), `height="11" fill=`) != 7 {
		t.Errorf("chart: %v\n%s", err, svg.String())
	}
}

// TestProjections: a real shape's dispatches per decode token are the
// tiny model's per layer times its layers, plus the tiny model's others,
// plus the extra parts of a lm_head over the binding limit.
func TestProjections(t *testing.T) {
	r := &Report{Adapter: result.Adapter{MaxStorageBufferBindingSize: 1 << 30}}
	dense := &EngineReport{Engine: engineGPU, LayerDispatches: []int{7, 7, 7, 7}, PerToken: &result.PerToken{Dispatches: 32}}
	moe := &EngineReport{Engine: engineGPU, Experts: 8, LayerDispatches: []int{9, 9}, PerToken: &result.PerToken{Dispatches: 22}}
	r.Models = []*ModelReport{{Name: "tiny-llama3-q4_0", Engines: []*EngineReport{dense}}, {Name: "tiny-qwen3moe-q4_0", Engines: []*EngineReport{moe}}}
	got := map[string]int{}
	for _, p := range r.projections() {
		got[p.name] = p.dispatches
	}
	// 70B: its Q8 lm_head (1.117 GB) is two parts at a 1 GiB binding.
	want := map[string]int{"llama31_8b": 32*7 + 4, "qwen3_30b_a3b": 48*9 + 4, "deepseek_r1_distill_llama_70b": 80*7 + 4 + 1}
	if !maps.Equal(got, want) {
		t.Errorf("projections %v, want %v", got, want)
	}
}

// TestShapeRows: the shapes table's KV and state bytes, worked by hand
// from the published configs (f16 keys and values of the attention layers
// alone, f32 conv states of 3 × (2·S·n_k + S·n_v) and recurrent states of
// n_v × S × S per Gated DeltaNet layer), and the dispatches per layer
// kind from a run's layers.
func TestShapeRows(t *testing.T) {
	rows, err := shapeRows(tableShapes)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		deltaNet, attention int
		kvPerPos, state     int64
	}{
		// 28 attention layers × 8 KV heads × 128
		"Qwen3-1.7B": {0, 28, 2 * 28 * 8 * 128 * 2, 0},
		// 6 attention layers × 2 × 256; 18 DeltaNet layers, S 128, n_k 16, n_v 16
		"Qwen3.5-2B": {18, 6, 2 * 6 * 2 * 256 * 2, 18 * 4 * (3*(2*128*16+128*16) + 16*128*128)},
		// 10 attention layers × 2 × 256; 30 DeltaNet layers, n_v 32
		"Qwen3.5-35B-A3B": {30, 10, 2 * 10 * 2 * 256 * 2, 30 * 4 * (3*(2*128*16+128*32) + 32*128*128)},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		w, ok := want[r.Name]
		if !ok {
			t.Fatalf("row %q", r.Name)
		}
		if r.DeltaNetLayers != w.deltaNet || r.AttentionLayers != w.attention || r.KVBytesPerPos != w.kvPerPos || r.StateBytes != w.state {
			t.Errorf("%s: %d DeltaNet + %d attention layers, KV %d B/position, state %d B; want %+v", r.Name, r.DeltaNetLayers,
				r.AttentionLayers, r.KVBytesPerPos, r.StateBytes, w)
		}
		for i, n := range r.Contexts {
			if mem := w.kvPerPos*int64(n) + w.state; r.Memory[i] != mem || r.Read[i] != r.ReadPerToken+mem {
				t.Errorf("%s at %d: KV + state %d, read %d; want %d and weights + that", r.Name, n, r.Memory[i], r.Read[i], mem)
			}
		}
		t.Logf("%s: weights %s, read %s/token, KV+state %s at 4k, %s at 32k", r.Name, bytesText(r.WeightBytes),
			bytesText(r.ReadPerToken), bytesText(r.Memory[0]), bytesText(r.Memory[1]))
	}
	// Qwen3.5-2B reads less per token than its weights hold only by the
	// embedding's other rows; the MoE reads 8 + shared of 256 experts.
	two, moe := rows[1], rows[2]
	if two.ReadPerToken >= two.WeightBytes*11/10 || two.ReadPerToken <= two.WeightBytes*9/10 {
		t.Errorf("Qwen3.5-2B: reads %d of %d weight bytes a token", two.ReadPerToken, two.WeightBytes)
	}
	if moe.ReadPerToken*5 > moe.WeightBytes {
		t.Errorf("Qwen3.5-35B-A3B: reads %d of %d weight bytes a token", moe.ReadPerToken, moe.WeightBytes)
	}
	// A state does not grow: Qwen3.5-2B at 32k keeps less than Qwen3-1.7B at 4k.
	if two.Memory[1] >= rows[0].Memory[0] {
		t.Errorf("Qwen3.5-2B at 32k: %d bytes; Qwen3-1.7B at 4k: %d", two.Memory[1], rows[0].Memory[0])
	}

	// The dispatches: the synthetic model's run first, else the tiny one's.
	L, F := model.LayerLinearAttention, model.LayerFullAttention
	r := &Report{Shapes: rows, Models: []*ModelReport{
		{Name: "tiny-qwen3-q4_0", Engines: []*EngineReport{{Engine: engineGPU, LayerDispatches: []int{7, 7}}}},
		{Name: "tiny-qwen35-q4_0", Engines: []*EngineReport{{Engine: engineGPU, LayerDispatches: []int{6, 6, 6, 7}, LayerTypes: []string{L, L, L, F}}}},
		{Name: "tiny-qwen35moe-q4_0", Engines: []*EngineReport{{Engine: engineGPU, LayerDispatches: []int{10, 11}, LayerTypes: []string{L, F}}}},
		{Name: synthQwen35MoEName, Engines: []*EngineReport{{Engine: engineCPU}, {Engine: engineGPU, LayerDispatches: []int{10, 10, 10, 12}, LayerTypes: []string{L, L, L, F}}}},
	}}
	r.fillShapes()
	got := map[string]string{}
	for _, s := range r.Shapes {
		got[s.Name] = fmt.Sprintf("%v from %s", s.Dispatches, s.DispatchesFrom)
	}
	wantD := map[string]string{
		"Qwen3-1.7B":      "map[attention:7] from tiny-qwen3-q4_0",
		"Qwen3.5-2B":      "map[attention:7 deltanet:6] from tiny-qwen35-q4_0",
		"Qwen3.5-35B-A3B": "map[attention:12 deltanet:10] from " + synthQwen35MoEName,
	}
	if !maps.Equal(got, wantD) {
		t.Errorf("dispatches %v, want %v", got, wantD)
	}
	var txt strings.Builder
	r.writeShapes(&txt)
	for _, s := range []string{"Qwen3.5-2B", "18/6", "8 of 256 + shared", "kv+state 32k", synthQwen35MoEName} {
		if !strings.Contains(txt.String(), s) {
			t.Errorf("the table has no %q:\n%s", s, txt.String())
		}
	}
	t.Logf("\n%s", txt.String())
}

// TestHybridShapes: the synthetic Qwen3.5 models the bench writes are the
// real shapes cut in layers and experts only, with one period of layer
// kinds at least, and each is what the shapes table names for it.
func TestHybridShapes(t *testing.T) {
	for _, software := range []bool{false, true} {
		for _, s := range hybridShapes(software) {
			real := synth.Qwen35_2B
			if s.Experts > 0 {
				real = synth.Qwen35_35BA3B
			}
			cut := s
			cut.Layers, cut.Experts = real.Layers, real.Experts
			if !reflect.DeepEqual(cut, real) || s.Layers < 4 || s.Layers > real.Layers {
				t.Errorf("software %v: %+v is not %s cut", software, s, real.Name)
			}
			if !slices.Contains(measuredFor(real.Name), hybridName(s)) {
				t.Errorf("%s: its shapes row does not read %s", real.Name, hybridName(s))
			}
			c := s.Config()
			if c.AttentionLayers() == 0 || c.AttentionLayers() == c.Layers {
				t.Errorf("%s: %d attention layers of %d", hybridName(s), c.AttentionLayers(), c.Layers)
			}
		}
	}
}

// TestShortRun runs the whole bench in -short mode: stories260K on every
// engine in headless Chromium. It checks the outputs' shape, never a speed.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the engine and runs Chromium for minutes")
	}
	_, err := os.Stat(browsertest.Chromium())
	testkit.Need(t, err == nil, "no Chromium at %s (set WASMLLM_CHROMIUM)", browsertest.Chromium())
	ff := "off" // with Firefox, its kernel table too
	if _, err := os.Stat(browsertest.Firefox()); err == nil {
		ff = browsertest.Firefox()
	} else if testkit.CI() {
		t.Fatalf("CI=true, and no Firefox at %s: the Firefox kernel table would go unchecked", browsertest.Firefox())
	}
	o := options{Out: t.TempDir(), Short: true, Budget: 8 * time.Minute, Repeats: 1, Peer: "auto", Browser: browsertest.Chromium(), Firefox: ff}
	rep, err := run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeOutputs(rep, o.Out); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(o.Out, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Roofline.ReadGBps <= 0 || back.Roofline.FMAGFLOPs <= 0 || len(back.Kernels) != len(result.KernelNames(true)) {
		t.Errorf("roofline %+v, %d kernels", back.Roofline, len(back.Kernels))
	}
	if ff != "off" && (back.Firefox == nil || back.Firefox.Roofline.ReadGBps <= 0 || len(back.Firefox.Kernels) != len(result.KernelNames(true))) {
		t.Errorf("Firefox kernel table %+v", back.Firefox)
	}
	if len(back.Models) != 1 || back.Models[0].Name != "stories260K" {
		t.Fatalf("models %+v", back.Models)
	}
	m := back.Models[0]
	for _, name := range []string{engineGPU, engineCPU} {
		e := m.engine(name)
		if e == nil || e.Error != "" || len(e.Runs) == 0 {
			t.Fatalf("%s: %+v", name, e)
		}
		for _, r := range e.Runs {
			if r.DecodeTokens != m.Decode || r.PrefillMs <= 0 || r.DecodeMs <= 0 {
				t.Errorf("%s run %+v", name, r)
			}
		}
	}
	if pt := m.engine(engineGPU).PerToken; pt == nil || pt.Submits <= 0 || pt.Dispatches <= 0 {
		t.Errorf("webgpu per token: %+v", pt)
	}
	if m.Load == nil || m.Load.Error != "" || m.Load.Bytes <= 0 {
		t.Errorf("load: %+v", m.Load)
	}
	if len(back.Shapes) != len(tableShapes) {
		t.Errorf("shapes %+v", back.Shapes)
	}
	txt, _ := os.ReadFile(filepath.Join(o.Out, "bench.txt"))
	if !strings.Contains(string(txt), "\nshapes: ") || !strings.Contains(string(txt), "Qwen3.5-35B-A3B") {
		t.Errorf("bench.txt has no shapes table")
	}
	lines := []string{"ratio decode_bw_stories260k ", "ratio kernel_gemv_q4 ", "ratio kernel_gemv_q2_k_per_byte_vs_q4 "}
	if ff != "off" {
		lines = append(lines, "ratio kernel_firefox_gemv_q4 ", "ratio kernel_firefox_gemv_q2_k_per_byte_vs_q4 ")
	}
	if p := m.engine(enginePeer); p != nil {
		if p.Error != "" || len(p.Runs) == 0 {
			t.Errorf("wllama: %+v", p)
		}
		lines = append(lines, "ratio decode_vs_wllama_stories260k ", "ratio prefill_vs_wllama_stories260k ",
			"ratio decode_cpu_vs_wllama_stories260k ", "ratio prefill_cpu_vs_wllama_stories260k ")
	}
	for _, l := range lines {
		if !strings.Contains(string(txt), "\n"+l) {
			t.Errorf("no %q line in\n%s", l, txt)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(o.Out, rep.ChartFile)); err != nil || !strings.HasPrefix(string(svg), "<svg") {
		t.Errorf("chart: %v", err)
	}
}

func TestSummarizeSkips(t *testing.T) {
	got := summarizeSkips([]string{
		"prompt 512 run 1 skipped: about 9 s needed, 1 s left of the time budget",
		"no warm-up run of a 128-token chunk",
		"prompt 128 run 3 skipped: about 2 s needed, 1 s left of the time budget",
		"prompt 512 run 2 skipped: about 9 s needed, 1 s left of the time budget",
	}, func(int) int { return 3 })
	want := []string{"no warm-up run of a 128-token chunk",
		"runs skipped to keep within the time budget: 1 of 3 at prompt 128, 2 of 3 at prompt 512"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRerender: -render rewrites the text and chart of a kept bench.json
// without running anything, the same as the run wrote them.
func TestRerender(t *testing.T) {
	src := filepath.Join("results", "swiftshader-2cpu.json")
	out := t.TempDir()
	if err := rerender(src, out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, "bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("results", "swiftshader-2cpu.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("re-rendered bench.txt differs from cmd/bench/results/swiftshader-2cpu.txt:\n%s", got)
	}
	if err := rerender(filepath.Join(out, "missing.json"), out); err == nil {
		t.Error("a missing bench.json gave no error")
	}
}

// TestNative runs the native CPU engine's part of the bench on two tiny
// models: every prompt length and repeat gives a run with the decode
// length asked for.
func TestNative(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "tiny-qwen3moe-q4_0.gguf"} {
		m := &benchModel{name: name, gguf: testModel(name), decode: 5,
			prompts: []promptSet{{Len: 3, IDs: [][]int32{{1, 2, 3}}}, {Len: 9, IDs: [][]int32{{1, 2, 3, 4, 5, 6, 7, 8, 9}}}}}
		e := native(context.Background(), m, 2, 64, time.Minute)
		if e.Error != "" || len(e.Runs) != 4 || len(e.Decode) != 2 {
			t.Fatalf("%s: %+v", name, e)
		}
		for _, r := range e.Runs {
			if r.DecodeTokens != 5 || r.DecodeMs <= 0 || r.PrefillMs <= 0 {
				t.Errorf("%s: run %+v", name, r)
			}
		}
	}
}

// TestQ4KMBytes converts a small Llama in the Q4_K_M mix (8 layers: four
// with Q6_K v rows beside Q4_K q and k) with -quant keep: the folder's
// weight bytes per decode token equal the GGUF's (ratio
// q4_k_m_bytes_vs_gguf 1), the four mixed q/k/v are stacked, and widened
// to F32 they would cost more.
func TestQ4KMBytes(t *testing.T) {
	s := synth.Shape{Name: "Llama (small)", Arch: "llama", Layers: 8, Hidden: 256, Heads: 4, KVHeads: 2, HeadDim: 64, FFN: 512,
		Vocab: 1024, DType: loader.Q4_K, Mix: synth.MixQ4KM}
	dir := t.TempDir()
	path := filepath.Join(dir, "q4km.gguf")
	if err := synth.Write(path, "../../testdata/models/tiny-llama3-q4_0.gguf", s); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "folder")
	if _, err := wconvert.Convert(context.Background(), wconvert.Options{In: path, Out: out, Quant: wconvert.DefaultQuant}); err != nil {
		t.Fatal(err)
	}
	q := &Q4KMReport{}
	if err := q.measure(path, out); err != nil {
		t.Fatal(err)
	}
	t.Logf("GGUF %d, folder %d, widened %d bytes; %d stacked", q.GGUFBytes, q.FolderBytes, q.WidenedBytes, q.Stacked)
	if q.ratio() != 1 || q.Stacked != 4 || q.WidenedBytes <= q.FolderBytes {
		t.Errorf("ratio %.4f with %d stacked tensors (widened %d bytes against %d), want 1 with 4", q.ratio(), q.Stacked, q.WidenedBytes, q.FolderBytes)
	}
	rep := &Report{Q4KM: q}
	rep.computeRatios()
	found := false
	for _, x := range rep.Ratios {
		found = found || x.Name == "q4_k_m_bytes_vs_gguf" && x.Value == 1
	}
	if !found {
		t.Errorf("no ratio q4_k_m_bytes_vs_gguf 1 in %v", rep.Ratios)
	}
}

// TestKindDispatches: each layer kind's most dispatches over the models,
// from the tiny Gemma 4 MoE's and Gemma 3's configs (their converted
// manifests' kinds) and a WebGPU run's per-layer counts.
func TestKindDispatches(t *testing.T) {
	for _, c := range []struct {
		gguf string
		want []string
	}{
		{"../../testdata/gemma/models/tiny-gemma4moe-q4_0.gguf", []string{"local_moe", "global_moe", "local_moe", "global_moe"}},
		{"../../testdata/gemma/models/tiny-gemma4-q4_0.gguf", []string{"local_ple", "local_ple", "global_ple", "local_shared_kv_ple", "local_shared_kv_ple", "global_shared_kv_ple"}},
		{"../../testdata/gemma/models/tiny-gemma3-q4_0.gguf", []string{"local", "local", "local", "local", "local", "global"}},
	} {
		f, err := loader.ReadGGUF(c.gguf)
		if err != nil {
			t.Fatal(err)
		}
		w, err := model.FromGGUF(f)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(map[string]any{"config": w.Config})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "manifest.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := layerKinds(path)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: kinds %v, %v; want %v", c.gguf, got, err, c.want)
		}
	}
	r := &Report{Models: []*ModelReport{
		{Name: "a", LayerKinds: []string{"local", "local", "global"}, Engines: []*EngineReport{{Engine: engineGPU, LayerDispatches: []int{9, 10, 8}}}},
		{Name: "b", LayerKinds: []string{"local_moe", "global_moe"}, Engines: []*EngineReport{{Engine: engineGPU, LayerDispatches: []int{18, 18}}}},
		{Name: "c", LayerKinds: []string{"attention"}, Engines: []*EngineReport{{Engine: engineCPU}}},
	}}
	got := r.kindDispatches()
	want := []kindDispatch{{"global", 8}, {"global_moe", 18}, {"local", 10}, {"local_moe", 18}}
	if !slices.Equal(got, want) {
		t.Errorf("kind dispatches %v, want %v", got, want)
	}
}

// TestKVReport: the KV section measures stories260K's perplexity with each
// cache type (q8 within 0.5% of f32, issue 41) and the bytes at 32k
// (Llama-3.1-8B: 4 GiB in f16, 2.25 GiB in q8), and prints the ratio
// lines.
func TestKVReport(t *testing.T) {
	k, err := measureKV("../..")
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{KV: k}
	r.computeRatios()
	got := map[string]float64{}
	for _, x := range r.Ratios {
		got[x.Name] = x.Value
	}
	if v := got["perplexity_q8_vs_f32"]; v < 0.995 || v > 1.005 {
		t.Errorf("perplexity_q8_vs_f32 %v", v)
	}
	if v := got["kv_bytes_q8_vs_f16_llama_3_1_8b"]; v != 0.5625 {
		t.Errorf("kv_bytes_q8_vs_f16_llama_3_1_8b %v, want 0.5625", v)
	}
	if b := k.Bytes32k[0].Bytes; b["f16"] != 4<<30 || b["q8"] != 9<<28 {
		t.Errorf("Llama-3.1-8B at 32k: %v", b)
	}
	var txt strings.Builder
	r.writeText(&txt)
	for _, line := range []string{"\nratio perplexity_q8_vs_f32 ", "Llama-3.1-8B"} {
		if !strings.Contains(txt.String(), line) {
			t.Errorf("no %q in\n%s", line, txt.String())
		}
	}
	t.Logf("perplexity %v", k.Perplexity)
}
