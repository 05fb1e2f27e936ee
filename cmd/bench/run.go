package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"wasmllm/cmd/bench/internal/result"
	"wasmllm/internal/testkit/repo"
	"wasmllm/internal/testkit/synth"
	"wasmllm/internal/testkit/testserver"
)

// options are cmd/bench's flags.
type options struct {
	Out         string        // output folder
	Short       bool          // one tiny model, small kernels, one repeat
	Budget      time.Duration // the whole run, builds included
	Models      string        // comma-separated substrings of model names to run; "" all
	Synthetic   bool          // include the synthetic Llama-3.2-1B-shaped model
	SynthLayers int           // 0: 16 on a hardware adapter, 1 on a software one
	Repeats     int           // runs per prompt length and engine
	Peer        string        // "auto" (when npm is there), "on", "off"
	PeerThreads int           // wllama's threads; 0: the CPUs, or 1 on a busy machine
	CPURanks    int           // the CPU engine's ranks; 0: the CPUs, at most 4
	Engines     string        // comma-separated engines to run (webgpu, firefox, wllama, cpu, native, llamacpp); "" all, kernels included
	Browser     string
	Firefox     string   // the Firefox binary for the WebGPU runs in Firefox; "off" for none
	Flags       []string // extra Chromium flags
	Verbose     bool
}

// model is one model to bench.
type benchModel struct {
	name, gguf string
	synthetic  bool
	// hybrid: a synthetic Qwen3.5-shaped model, run on WebGPU only (its own
	// group; no conversion, load or peers); noPeer: wllama and llama.cpp
	// run no such architecture.
	hybrid, noPeer bool
	decode         int
	prompts        []promptSet
	bias           map[string]float64
	rep            *ModelReport
}

// plan weights: a unit's share of the time left is its weight over the
// weights left. The synthetic model is some tens of times a tiny one.
const (
	wTinyGPU, wTinyCPU, wTinyPeer, wTinyLoad     float64 = 3, 1, 1.5, 1
	wSynthGPU, wSynthCPU, wSynthPeer, wSynthLoad float64 = 14, 6, 10, 2
	wTinyFirefox, wSynthFirefox                  float64 = 2, 10
	wTinyNative, wSynthNative                    float64 = 0.5, 3
	wSynthLlamaCpp                               float64 = 3
	wHybridGPU, wHybridFirefox                   float64 = 8, 6
)

// run is one bench: builds, the server and the browser, the kernels, the
// models, each engine on them, as the phases of a benchRun.
func run(ctx context.Context, o options) (*Report, error) {
	r := &benchRun{ctx: ctx, o: o, start: time.Now()}
	r.deadline = r.start.Add(o.Budget)
	defer r.cleanup()
	for _, phase := range []func() error{r.setup, r.build, r.serve, r.kernels, r.planModels, r.q4KM, r.runModels} {
		if err := phase(); err != nil {
			return nil, err
		}
	}
	if kv, err := measureKV(r.root); err != nil {
		r.note("the KV cache types were not measured: %v", err)
	} else {
		r.rep.KV = kv
	}
	r.collectNotes()
	r.rep.fillShapes()
	r.rep.computeRatios()
	r.rep.Seconds = time.Since(r.start).Seconds()
	r.rep.LoadAvg[1] = loadAvg()
	return r.rep, nil
}

// benchRun is a bench in progress: what each phase makes for the next.
type benchRun struct {
	ctx             context.Context
	o               options
	start, deadline time.Time
	rep             *Report
	busy            float64 // the load average before our own builds
	root, models    string

	probe, engineWasm, convBin, wasmExec string // builds
	peerDir                              string // the installed peer, "" for none
	llamaDir                             string // the installed native peer (llama.cpp), "" for none
	srv                                  *testserver.Server
	br                                   *browser
	ff                                   *browser // nil: no Firefox
	page                                 string
	closers                              []func()

	list                    []*benchModel
	lens                    []int
	ctxLen, repeats, thread int
	ranks                   int     // the CPU engine's
	total                   float64 // weights of the units left to run
}

func (r *benchRun) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	logf("note: %s", s)
	r.rep.Notes = append(r.rep.Notes, s)
}

