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
	"sort"
	"strconv"
	"strings"
	"time"

	"wasmllm/cmd/bench/internal/result"
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
	Browser     string
	Flags       []string // extra Chromium flags
	Verbose     bool
}

// model is one model to bench.
type benchModel struct {
	name, gguf string
	synthetic  bool
	decode     int
	prompts    []promptSet
	bias       map[string]float64
	rep        *ModelReport
}

// plan weights: a unit's share of the time left is its weight over the
// weights left. The synthetic model is some tens of times a tiny one.
const (
	wTinyGPU, wTinyCPU, wTinyPeer, wTinyLoad     float64 = 3, 1, 1.5, 1
	wSynthGPU, wSynthCPU, wSynthPeer, wSynthLoad float64 = 14, 6, 10, 2
)

func run(ctx context.Context, o options) (*Report, error) {
	start := time.Now()
	deadline := start.Add(o.Budget)
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	if o.Out, err = filepath.Abs(o.Out); err != nil {
		return nil, err
	}
	models := filepath.Join(o.Out, "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		return nil, err
	}
	rep := &Report{Started: start.UTC().Format(time.RFC3339), Short: o.Short,
		Machine: fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())}
	rep.LoadAvg[0] = loadAvg()
	busy := load1() // before our own builds load the machine
	note := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		logf("note: %s", s)
		rep.Notes = append(rep.Notes, s)
	}

	// Builds: the probe, the browser engine and the converter.
	logf("building the probe, the engine and the converter")
	probe, engineWasm, convBin := filepath.Join(o.Out, "probe.wasm"), filepath.Join(o.Out, "wasmllm.wasm"), filepath.Join(o.Out, "convert")
	for _, b := range []struct {
		out, pkg string
		wasm     bool
	}{{probe, "./cmd/bench/probe", true}, {engineWasm, "./wasm", true}, {convBin, "./cmd/convert", false}} {
		if err := goBuild(ctx, root, b.out, b.pkg, b.wasm); err != nil {
			return nil, err
		}
	}
	wasmExec, err := wasmExecJS(ctx, root)
	if err != nil {
		return nil, err
	}
	peerDir := ""
	if o.Peer != "off" {
		logf("installing %s %s (npm ci in bench/)", peerPackage, peerVersion)
		peerDir, err = installPeer(ctx, filepath.Join(root, "cmd", "bench", "page"))
		if err != nil {
			if o.Peer == "on" || err != errNoNpm {
				return nil, fmt.Errorf("the peer: %w", err)
			}
			note("no peer: npm is not installed")
		}
	}
	srv, err := startServer(serverFiles{Page: filepath.Join(root, "cmd", "bench", "page"), Web: filepath.Join(root, "web"), Wllama: peerDir,
		Models: models, Probe: probe, EngineWasm: engineWasm, WasmExe: wasmExec})
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	profile, err := os.MkdirTemp("", "wasmllm-bench-profile-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	br, err := startBrowser(ctx, o.Browser, profile, o.Flags, o.Verbose)
	if err != nil {
		return nil, err
	}
	defer br.close()
	page := srv.URL + "/index.html"

	// Roofline probes and kernels.
	kernelBudget := min(4*time.Minute, time.Until(deadline)/4)
	if o.Short {
		kernelBudget = min(2*time.Minute, time.Until(deadline)/3)
	}
	logf("kernels: roofline probes and hot kernels (budget %v)", kernelBudget.Round(time.Second))
	var kout struct {
		Kernels *result.Kernels `json:"kernels"`
		Error   string          `json:"error"`
	}
	kcfg := map[string]any{"phase": "kernels", "quick": o.Short, "budget_s": kernelBudget.Seconds()}
	if err := br.call(page, "bench.runProbe", kcfg, kernelBudget+2*time.Minute, &kout); err != nil {
		return nil, fmt.Errorf("kernels: %w", err)
	}
	if kout.Error != "" || kout.Kernels == nil {
		return nil, fmt.Errorf("kernels: %s", kout.Error)
	}
	rep.Adapter, rep.Roofline, rep.Kernels = kout.Kernels.Adapter, kout.Kernels.Roofline, kout.Kernels.Kernels
	for _, n := range kout.Kernels.Notes {
		note("%s", n)
	}
	if o.Short {
		note("-short: small kernel shapes, one model, one run per prompt length")
	}

	// The models.
	lens := []int{16, 128, 512}
	ctxLen := 1024
	if o.Short {
		lens, ctxLen = []int{16, 128}, 256
	}
	rep.Prompts, rep.Headline = lens, min(decodeTarget, lens[len(lens)-1])
	list, err := listModels(root, o)
	if err != nil {
		return nil, err
	}
	if o.Synthetic && !o.Short {
		layers := o.SynthLayers
		if layers <= 0 {
			layers = llama32_1B.Layers
			if rep.Adapter.Fallback {
				layers = 1
			}
		}
		s := llama32_1B
		s.Layers = layers
		path := filepath.Join(models, fmt.Sprintf("%s-%dL.gguf", synthName, layers))
		if _, err := os.Stat(path); err != nil {
			logf("writing %s", path)
			if err := writeSynthetic(path, filepath.Join(root, "testdata/models/tiny-llama3-q4_0.gguf"), s); err != nil {
				return nil, fmt.Errorf("synthetic model: %w", err)
			}
		}
		decode := 64
		if rep.Adapter.Fallback {
			decode = 8
		}
		if layers != llama32_1B.Layers {
			note("%s: %d of Llama-3.2-1B's %d layers (hidden 2048, 32/8 heads, ffn 8192, vocab 128256 kept), %d decode tokens a run: a software adapter is too slow for all",
				synthName, layers, llama32_1B.Layers, decode)
		}
		list = append(list, &benchModel{name: synthName, gguf: path, synthetic: true, decode: decode})
	}
	peerThreads := o.PeerThreads
	if peerThreads <= 0 {
		peerThreads = runtime.NumCPU()
		if peerDir != "" && peerThreads > 1 && busy > float64(runtime.NumCPU()) {
			peerThreads = 1
			note("wllama runs on 1 thread: the load average (%.1f) was over the %d CPUs at the start, and llama.cpp's threads wait for each other by spinning", busy, runtime.NumCPU())
		}
	}
	repeats := o.Repeats
	if o.Short {
		repeats = 1
	}
	total := 0.0
	for _, m := range list {
		if err := prepareModel(ctx, m, root, models, convBin, lens, repeats, ctxLen, o.Short); err != nil {
			return nil, err
		}
		rep.Models = append(rep.Models, m.rep)
		if m.synthetic {
			total += wSynthGPU + wSynthCPU + wSynthLoad
			if peerDir != "" {
				total += wSynthPeer
			}
		} else {
			total += wTinyGPU + wTinyCPU + wTinyLoad
			if peerDir != "" {
				total += wTinyPeer
			}
		}
	}

	// share returns a unit's time: its weight's part of what is left.
	share := func(w float64) time.Duration {
		left := time.Until(deadline) - 20*time.Second // the report
		d := time.Duration(float64(left) * w / total)
		total -= w
		return max(d, 0)
	}
	// The test models run in one page per engine of ours (a WebGPU device
	// compiles each kernel once); the synthetic one alone, after them.
	var tiny, synth []*benchModel
	for _, m := range list {
		if m.synthetic {
			synth = append(synth, m)
		} else {
			tiny = append(tiny, m)
		}
	}
	for _, group := range [][]*benchModel{tiny, synth} {
		if len(group) == 0 {
			continue
		}
		wg, wc, wp, wl := wTinyGPU, wTinyCPU, wTinyPeer, wTinyLoad
		if group[0].synthetic {
			wg, wc, wp, wl = wSynthGPU, wSynthCPU, wSynthPeer, wSynthLoad
		}
		n := float64(len(group))
		each := func(w float64) []float64 {
			ws := make([]float64, len(group))
			for i := range ws {
				ws[i] = w
			}
			return ws
		}
		for i, e := range ours(br, page, group, each(wg), "webgpu", repeats, ctxLen, share(wg*n)) {
			group[i].rep.Engines = append(group[i].rep.Engines, e)
		}
		if peerDir != "" {
			for _, m := range group {
				m.rep.Engines = append(m.rep.Engines, peer(br, page, m, repeats, ctxLen, peerThreads, share(wp)))
			}
		}
		for i, e := range ours(br, page, group, each(wc), "cpu", repeats, ctxLen, share(wc*n)) {
			group[i].rep.Engines = append(group[i].rep.Engines, e)
		}
		for _, m := range group {
			m.rep.Load = load(br, page, m, share(wl))
		}
	}
	for _, m := range list {
		for _, e := range m.rep.Engines {
			for _, n := range summarizeSkips(e.Notes, repeats) {
				note("%s %s: %s", m.name, e.Engine, n)
			}
			if e.Error != "" {
				note("%s %s failed: %s", m.name, e.Engine, firstLine(e.Error))
			}
		}
		if l := m.rep.Load; l != nil && l.Error != "" {
			note("%s load failed: %s", m.name, firstLine(l.Error))
		} else if l != nil && l.Note != "" {
			note("%s load: %s", m.name, l.Note)
		}
	}
	rep.computeRatios()
	rep.Seconds = time.Since(start).Seconds()
	rep.LoadAvg[1] = loadAvg()
	return rep, nil
}

