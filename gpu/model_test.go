//go:build js

package gpu

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/gpu/webgpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
)

// Whole-model checks: every exact golden file of testdata/golden runs on the
// WebGPU backend and on the CPU backend, in the browser. The test files are
// read through wasmexec's file system.
//
//	WASMLLM_GOLDEN=qwen3moe   only the golden files whose name has this
//	WASMLLM_LONG=1            also the .long files (256-token prompts)

const goldenDir = "../testdata/golden"

// goldenDirs are the folders of exact goldens the GPU suite runs: the main
// set and the Qwen2 one (q/k/v biases).
var goldenDirs = []string{goldenDir, "../testdata/qwen2/golden"}

// exactGoldens returns the exact golden files to run.
func exactGoldens(t *testing.T) []*golden.File {
	t.Helper()
	long := os.Getenv("WASMLLM_LONG") == "1"
	filter := os.Getenv("WASMLLM_GOLDEN")
	var out []*golden.File
	for _, dir := range goldenDirs {
		for _, g := range golden.Files(t, dir, "exact", long, true) {
			if strings.Contains(g.Name, filter) {
				out = append(out, g)
			}
		}
	}
	if filter == "" && len(out) < 13 {
		t.Fatalf("found %d exact golden files in %v, want at least 13", len(out), goldenDirs)
	}
	return out
}