func (r *benchRun) cleanup() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// setup finds the repository and the output folder, and starts the report.
func (r *benchRun) setup() error {
	var err error
	if r.root, err = repo.Root(); err != nil {
		return err
	}
	if r.o.Out, err = filepath.Abs(r.o.Out); err != nil {
		return err
	}
	r.models = filepath.Join(r.o.Out, "models")
	if err := os.MkdirAll(r.models, 0o755); err != nil {
		return err
	}
	r.rep = &Report{Started: r.start.UTC().Format(time.RFC3339), Short: r.o.Short,
		Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	r.rep.LoadAvg[0] = loadAvg()
	r.busy = load1() // before our own builds load the machine
	return nil
}

// build builds the probe, the browser engine and the converter, and
// installs the peer.
func (r *benchRun) build() error {
	logf("building the probe, the engine and the converter")
	o := r.o.Out
	r.probe, r.engineWasm, r.convBin = filepath.Join(o, "probe.wasm"), filepath.Join(o, "wasmllm.wasm"), filepath.Join(o, "convert")
	for _, b := range []struct {
		out, pkg string
		wasm     bool
	}{{r.probe, "./cmd/bench/probe", true}, {r.engineWasm, "./wasm", true}, {r.convBin, "./cmd/convert", false}} {
		if err := goBuild(r.ctx, r.root, b.out, b.pkg, b.wasm); err != nil {
			return err
		}
	}
	var err error
	if r.wasmExec, err = wasmExecJS(r.ctx, r.root); err != nil {
		return err
	}
	if r.o.Peer != "off" {
		logf("installing %s %s (npm ci in cmd/bench/page/)", peerPackage, peerVersion)
		r.peerDir, err = installPeer(r.ctx, filepath.Join(r.root, "cmd", "bench", "page"))
		if err != nil {
			if r.o.Peer == "on" || err != errNoNpm {
				return fmt.Errorf("the peer: %w", err)
			}
			r.note("no peer: npm is not installed")
		}
	}
	if r.o.Synthetic && !r.o.Short && r.runs("llamacpp") {
		logf("installing %s %s, llama.cpp's prebuilt CPU build (cmd/bench/llamacpp/'s lock, into the user's cache)", llamaCppPackage, llamaCppVersion)
		if r.llamaDir, err = installLlamaCpp(r.ctx, r.root); err != nil {
			r.llamaDir = ""
			r.note("no native peer (llama.cpp): %v", firstLine(err.Error()))
		}
	}
	return nil
}

// serve starts the bench page's server and the browser.
func (r *benchRun) serve() error {
	var err error
	r.srv, err = startServer(serverFiles{Page: filepath.Join(r.root, "cmd", "bench", "page"), Web: filepath.Join(r.root, "web"), Wllama: r.peerDir,
		Models: r.models, Probe: r.probe, EngineWasm: r.engineWasm, WasmExe: r.wasmExec})
	if err != nil {
		return err
	}
	r.closers = append(r.closers, r.srv.Close)
	profile, err := os.MkdirTemp("", "wasmllm-bench-profile-")
	if err != nil {
		return err
	}
	r.closers = append(r.closers, func() { os.RemoveAll(profile) })
	if r.br, err = startBrowser(r.ctx, r.o.Browser, profile, r.o.Flags, r.o.Verbose); err != nil {
		return err
	}
	r.closers = append(r.closers, r.br.close)
	r.page = r.srv.URL + "/index.html"
	if r.o.Firefox == "off" {
		r.note("no Firefox runs: -firefox off")
		return nil
	}
	if _, err := os.Stat(r.o.Firefox); r.o.Firefox == "" || err != nil {
		r.note("no Firefox runs: no Firefox at %q (install firefox-esr and mesa-vulkan-drivers, or set -firefox)", r.o.Firefox)
		return nil
	}
	ffProfile, err := os.MkdirTemp("", "wasmllm-bench-firefox-")
	if err != nil {
		return err
	}
	r.closers = append(r.closers, func() { os.RemoveAll(ffProfile) })
	if r.ff, err = startFirefox(r.ctx, r.o.Firefox, ffProfile, r.o.Verbose); err != nil {
		return fmt.Errorf("firefox: %w", err)
	}
	r.closers = append(r.closers, r.ff.close)
	return nil
}

// runs reports whether -engines selects engine ("kernels" for the
// kernel table, which runs with webgpu).
func (r *benchRun) runs(engine string) bool {
	if r.o.Engines == "" {
		return true
	}
	if engine == "kernels" {
		engine = "webgpu"
	}
	return slices.Contains(strings.Split(r.o.Engines, ","), engine)
}

// kernels runs the roofline probes and the hot kernels in Chromium with the
// webgpu engine, and in Firefox (another software adapter: llvmpipe) with
// the firefox engine.
func (r *benchRun) kernels() error {
	ff := r.ff != nil && r.runs("firefox")
	if !r.runs("kernels") && !ff {
		r.note("-engines %s: no kernel table", r.o.Engines)
		return nil
	}
	budget := min(4*time.Minute, time.Until(r.deadline)/4)
	if r.o.Short {
		budget = min(2*time.Minute, time.Until(r.deadline)/3)
	}
	if r.runs("kernels") {
		logf("kernels: roofline probes and hot kernels (budget %v)", budget.Round(time.Second))
		k, err := r.probeKernels(r.br, budget)
		if err != nil {
			return err
		}
		r.rep.Adapter, r.rep.Roofline, r.rep.Kernels = k.Adapter, k.Roofline, k.Kernels
		for _, n := range k.Notes {
			r.note("%s", n)
		}
	}
	if ff {
		logf("kernels in Firefox (budget %v)", budget.Round(time.Second))
		if k, err := r.probeKernels(r.ff, budget); err != nil {
			r.note("no kernel table in Firefox: %v", err)
		} else {
			for _, n := range k.Notes {
				r.note("firefox: %s", n)
			}
			k.Notes = nil
			r.rep.Firefox = k
		}
	}
	if r.o.Short {
		r.note("-short: small kernel shapes, one model, one run per prompt length")
	}
	return nil
}

// probeKernels runs the probe's kernel phase in br.
func (r *benchRun) probeKernels(br *browser, budget time.Duration) (*result.Kernels, error) {
	var kout struct {
		Kernels *result.Kernels `json:"kernels"`
		Error   string          `json:"error"`
	}
	kcfg := map[string]any{"phase": "kernels", "quick": r.o.Short, "budget_s": budget.Seconds()}
	// The probe starts no kernel past its budget, but one started just
	// before it runs to its end: on a software adapter the slowest rows
	// (attend_seq, the MoE prefill) take minutes with their compiles, so
	// the call waits for the budget twice over before it calls the page
	// hung.
	if err := br.call(r.page, "bench.runProbe", kcfg, 2*budget+4*time.Minute, &kout); err != nil {
		return nil, fmt.Errorf("kernels: %w", err)
	}
	if kout.Error != "" || kout.Kernels == nil {
		return nil, fmt.Errorf("kernels: %s", kout.Error)
	}
	return kout.Kernels, nil
}

// planModels lists the models (the test ones, and the synthetic one),
// converts and prepares each, and sums the time weights of what will run.
func (r *benchRun) planModels() error {
	r.lens, r.ctxLen = []int{16, 128, 512}, 1024
	if r.o.Short {
		r.lens, r.ctxLen = []int{16, 128}, 256
	}
	r.rep.Prompts, r.rep.Headline = r.lens, min(decodeTarget, r.lens[len(r.lens)-1])
	var err error
	if r.list, err = listModels(r.root, r.o); err != nil {
		return err
	}
	if r.rep.Shapes, err = shapeRows(tableShapes); err != nil {
		return err
	}
	if r.o.Synthetic && !r.o.Short {
		ms, err := r.synthetics()
		if err != nil {
			return err
		}
		r.list = append(r.list, ms...)
		hy, err := r.hybrids()
		if err != nil {
			return err
		}
		r.list = append(r.list, hy...)
	}
	r.ranks = r.o.CPURanks
	if r.ranks <= 0 {
		r.ranks = min(runtime.NumCPU(), 4) // createEngine's default (wasm/load.go)
	}
	r.thread = r.o.PeerThreads
	if r.thread <= 0 {
		r.thread = runtime.NumCPU()
		if r.peerDir != "" && r.thread > 1 && r.busy > float64(runtime.NumCPU()) {
			r.thread = 1
			r.note("wllama runs on 1 thread: the load average (%.1f) was over the %d CPUs at the start, and llama.cpp's threads wait for each other by spinning", r.busy, runtime.NumCPU())
		}
	}
	r.repeats = r.o.Repeats
	if r.o.Short {
		r.repeats = 1
	}
	for _, m := range r.list {
		if err := prepareModel(r.ctx, m, r.root, r.models, r.convBin, r.lens, r.repeats, r.ctxLen, r.o.Short); err != nil {
			return err
		}
		r.rep.Models = append(r.rep.Models, m.rep)
		if m.hybrid {
			if r.runs("webgpu") {
				r.total += wHybridGPU
			}
			if r.ff != nil && r.runs("firefox") {
				r.total += wHybridFirefox
			}
			continue
		}
		if m.synthetic {
			r.total += wSynthGPU + wSynthCPU + wSynthLoad + wSynthNative
			if r.ranks > 1 {
				r.total += wSynthCPU
			}
			if r.peerDir != "" {
				r.total += wSynthPeer
			}
			if r.ff != nil {
				r.total += wSynthFirefox
			}
			if r.llamaDir != "" && m.name == synthName {
				r.total += wSynthLlamaCpp
			}
		} else {
			r.total += wTinyGPU + wTinyCPU + wTinyLoad + wTinyNative
			if r.peerDir != "" && !m.noPeer {
				r.total += wTinyPeer
			}
			if r.ff != nil {
				r.total += wTinyFirefox
			}
		}
	}
	return nil
}

// The synthetic models: their name, shape, the tiny model whose
// tokenizer they take, the layers a software adapter runs (Gemma-3-1B's
// six: five local and one global), and what the note says they keep.
var synthModels = []struct {
	name, base string
	shape      synth.Shape
	software   int
	kept       string
}{
	{synthName, "testdata/models/tiny-llama3-q4_0.gguf", synth.Llama32_1B, 1, "hidden 2048, 32/8 heads, ffn 8192, vocab 128256 kept"},
	{synthGemmaName, "testdata/gemma/models/tiny-gemma3-q4_0.gguf", synth.Gemma3_1B, 6,
		"five local and one global; hidden 1152, 4/1 heads of 256, ffn 6912, vocab 262144, window 512 kept"},
}

// synthetics writes (once) the Llama-3.2-1B-shaped and the
// Gemma-3-1B-shaped q4 models (-models picks), with all their layers on a
// real GPU and fewer on a software adapter.
func (r *benchRun) synthetics() ([]*benchModel, error) {
	var out []*benchModel
	for _, sm := range synthModels {
		if sm.name != synthName && !matches(sm.name, r.o.Models) {
			continue
		}
		layers := r.o.SynthLayers
		if layers <= 0 {
			layers = sm.shape.Layers
			if r.rep.software() {
				layers = sm.software
			}
		}
		s := sm.shape
		s.Layers = layers
		path := filepath.Join(r.models, fmt.Sprintf("%s-%dL.gguf", sm.name, layers))
		if _, err := os.Stat(path); err != nil {
			logf("writing %s", path)
			if err := synth.Write(path, filepath.Join(r.root, sm.base), s); err != nil {
				return nil, fmt.Errorf("synthetic model %s: %w", sm.name, err)
			}
		}
		decode := 64
		if r.rep.software() {
			decode = 8
		}
		if layers != sm.shape.Layers {
			r.note("%s: %d of %s's %d layers (%s), %d decode tokens a run: a software adapter is too slow for all",
				sm.name, layers, sm.shape.Name, sm.shape.Layers, sm.kept, decode)
		}
		out = append(out, &benchModel{name: sm.name, gguf: path, synthetic: true, decode: decode})
	}
	return out, nil
}

// hybrids writes (once) the Qwen3.5-shaped synthetic models
// (hybridShapes), with the tiny Qwen3.5 model's tokenizer.
func (r *benchRun) hybrids() ([]*benchModel, error) {
	decode := 64
	if r.rep.software() {
		decode = 8
	}
	var out []*benchModel
	for _, s := range hybridShapes(r.rep.software()) {
		name := hybridName(s)
		if !matches(name, r.o.Models) {
			continue
		}
		path := filepath.Join(r.models, fmt.Sprintf("%s-%dL-%dE.gguf", name, s.Layers, s.Experts))
		if _, err := os.Stat(path); err != nil {
			logf("writing %s", path)
			if err := synth.Write(path, filepath.Join(r.root, "testdata/qwen35/models/tiny-qwen35-f32.gguf"), s); err != nil {
				return nil, fmt.Errorf("synthetic %s: %w", s.Name, err)
			}
		}
		real := synth.Qwen35_2B
		if s.Experts > 0 {
			real = synth.Qwen35_35BA3B
		}
		if s.Layers != real.Layers || s.Experts != real.Experts {
			experts := ""
			if real.Experts > 0 {
				experts = fmt.Sprintf(" and %d of its %d experts", s.Experts, real.Experts)
			}
			r.note("%s: %d of %s's %d layers%s (widths, heads and vocabulary kept), %d decode tokens a run: the file must fit a browser's heap and the bench's time (its shapes row gives the whole model's bytes)",
				name, s.Layers, real.Name, real.Layers, experts, decode)
		}
		out = append(out, &benchModel{name: name, gguf: path, synthetic: true, hybrid: true, noPeer: true, decode: decode})
	}
	return out, nil
}

// share returns a unit's time: its weight's part of what is left.
func (r *benchRun) share(w float64) time.Duration {
	left := time.Until(r.deadline) - 20*time.Second // the report
	d := time.Duration(float64(left) * w / r.total)
	r.total -= w
	return max(d, 0)
}

// runModels runs every engine on the models: the test models in one page
// per engine of ours (a WebGPU device compiles each kernel once), the
// synthetic one alone, after them.
func (r *benchRun) runModels() error {
	var tiny, synth, hybrid []*benchModel
	for _, m := range r.list {
		switch {
		case m.hybrid:
			hybrid = append(hybrid, m)
		case m.synthetic:
			synth = append(synth, m)
		default:
			tiny = append(tiny, m)
		}
	}
	for _, group := range [][]*benchModel{tiny, synth} {
		if len(group) == 0 {
			continue
		}
		wg, wc, wp, wl, wf, wn := wTinyGPU, wTinyCPU, wTinyPeer, wTinyLoad, wTinyFirefox, wTinyNative
		if group[0].synthetic {
			wg, wc, wp, wl, wf, wn = wSynthGPU, wSynthCPU, wSynthPeer, wSynthLoad, wSynthFirefox, wSynthNative
		}
		n := float64(len(group))
		each := func(w float64) []float64 {
			ws := make([]float64, len(group))
			for i := range ws {
				ws[i] = w
			}
			return ws
		}
		if r.runs("webgpu") {
			for i, e := range ours(r.br, r.page, group, each(wg), "webgpu", engineGPU, 0, r.repeats, r.ctxLen, r.share(wg*n)) {
				group[i].rep.Engines = append(group[i].rep.Engines, e)
			}
		}
		if r.ff != nil && r.runs("firefox") {
			for i, e := range ours(r.ff, r.page, group, each(wf), "webgpu", engineFirefox, 0, r.repeats, r.ctxLen, r.share(wf*n)) {
				group[i].rep.Engines = append(group[i].rep.Engines, e)
			}
		}
		if r.peerDir != "" && r.runs("wllama") {
			for _, m := range group {
				if m.noPeer {
					continue
				}
				m.rep.Engines = append(m.rep.Engines, peer(r.br, r.page, m, r.repeats, r.ctxLen, r.thread, r.share(wp)))
			}
		}
		if r.runs("cpu") {
			for i, e := range ours(r.br, r.page, group, each(wc), "cpu", engineCPU, r.ranks, r.repeats, r.ctxLen, r.share(wc*n)) {
				group[i].rep.Engines = append(group[i].rep.Engines, e)
			}
		}
		// One rank beside the default, on the synthetic model: the
		// ranks' speed-up (ratio cpu_rank_speedup_N).
		if llama := pick(group, synthName); llama != nil && r.ranks > 1 && r.runs("cpu") {
			for _, e := range ours(r.br, r.page, []*benchModel{llama}, []float64{wc}, "cpu", engineCPU1, 1, r.repeats, r.ctxLen, r.share(wc)) {
				llama.rep.Engines = append(llama.rep.Engines, e)
			}
		}
		if r.runs("native") {
			for _, m := range group {
				m.rep.Engines = append(m.rep.Engines, native(r.ctx, m, r.repeats, r.ctxLen, r.share(wn)))
			}
		}
		// llama.cpp natively, beside the native engine, on the synthetic
		// model (ratios decode_native_vs_llamacpp and
		// prefill_native_vs_llamacpp).
		if m := pick(group, synthName); m != nil && r.llamaDir != "" {
			m.rep.Engines = append(m.rep.Engines, llamaCpp(r.ctx, r.llamaDir, m, r.repeats, r.ctxLen, r.share(wSynthLlamaCpp)))
		}
		for _, m := range group {
			m.rep.Load = load(r.br, r.page, m, r.share(wl))
		}
	}
	r.runHybrids(hybrid)
	return nil
}

// runHybrids runs the synthetic Qwen3.5-shaped models on WebGPU (in
// Chromium, and in Firefox when it runs): their decode rates and the
// dispatches each layer kind records at a real width.
func (r *benchRun) runHybrids(group []*benchModel) {
	if len(group) == 0 {
		return
	}
	ws := func(w float64) []float64 {
		out := make([]float64, len(group))
		for i := range out {
			out[i] = w
		}
		return out
	}
	n := float64(len(group))
	if r.runs("webgpu") {
		for i, e := range ours(r.br, r.page, group, ws(wHybridGPU), "webgpu", engineGPU, 0, r.repeats, r.ctxLen, r.share(wHybridGPU*n)) {
			group[i].rep.Engines = append(group[i].rep.Engines, e)
		}
	}
	if r.ff != nil && r.runs("firefox") {
		for i, e := range ours(r.ff, r.page, group, ws(wHybridFirefox), "webgpu", engineFirefox, 0, r.repeats, r.ctxLen, r.share(wHybridFirefox*n)) {
			group[i].rep.Engines = append(group[i].rep.Engines, e)
		}
	}
}

// collectNotes turns each engine's and load's skips and failures into
// notes of the report.
func (r *benchRun) collectNotes() {
	for _, m := range r.list {
		for _, e := range m.rep.Engines {
			runsAt := func(l int) int {
				for _, p := range m.prompts {
					if p.Len == l && !strings.HasPrefix(e.Engine, "wasmllm-webgpu") {
						return p.Runs
					}
				}
				return r.repeats
			}
			for _, n := range summarizeSkips(e.Notes, runsAt) {
				r.note("%s %s: %s", m.name, e.Engine, n)
			}
			if e.Error != "" {
				r.note("%s %s failed: %s", m.name, e.Engine, firstLine(e.Error))
			}
		}
		if l := m.rep.Load; l != nil && l.Error != "" {
			r.note("%s load failed: %s", m.name, firstLine(l.Error))
		} else if l != nil && l.Note != "" {
			r.note("%s load: %s", m.name, l.Note)
		}
	}
}

// listModels returns the test GGUF models (only stories260K with -short),
// filtered by o.Models.
func listModels(root string, o options) ([]*benchModel, error) {
	files, err := filepath.Glob(filepath.Join(root, "testdata/models/*.gguf"))
	if err != nil {
		return nil, err
	}
	// the Gemma ones: local and global layers, per-layer embeddings, MoE
	gemma, err := filepath.Glob(filepath.Join(root, "testdata/gemma/models/*.gguf"))
	if err != nil {
		return nil, err
	}
	files = append(files, gemma...)
	// Qwen3.5's tiny models in q4 (their per-layer dispatches are the
	// shapes table's when the synthetic ones do not run).
	hybrid, err := filepath.Glob(filepath.Join(root, "testdata/qwen35/models/tiny-qwen35*-q4_0.gguf"))
	if err != nil {
		return nil, err
	}
	files = append(files, hybrid...)
	sort.Strings(files)
	var out []*benchModel
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".gguf")
		if o.Short && name != "stories260K" {
			continue
		}
		if !matches(name, o.Models) {
			continue
		}
		out = append(out, &benchModel{name: name, gguf: f, decode: 64, noPeer: strings.HasPrefix(name, "tiny-qwen35")})
	}
	if o.Short {
		for _, m := range out {
			m.decode = 16
		}
	}
	if len(out) == 0 && !o.Synthetic {
		return nil, fmt.Errorf("no test model matches -models %q in testdata/models", o.Models)
	}
	return out, nil
}