// listModels returns the test GGUF models (only stories260K with -short),
// filtered by o.Models.
func listModels(root string, o options) ([]*benchModel, error) {
	files, err := filepath.Glob(filepath.Join(root, "testdata/models/*.gguf"))
	if err != nil {
		return nil, err
	}
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
		out = append(out, &benchModel{name: name, gguf: f, decode: 64})
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
	if man, err := os.Stat(filepath.Join(dir, "manifest.json")); err != nil || src == nil || man.ModTime().Before(src.ModTime()) {
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
	m.bias = banNonASCII(tok)
	m.rep = &ModelReport{Name: m.name, File: m.gguf, Synthetic: m.synthetic, Decode: m.decode, Context: ctxLen}
	if rel, err := filepath.Rel(root, m.gguf); err == nil && !strings.HasPrefix(rel, "..") {
		m.rep.File = rel
	}
	return nil
}

// ours runs the probe's model phase: wasmllm on backend ("webgpu" or
// "cpu") on each model in turn in one page, each with its weight's part of
// the budget. It returns one report per model.
func ours(br *browser, page string, ms []*benchModel, weights []float64, backend string, repeats, ctxLen int, budget time.Duration) []*EngineReport {
	name := engineGPU
	if backend == "cpu" {
		name = engineCPU
	}
	out := make([]*EngineReport, len(ms))
	for i := range ms {
		out[i] = &EngineReport{Engine: name}
		if backend == "cpu" {
			out[i].Detail = "Go wasm, 1 thread"
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
		var prompts []map[string]any
		for _, p := range m.prompts {
			prompts = append(prompts, map[string]any{"len": p.Len, "ids": p.IDs[0]})
		}
		models = append(models, map[string]any{"name": m.name, "url": "/models/" + m.name + ".gguf", "weight": weights[i],
			"context": ctxLen, "decode": m.decode, "repeats": repeats, "prompts": prompts, "encode_steps": min(m.decode, 16)})
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
			e.Extra = map[string]any{"build_ms": r.BuildMs, "kv_dtype": r.KVDType, "layers": r.Layers, "hidden": r.Hidden, "vocab": r.Vocab}
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
		prompts = append(prompts, map[string]any{"len": p.Len, "texts": p.Texts})
	}
	cfg := map[string]any{"name": m.name, "url": "/models/" + m.name + ".gguf", "ctx": ctxLen, "threads": threads,
		"decode": m.decode, "repeats": repeats, "prompts": prompts, "logit_bias": m.bias, "budget_ms": budget.Milliseconds()}
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

// writeOutputs writes bench.json, bench.txt and decode_vs_context.svg into
// dir and the text to stdout.
func writeOutputs(r *Report, dir string) error {
	r.ChartFile = "decode_vs_context.svg"
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
func summarizeSkips(notes []string, repeats int) []string {
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
			parts = append(parts, fmt.Sprintf("%d of %d at prompt %d", count[l], repeats, l))
		}
		out = append(out, "runs skipped to keep within the time budget: "+strings.Join(parts, ", "))
	}
	return out
}