func goldenWeights(t testing.TB, g *golden.File) *model.Weights {
	t.Helper()
	f, err := loader.ReadGGUF(g.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var (
	modelOnce sync.Once
	modelB    *Backend
	modelErr  error
)

// modelBackend is one backend on the shared device for every whole-model
// test, so that kernels compile once.
func modelBackend(t testing.TB) *Backend {
	t.Helper()
	d := device(t)
	modelOnce.Do(func() { modelB, modelErr = NewBackend(d, sharedPipelines(d, BackendOptions{})) })
	if modelErr != nil {
		t.Fatal(modelErr)
	}
	return modelB
}

// freeModel releases a model's weights.
func freeModel(b model.Backend, m *model.Model) {
	seen := map[model.Tensor]bool{}
	free := func(ts ...model.Tensor) {
		for _, x := range ts {
			if x != nil && !seen[x] {
				seen[x] = true
				b.Free(x)
			}
		}
	}
	free(m.Embed, m.Norm, m.LMHead, m.PLEmbed, m.PLProj, m.PLNorm)
	for _, l := range m.Layers {
		if p := l.Post; p != nil {
			free(p.Gate, p.Out, p.PostNorm)
		}
		switch a := l.Mixer.(type) {
		case *model.Attention:
			free(a.Norm, a.QKV, a.Bias, a.QNorm, a.KNorm, a.Out, a.PostNorm, a.QKVNorm)
		case *model.DeltaNet:
			free(a.Norm, a.In, a.Conv, a.A, a.DtBias, a.GNorm, a.Out)
		}
		switch mlp := l.Channel.(type) {
		case *model.GatedMLP:
			free(mlp.Norm, mlp.GateUp, mlp.Down, mlp.PostNorm)
		case *model.MoE:
			free(mlp.Norm, mlp.Router, mlp.GateUp, mlp.Down, mlp.Shared.GateUp, mlp.Shared.Down, mlp.Shared.Gate)
		}
	}
}

// goldenRun is one model on one backend with its own cache.
type goldenRun struct {
	t     *testing.T
	m     *model.Model
	cache model.KVCache
	what  string
}

func newGoldenRun(t *testing.T, m *model.Model, capacity int, what string) *goldenRun {
	t.Helper()
	c, err := m.NewCache(capacity)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return &goldenRun{t: t, m: m, cache: c, what: what}
}

func (r *goldenRun) free() {
	if g, ok := r.m.Backend().(*Backend); ok {
		g.FreeKVCache(r.cache)
	}
}

// forward runs ids at pos and returns every position's logits, row by row.
func (r *goldenRun) forward(ids []int32, pos int) [][]float32 {
	r.t.Helper()
	V := r.m.Config.Vocab
	out, err := r.m.Forward(r.cache, ids, pos, true)
	if err != nil {
		r.t.Fatalf("%s: Forward(%d ids at %d): %v", r.what, len(ids), pos, err)
	}
	flat := make([]float32, len(ids)*V)
	if err := r.m.Backend().ReadF32(out, flat); err != nil {
		r.t.Fatalf("%s: reading logits of %d ids at %d: %v", r.what, len(ids), pos, err)
	}
	rows := make([][]float32, len(ids))
	for i := range rows {
		rows[i] = flat[i*V : (i+1)*V]
	}
	return rows
}

// forwardChunks runs ids from position 0 in batches of at most chunk tokens
// and returns every position's logits.
func (r *goldenRun) forwardChunks(ids []int32, chunk int) [][]float32 {
	r.t.Helper()
	var rows [][]float32
	for pos := 0; pos < len(ids); pos += chunk {
		rows = append(rows, r.forward(ids[pos:min(pos+chunk, len(ids))], pos)...)
	}
	return rows
}

// kvTolerance is the golden tolerance, ten times it when the cache keeps
// keys and values in f16 or its backend's prefill GEMM multiplies in f16
// (testdata/README.md).
func kvTolerance(tol float64, c model.KVCache) float64 {
	if h, ok := c.(*model.HybridCache); ok && h.KV != nil {
		c = h.KV
	}
	if kv, ok := c.(interface{ DType() loader.DType }); ok && kv.DType() == loader.F16 {
		return 10 * tol
	}
	if kc, ok := c.(*kvCache); ok && kc.b.tune.f16math {
		return 10 * tol
	}
	return tol
}

// rowChecker records the worst error of a comparison and reports rows over
// its tolerance.
type rowChecker struct {
	t     *testing.T
	what  string
	tol   float64
	worst float64
	bad   int
	rows  int
}

func (c *rowChecker) check(label string, got, want []float32) {
	c.t.Helper()
	if len(got) != len(want) {
		c.t.Fatalf("%s %s: %d logits, want %d", c.what, label, len(got), len(want))
	}
	e, i := golden.RowError(got, want)
	c.rows++
	c.worst = math.Max(c.worst, e)
	if e > c.tol {
		if c.bad++; c.bad <= 5 {
			c.t.Errorf("%s %s: error %.3g > %.3g at index %d: got %v want %v", c.what, label, e, c.tol, i, got[i], want[i])
		}
	}
}

func (c *rowChecker) log() {
	if c.rows == 0 {
		return
	}
	c.t.Logf("%-28s worst row error %.3g over %d rows (tolerance %.3g)", c.what, c.worst, c.rows, c.tol)
}

// TestModelGolden runs every exact golden on the GPU and the CPU backend:
// the prompt in one batch (logits at every position against the golden),
// then greedy decoding one token at a time (ids against the golden and the
// CPU, logits against the golden's greedy_logits and the CPU's); then, on
// the first golden of each model (see modelGoldens), the prompt again as two
// batches and token by token, whose logits must match the single batch's.
func TestModelGolden(t *testing.T) {
	start := time.Now()
	modelGoldens(t, modelBackend(t), exactGoldens(t))
	t.Logf("whole-model checks took %v", time.Since(start).Round(time.Millisecond))
}

// modelGoldens runs checkModelGolden for each golden, its model built on b
// and on the CPU backend, in a subtest each.
//
// Every golden gets the checks against llama.cpp and the CPU (the prompt in
// one batch, every greedy step). The consistency passes (the prompt and the
// greedy ids again as one batch, the prompt as two batches and token by
// token) run once per model (modelStem: tiny-llama3 for its f32, q4_0 and
// q8_0 files; stories260K for its two prompts), on the first of its files:
// they test the cache, RoPE and attention at positions > 0, kernels that
// are the same whatever the weights' type, while the weight type's own
// GEMV (T = 1) and GEMM (T > 1) are checked against the golden by the
// greedy steps and the prompt of every file, and at every shape class by
// backendtest's MatMul cases.
func modelGoldens(t *testing.T, b *Backend, files []*golden.File) {
	seen := map[string]bool{}
	for _, g := range files {
		stem := modelStem(g.Model)
		consistency := !seen[stem]
		seen[stem] = true
		t.Run(g.Name, func(t *testing.T) {
			gm, cm := goldenModels(t, b, goldenWeights(t, g))
			defer freeModel(b, gm)
			checkModelGoldenOf(t, gm, cm, g, 0, consistency)
		})
	}
}

// weightTypeSuffix is a model file's weight type at the end of its name.
var weightTypeSuffix = regexp.MustCompile(`-(f32|f16|bf16|q[0-9]_[0-9]|q[0-9]_k(_[sml])?)$`)

// modelStem is a golden's model file name without its folder, extension
// and weight type: the files of one model in several types share it.
func modelStem(model string) string {
	base := filepath.Base(model)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return weightTypeSuffix.ReplaceAllString(base, "")
}

// goldenModels builds w on b and on the CPU backend.
func goldenModels(t *testing.T, b *Backend, w *model.Weights) (gpuModel, cpuModel *model.Model) {
	t.Helper()
	gm, err := model.Build(b, w)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := model.Build(cpu.New(0), w)
	if err != nil {
		freeModel(b, gm)
		t.Fatal(err)
	}
	return gm, cm
}

// checkModelGolden checks one golden file with every pass; maxBatch, when
// set, bounds the tokens of one batch (the activations must fit the
// device's bindings).
func checkModelGolden(t *testing.T, gm, cm *model.Model, g *golden.File, maxBatch int) {
	t.Helper()
	checkModelGoldenOf(t, gm, cm, g, maxBatch, true)
}

// checkModelGoldenOf is checkModelGolden, with the consistency passes (the
// prompt and greedy ids as one batch, two batches, token by token) only
// when consistency is set.
func checkModelGoldenOf(t *testing.T, gm, cm *model.Model, g *golden.File, maxBatch int, consistency bool) {
	T := len(g.Tokens)
	capacity := T + len(g.Greedy) + 1
	gr := newGoldenRun(t, gm, capacity, "gpu")
	defer gr.free()
	cr := newGoldenRun(t, cm, capacity, "cpu")
	tol := kvTolerance(g.Tolerance, gr.cache)
	vsGolden := &rowChecker{t: t, what: "gpu vs golden", tol: tol}
	vsCPU := &rowChecker{t: t, what: "gpu vs cpu", tol: tol}
	defer vsCPU.log()
	defer vsGolden.log()

	gpuRows := gr.forward(g.Tokens, 0)
	cpuRows := cr.forward(g.Tokens, 0)
	for i, want := range g.Logits {
		vsGolden.check(fmt.Sprintf("prompt row %d", g.Position(i)), gpuRows[g.Position(i)], want)
	}
	for i := range gpuRows {
		vsCPU.check(fmt.Sprintf("prompt row %d", i), gpuRows[i], cpuRows[i])
	}

	var gotIDs, cpuIDs []int32
	var decoded [][]float32 // the GPU's logits after each greedy step
	grow, crow := gpuRows[T-1], cpuRows[T-1]
	for step := range g.Greedy {
		gid, cid := golden.Argmax(grow), golden.Argmax(crow)
		gotIDs, cpuIDs = append(gotIDs, gid), append(cpuIDs, cid)
		if gid != g.Greedy[step] || cid != gid {
			t.Fatalf("greedy step %d: gpu id %d, cpu id %d, golden %d (ids so far gpu %v cpu %v)", step, gid, cid, g.Greedy[step], gotIDs, cpuIDs)
		}
		if step == len(g.Greedy)-1 {
			break
		}
		grow = gr.forward([]int32{gid}, T+step)[0]
		crow = cr.forward([]int32{cid}, T+step)[0]
		decoded = append(decoded, grow)
		label := fmt.Sprintf("greedy step %d", step)
		if step < len(g.GreedyLogits) {
			vsGolden.check(label, grow, g.GreedyLogits[step])
		}
		vsCPU.check(label, grow, crow)
	}

	if !consistency {
		return
	}

	// The prompt and the greedy ids as one batch (or batches of maxBatch):
	// its rows at the decoded positions must match the decode steps' (and
	// the golden's), which tells a decode kernel's error from a prefill
	// kernel's.
	seq := append(slices.Clone(g.Tokens), gotIDs[:len(gotIDs)-1]...)
	if maxBatch <= 0 {
		maxBatch = len(seq)
	}
	fr := newGoldenRun(t, gm, len(seq), "gpu, prompt and greedy ids")
	full := fr.forwardChunks(seq, maxBatch)
	fr.free()
	batchVsDecode := &rowChecker{t: t, what: "batch vs decode", tol: tol}
	batchVsGolden := &rowChecker{t: t, what: "batch vs golden greedy", tol: tol}
	for step, row := range decoded {
		label := fmt.Sprintf("greedy step %d", step)
		batchVsDecode.check(label, full[T+step], row)
		if step < len(g.GreedyLogits) {
			batchVsGolden.check(label, full[T+step], g.GreedyLogits[step])
		}
	}
	batchVsDecode.log()
	batchVsGolden.log()

	// The same prompt as two batches (the second at a position > 0), then
	// token by token (on the .long files: a batch, then the last 8 tokens
	// one at a time). Both must give the single batch's logits.
	chunks := &rowChecker{t: t, what: "two batches vs one", tol: tol}
	singles := &rowChecker{t: t, what: "token by token vs batch", tol: tol}
	split := T / 2
	pr := newGoldenRun(t, gm, T, "gpu, two batches")
	rows := append(pr.forward(g.Tokens[:split], 0), pr.forward(g.Tokens[split:], split)...)
	pr.free()
	for i := range rows {
		chunks.check(fmt.Sprintf("row %d", i), rows[i], gpuRows[i])
	}
	chunks.log()
	dr := newGoldenRun(t, gm, T, "gpu, token by token")
	defer dr.free()
	first := 0
	if T > 16 {
		first = T - 8
		dr.forward(g.Tokens[:first], 0)
	}
	for i := first; i < T; i++ {
		singles.check(fmt.Sprintf("position %d", i), dr.forward(g.Tokens[i:i+1], i)[0], gpuRows[i])
	}
	singles.log()
}

// stepStats is one decode step's work: from one emitted token to the next.
type stepStats struct {
	dev           webgpu.Stats
	programBuilds int64
	readback      int64 // bytes the engine asked for
}

// TestModelEngine generates greedily through the engine on the GPU and on
// the CPU, and checks the GPU's per-step work: one submit (the next step,
// sent before this one's token is read: pipelined), one buffer map
// (the sampler's readback, whatever the model: none inside a Qwen3-MoE
// step), at most 4 bytes read back, and no program recorded after the first
// decode steps.
func TestModelEngine(t *testing.T) {
	b := modelBackend(t)
	for _, name := range []string{"stories260K", "tiny-llama3-q4_0", "tiny-qwen3-q8_0", "tiny-qwen3moe-q4_0", "tiny-qwen3moe-q8_0"} {
		t.Run(name, func(t *testing.T) {
			if f := os.Getenv("WASMLLM_GOLDEN"); !strings.Contains(name, f) {
				t.Skip("WASMLLM_GOLDEN")
			}
			g := golden.Read(t, filepath.Join(goldenDir, name+".golden"))
			path := filepath.Join(goldenDir, g.Model)
			opts := engine.LoadOptions{Options: engine.Options{Context: 64}}
			ge, err := engine.Load(path, b, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, ge.Model)
			ce, err := engine.Load(path, cpu.New(0), opts)
			if err != nil {
				t.Fatal(err)
			}
			p := sampler.DefaultParams()
			p.Temperature, p.MaxTokens, p.IgnoreEOS = 0, len(g.Greedy), true
			req := func() *engine.Request { return &engine.Request{Tokens: g.Tokens, Params: p} }

			var steps []stepStats
			d := b.Device()
			prevD, prevB, prevE := d.Stats(), b.Stats(), ge.Stats
			prevAhead := ge.Stats.StepsAhead
			wallStart := time.Now()
			var firstToken time.Duration
			res, err := ge.Generate(context.Background(), req(), func(engine.Token) error {
				if firstToken == 0 {
					firstToken = time.Since(wallStart)
				}
				nd, nb := d.Stats(), b.Stats()
				steps = append(steps, stepStats{dev: nd.Sub(prevD), programBuilds: nb.ProgramBuilds - prevB.ProgramBuilds,
					readback: ge.Stats.ReadbackBytes - prevE.ReadbackBytes})
				prevD, prevB, prevE = nd, nb, ge.Stats
				return nil
			})
			wall := time.Since(wallStart)
			if err != nil {
				t.Fatal(err)
			}
			checkTimings(t, res, wall, firstToken)
			cres, err := ce.Generate(context.Background(), req(), func(engine.Token) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens, cres.Tokens) || !slices.Equal(res.Tokens, g.Greedy) {
				t.Fatalf("greedy ids: gpu %v, cpu %v, golden %v", res.Tokens, cres.Tokens, g.Greedy)
			}
			if res.Text != cres.Text {
				t.Errorf("text: gpu %q, cpu %q", res.Text, cres.Text)
			}

			// steps[0] is the prefill and the first sample; each later one is
			// a decode step.
			const warm = 3
			var maps, read int64
			for i, s := range steps[1:] {
				step := i + 1
				t.Logf("step %2d: %4d dispatches, %d submits, %d maps, %d bytes read, %2d JS calls, %d programs recorded",
					step, s.dev.Dispatches, s.dev.Submits, s.dev.Maps, s.dev.BytesRead, s.dev.JSCalls, s.programBuilds)
				// Pipelined decode: a step's submit is the next step's,
				// sent before this one's token is read; the last token
				// (max_tokens) has none after it.
				wantSubmits := int64(1)
				if step == len(steps)-1 {
					wantSubmits = 0
				}
				if s.dev.Submits != wantSubmits {
					t.Errorf("decode step %d: %d submits, want %d", step, s.dev.Submits, wantSubmits)
				}
				// Two reads are in flight, and a map is counted when it
				// completes, which may be before or after this step's
				// emit: count maps and bytes over the decode.
				maps += s.dev.Maps
				read += s.dev.BytesRead
				if s.readback != 4 {
					t.Errorf("decode step %d: the engine asked for %d bytes, want 4", step, s.readback)
				}
				if step >= warm && s.programBuilds != 0 {
					t.Errorf("decode step %d: %d programs recorded, want 0 after step %d", step, s.programBuilds, warm-1)
				}
			}
			// One map per token, 4 bytes each (the last step's may be
			// counted in the first step: the prefill's own read).
			if n := int64(len(steps) - 1); maps < n-1 || maps > n || read > 4*maps {
				t.Errorf("decode: %d buffer maps and %d bytes read for %d tokens, want one 4-byte map each (the sampler's readback)", maps, read, n)
			}
			// Every decode step went ahead of the previous readback.
			if ahead := ge.Stats.StepsAhead - prevAhead; ahead != int64(len(g.Greedy)-1) {
				t.Errorf("%d of %d decode steps submitted ahead of the previous readback", ahead, len(g.Greedy)-1)
			}
			t.Logf("gpu: prefill %v, %d tokens in %v; cpu (wasm): %v, %v",
				res.PrefillTime.Round(time.Millisecond), len(res.Tokens), res.DecodeTime.Round(time.Millisecond),
				cres.PrefillTime.Round(time.Millisecond), cres.DecodeTime.Round(time.Millisecond))
		})
	}
}

// checkTimings: the prefill time runs up to the first token, so it holds
// the GPU's prefill (on WebGPU the prefill call only submits it; the first
// sample waits for it), and prefill plus decode is the request's wall time
// within 10%.
func checkTimings(t *testing.T, res *engine.Result, wall, firstToken time.Duration) {
	t.Helper()
	sum := res.PrefillTime + res.DecodeTime
	t.Logf("timings: prefill %v (first token at %v), decode %v, wall %v", res.PrefillTime, firstToken, res.DecodeTime, wall)
	if sum > wall || float64(sum) < 0.9*float64(wall) {
		t.Errorf("prefill %v + decode %v = %v, wall time %v: want within 10%%", res.PrefillTime, res.DecodeTime, sum, wall)
	}
	if float64(res.PrefillTime) < 0.8*float64(firstToken) {
		t.Errorf("prefill %v, but the first token came at %v: the prefill time misses the GPU's work", res.PrefillTime, firstToken)
	}
}

// TestModelSplitBinding runs models on a device whose storage bindings are
// forced below their embedding and lm_head (and, for Qwen3-MoE, expert
// tensors), so those weights are split by rows into uneven parts; logits
// and greedy ids must still match the golden files and the CPU. The limit
// still holds the largest activation, a 12-token prompt's gate_up rows.
func TestModelSplitBinding(t *testing.T) {
	const limit = 40 << 10
	b := newTestBackend(t, webgpu.Options{MaxStorageBufferBindingSize: limit})
	for _, c := range []struct {
		name           string
		embed, experts int // at least this many parts
	}{
		{"tiny-llama3-f32", 7, 0},    // f32 embedding and lm_head: 256 KiB each
		{"tiny-qwen3-q4_0", 2, 0},    // tied q8 embedding: 64 KiB of values
		{"tiny-qwen3moe-q8_0", 1, 2}, // 128 experts of 4 KiB gate_up values
	} {
		t.Run(c.name, func(t *testing.T) {
			if f := os.Getenv("WASMLLM_GOLDEN"); !strings.Contains(c.name, f) {
				t.Skip("WASMLLM_GOLDEN")
			}
			g := golden.Read(t, filepath.Join(goldenDir, c.name+".golden"))
			w := goldenWeights(t, g)
			gm, err := model.Build(b, w)
			if err != nil {
				t.Fatal(err)
			}
			defer freeModel(b, gm)
			parts := func(x model.Tensor) int { return len(x.(*tensor).parts) }
			experts := 0
			if sp, ok := gm.Layers[0].Channel.(*model.MoE); ok {
				experts = parts(sp.GateUp)
			}
			t.Logf("parts: embedding %d, lm_head %d, layer 0 qkv %d, layer 0 experts' gate_up %d",
				parts(gm.Embed), parts(gm.LMHead), parts(gm.Layers[0].Mixer.(*model.Attention).QKV), experts)
			if parts(gm.Embed) < c.embed || parts(gm.LMHead) < c.embed || experts < c.experts {
				t.Fatalf("embedding in %d parts, lm_head in %d, experts in %d; want at least %d, %d, %d: the split path did not run",
					parts(gm.Embed), parts(gm.LMHead), experts, c.embed, c.embed, c.experts)
			}
			cm, err := model.Build(cpu.New(0), w)
			if err != nil {
				t.Fatal(err)
			}
			checkModelGolden(t, gm, cm, g, len(g.Tokens))
		})
	}
}