// pick is the model of group named name, or nil.
func pick(group []*benchModel, name string) *benchModel {
	for _, m := range group {
		if m.name == name {
			return m
		}
	}
	return nil
}

func matches(name, filter string) bool {
	if filter == "" {
		return true
	}
	for _, f := range strings.Split(filter, ",") {
		if f = strings.TrimSpace(f); f != "" && strings.Contains(name, f) {
			return true
		}
	}
	return false
}

// prepareModel makes a model servable: its GGUF under /models/NAME.gguf, its
// converted folder at /models/NAME/, its prompts and its logit bias.
func prepareModel(ctx context.Context, m *benchModel, root, models, convBin string, lens []int, repeats, ctxLen int, short bool) error {
	link := filepath.Join(models, m.name+".gguf")
	if link != m.gguf {
		os.Remove(link)
		if err := os.Symlink(m.gguf, link); err != nil {
			return err
		}
	}
	dir := filepath.Join(models, m.name)
	src, _ := os.Stat(m.gguf)
	if man, err := os.Stat(filepath.Join(dir, "manifest.json")); !m.hybrid && (err != nil || src == nil || man.ModTime().Before(src.ModTime())) {
		logf("converting %s", m.name)
		if err := convert(ctx, convBin, root, m.gguf, dir); err != nil {
			return err
		}
	}
	tok, err := ggufTokenizer(m.gguf)
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	if m.prompts, err = buildPrompts(tok, lens, repeats); err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	if !m.synthetic {
		for i := range m.prompts {
			if m.prompts[i].Len <= 16 {
				m.prompts[i].Runs *= shortRuns
			}
		}
	}
	m.bias = banNonASCII(tok)
	m.rep = &ModelReport{Name: m.name, File: m.gguf, Synthetic: m.synthetic, Decode: m.decode, Context: ctxLen}
	if m.rep.LayerKinds, err = layerKinds(filepath.Join(dir, "manifest.json")); err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	if rel, err := filepath.Rel(root, m.gguf); err == nil && !strings.HasPrefix(rel, "..") {
		m.rep.File = rel
	}
	return nil
}

// ours runs the probe's model phase: wasmllm on backend ("webgpu" or
// "cpu") on each model in turn in one page of br, each with its weight's
// part of the budget, reported as engine name; the CPU engine on ranks
// ranks. It returns one report per model.
func ours(br *browser, page string, ms []*benchModel, weights []float64, backend, name string, ranks, repeats, ctxLen int, budget time.Duration) []*EngineReport {
	out := make([]*EngineReport, len(ms))
	for i := range ms {
		out[i] = &EngineReport{Engine: name}
		if backend == "cpu" {
			out[i].Detail = "Go wasm, 1 rank (one thread)"
			if ranks > 1 {
				out[i].Detail = fmt.Sprintf("Go wasm, %d ranks (Web Workers)", ranks)
			}
		}
	}
	if budget < 5*time.Second*time.Duration(len(ms)) {
		for _, e := range out {
			e.Error = "skipped: no time left in the budget"
		}
		return out
	}
	var models []map[string]any
	var names []string
	for i, m := range ms {
		// The 16-token prompts' extra runs are for the CPU engines (and
		// wllama's), whose runs last a millisecond or two; on WebGPU
		// every prompt runs repeats times.
		var prompts []map[string]any
		most := repeats
		for _, p := range m.prompts {
			n := repeats
			if backend == "cpu" {
				n, most = p.Runs, max(most, p.Runs)
			}
			prompts = append(prompts, map[string]any{"len": p.Len, "ids": p.IDs[0], "runs": n})
		}
		models = append(models, map[string]any{"name": m.name, "url": "/models/" + m.name + ".gguf", "weight": weights[i],
			"context": ctxLen, "decode": m.decode, "repeats": most, "prompts": prompts, "encode_steps": min(m.decode, 16), "ranks": ranks})
		names = append(names, m.name)
	}
	cfg := map[string]any{"phase": "model", "budget_s": budget.Seconds(), "backend": backend, "models": models}
	logf("%s: %s (budget %v)", strings.Join(names, ", "), name, budget.Round(time.Second))
	var res struct {
		Models []*result.Model `json:"models"`
		Error  string          `json:"error"`
	}
	err := br.call(page, "bench.runProbe", cfg, budget+3*time.Minute, &res)
	if err == nil && res.Error != "" {
		err = errors.New(res.Error)
	}
	for i, e := range out {
		var r *result.Model
		if i < len(res.Models) {
			r = res.Models[i]
		}
		switch {
		case r != nil:
			e.Runs, e.PerToken, e.Notes, e.Error = r.Runs, r.PerToken, r.Notes, r.Error
			e.WeightBytes, e.ActiveBytes, e.KVBytesPerPos = r.WeightBytes, r.ActiveBytes, r.KVBytesPerPos
			e.LayerDispatches, e.LayerTypes, e.Experts, e.StepsAhead = r.LayerDispatches, r.LayerTypes, r.Experts, r.StepsAhead
			e.Extra = map[string]any{"build_ms": r.BuildMs, "kv_dtype": r.KVDType, "layers": r.Layers, "hidden": r.Hidden, "vocab": r.Vocab}
			if r.Ranks > 0 {
				e.Extra["ranks"] = r.Ranks
			}
			if r.Adapter != nil {
				e.Detail = strings.TrimSpace(r.Adapter.Vendor + " " + r.Adapter.Architecture)
			}
		case err != nil:
			e.Error = err.Error()
		default:
			e.Error = "the probe returned no result"
		}
		e.fill()
	}
	return out
}

// peer runs wllama on the model's GGUF file.
func peer(br *browser, page string, m *benchModel, repeats, ctxLen, threads int, budget time.Duration) *EngineReport {
	e := &EngineReport{Engine: enginePeer}
	if budget < 5*time.Second {
		e.Error = "skipped: no time left in the budget"
		return e
	}
	var prompts []map[string]any
	for _, p := range m.prompts {
		prompts = append(prompts, map[string]any{"len": p.Len, "texts": p.Texts, "runs": p.Runs})
	}
	cfg := map[string]any{"name": m.name, "url": "/models/" + m.name + ".gguf", "ctx": ctxLen, "threads": threads,
		"decode": m.decode, "repeats": runs(m.prompts), "prompts": prompts, "logit_bias": m.bias, "budget_ms": budget.Milliseconds()}
	logf("%s: wllama (budget %v)", m.name, budget.Round(time.Second))
	var out struct {
		LoadMs      float64   `json:"load_ms"`
		Version     string    `json:"version"`
		Threads     int       `json:"threads"`
		Multithread bool      `json:"multithread"`
		Isolated    bool      `json:"cross_origin_isolated"`
		Runs        []peerRun `json:"runs"`
		Notes       []string  `json:"notes"`
		Log         []string  `json:"log"`
	}
	if err := br.call(page, "bench.runWllama", cfg, budget+3*time.Minute, &out); err != nil {
		e.Error = err.Error()
		return e
	}
	e.Detail = fmt.Sprintf("%s %s (llama.cpp %s), %d threads", peerPackage, peerVersion, out.Version, out.Threads)
	e.Notes = out.Notes
	mismatch := 0
	for _, r := range out.Runs {
		e.Runs = append(e.Runs, r.Run)
		if r.PromptTokens != r.Prompt || r.CachedTokens != 0 {
			mismatch++
		}
	}
	if mismatch > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%d runs evaluated a prompt of another length than ours, or reused a cached prefix", mismatch))
	}
	e.Extra = map[string]any{"load_ms": out.LoadMs, "threads": out.Threads, "multithread": out.Multithread,
		"cross_origin_isolated": out.Isolated, "log": out.Log, "logit_bias_banned": len(m.bias)}
	e.fill()
	return e
}

// peerRun is a wllama run with what its server reported.
type peerRun struct {
	result.Run
	WallMs       float64 `json:"wall_ms"`
	PromptTokens int     `json:"prompt_tokens"`
	CachedTokens int     `json:"cached_tokens"`
}

// load times createEngine on the converted folder, from the network and
// from the cache.
func load(br *browser, page string, m *benchModel, budget time.Duration) *LoadReport {
	l := &LoadReport{}
	if budget < 2*time.Second {
		l.Error = "skipped: no time left in the budget"
		return l
	}
	logf("%s: load (budget %v)", m.name, budget.Round(time.Second))
	type once struct {
		Ms      float64        `json:"ms"`
		Backend string         `json:"backend"`
		Load    map[string]any `json:"load"`
	}
	var out struct {
		Network once    `json:"network"`
		Cached  *once   `json:"cached"`
		RawMs   float64 `json:"raw_ms"`
		Bytes   int64   `json:"raw_bytes"`
		Missing int     `json:"raw_missing"`
		Shards  int     `json:"shards"`
	}
	arg := map[string]any{"model": "/models/" + m.name + "/", "budget_ms": budget.Milliseconds()}
	if err := br.call(page, "bench.runLoad", arg, budget+3*time.Minute, &out); err != nil {
		l.Error = err.Error()
		return l
	}
	l.Bytes, l.NetworkMs, l.RawCacheMs, l.Backend = out.Bytes, out.Network.Ms, out.RawMs, out.Network.Backend
	l.Phases = map[string]any{"network": out.Network.Load}
	if out.Missing > 0 {
		l.Note = fmt.Sprintf("%d of %d shards were not in Cache Storage after the load from the network; ", out.Missing, out.Shards)
	}
	if out.Cached != nil {
		l.CacheMs, l.Phases["cached"] = out.Cached.Ms, out.Cached.Load
	} else {
		l.Note += "the load from the cache was skipped: the load from the network took over half the time budget"
	}
	return l
}

// writeOutputs writes bench.json, bench.txt and decode.svg into
// dir and the text to stdout.
func writeOutputs(r *Report, dir string) error {
	r.ChartFile = "decode.svg"
	f, err := os.Create(filepath.Join(dir, r.ChartFile))
	if err != nil {
		return err
	}
	if err := r.writeChart(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	var txt strings.Builder
	r.writeText(&txt)
	if err := os.WriteFile(filepath.Join(dir, "bench.txt"), []byte(txt.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(txt.String())
	return nil
}

// rerender reads a bench.json written by an earlier run and writes its
// outputs again into dir, in this version's format.
func rerender(file, dir string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeOutputs(&r, dir)
}

// loadAvg is the 1, 5 and 15-minute load averages, where /proc has them.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// load1 is the 1-minute load average, 0 where /proc has none.
func load1() float64 {
	var v float64
	fmt.Sscan(loadAvg(), &v)
	return v
}

var skipNote = regexp.MustCompile(`^prompt (\d+) run \d+ skipped`)

// summarizeSkips folds the notes of runs skipped for time into one line;
// the report's JSON keeps each.
func summarizeSkips(notes []string, runsAt func(promptLen int) int) []string {
	var out []string
	count := map[int]int{}
	var lens []int
	for _, n := range notes {
		m := skipNote.FindStringSubmatch(n)
		if m == nil {
			out = append(out, n)
			continue
		}
		l, _ := strconv.Atoi(m[1])
		if count[l] == 0 {
			lens = append(lens, l)
		}
		count[l]++
	}
	if len(lens) > 0 {
		sort.Ints(lens)
		var parts []string
		for _, l := range lens {
			parts = append(parts, fmt.Sprintf("%d of %d at prompt %d", count[l], runsAt(l), l))
		}
		out = append(out, "runs skipped to keep within the time budget: "+strings.Join(parts, ", "))
	}
	return out
}
