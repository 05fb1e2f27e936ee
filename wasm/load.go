//go:build js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"syscall/js"
	"time"

	"wasmllm/api"
	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/gpu"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/tokenizer"
	"wasmllm/wasm/loading"
)

// loadOptions is the "load" message (createEngine's options, resolved).
type loadOptions struct {
	Model       string `json:"model"`          // absolute URL of the model folder, ending in "/"
	Backend     string `json:"backend"`        // "", "webgpu" or "cpu"
	Context     int    `json:"context_length"` // 0: the model's, at most loading.DefaultContext
	HeapBytes   int64  `json:"heap_bytes"`
	Concurrency int    `json:"concurrency"`
	MaxRetries  int    `json:"max_retries"`
	Cache       *bool  `json:"cache"`
	// CPURanks is the CPU engine's rank count (createEngine's cpuRanks):
	// 0 for the default (the cores, at most maxDefaultRanks), 1 for one.
	CPURanks int `json:"cpu_ranks"`
	// CPUMinShardBytes is the smallest weight split across the ranks (0:
	// cpu.DefaultMinShardBytes).
	CPUMinShardBytes int `json:"cpu_min_shard_bytes"`
	// KVCacheDtype is "", "f32", "f16" or "q8" (createEngine's
	// kvCacheDtype). The CPU backend keeps f32 for "" and "f16"; the load
	// info reports the type used.
	KVCacheDtype string `json:"kv_cache_dtype"`
	// Persist asks for persistent storage before a download of at least
	// PersistBytes (-1: the loader's 1 GiB).
	Persist      *bool `json:"persist"`
	PersistBytes int64 `json:"persist_bytes"`
	// StorageEstimate replaces navigator.storage.estimate() (tests).
	StorageEstimate *struct {
		Quota int64 `json:"quota"`
		Usage int64 `json:"usage"`
	} `json:"storage_estimate"`
	// Local is set on a converted GGUF's folder (wasm/gguf.go): it lies in
	// Cache Storage (or memory) alone.
	Local bool `json:"-"`
	// PerLayerEmbeddings is where Gemma 4's per-layer embedding table
	// goes on WebGPU (createEngine's perLayerEmbeddings): "" or "auto",
	// "gpu", or "host" (the worker's memory, a row uploaded per token).
	PerLayerEmbeddings string `json:"per_layer_embeddings"`
	// Limits lower the WebGPU device's limits (tests, or to leave room).
	Limits struct {
		MaxStorageBufferBindingSize uint64 `json:"maxStorageBufferBindingSize"`
		MaxBufferSize               uint64 `json:"maxBufferSize"`
	} `json:"limits"`
}

// loadedModel is a model ready for requests.
type loadedModel struct {
	runner *api.Runner
	dev    *gpu.Device  // nil on the CPU backend
	cpu    *cpu.Backend // nil on WebGPU; its ranks end with the model
	info   map[string]any
}

// loadSource is what a successful load read before the shards. The worker
// keeps it after a device loss, so that "reload" builds the same model
// again with no network request: the manifest and tokenizer from here, the
// shards from Cache Storage.
type loadSource struct {
	opts         loadOptions
	manifestText string
	m            *manifest.Manifest
	tok          *tokenizer.Tokenizer
}

// unload frees the loaded model; the load source stays for reload.
func (w *worker) unload() {
	if w.loaded == nil {
		return
	}
	if w.loaded.dev != nil {
		w.loaded.dev.Close()
	}
	if w.loaded.cpu != nil {
		w.loaded.cpu.Close()
	}
	w.loaded = nil
	runtime.GC()
}

// forget unloads the model and drops its load source and any loss.
func (w *worker) forget() {
	w.unload()
	w.src, w.lost = nil, nil
}

// load runs the "load" message.
func (w *worker) load(j job) (map[string]any, error) {
	var o loadOptions
	if err := json.Unmarshal([]byte(j.body), &o); err != nil {
		return nil, api.Errorf(api.CodeBadRequest, "load options: %v", err)
	}
	if o.Model == "" {
		return nil, api.Errorf(api.CodeBadRequest, "load options: model is required")
	}
	switch o.Backend {
	case "", "auto", loading.BackendWebGPU, loading.BackendCPU:
	default:
		return nil, api.Errorf(api.CodeBadRequest, `load options: backend %q: want "webgpu" or "cpu"`, o.Backend)
	}
	if _, err := kvDType(o.KVCacheDtype); err != nil {
		return nil, err
	}
	w.forget()
	return w.build(j, o, nil)
}

// reload runs the "reload" message: it builds the last loaded model again
// on a newly opened backend (after a device loss, or at any time), from the
// load source kept in memory and the shards in Cache Storage.
func (w *worker) reload(j job) (map[string]any, error) {
	src := w.src
	if src == nil {
		return nil, api.Errorf(api.CodeNotLoaded, "nothing to reload: no model was loaded")
	}
	w.unload()
	return w.build(j, src.opts, src)
}

// build opens the backend, reads and checks the manifest, checks the
// storage quota, fetches the tokenizer, then downloads, verifies and caches
// the shards while their tensors are copied out, and builds the engine: the
// phases of a loadRun, each timed. With src (a reload), the manifest and
// tokenizer come from src instead.
func (w *worker) build(j job, o loadOptions, src *loadSource) (map[string]any, error) {
	ctx, cancel := context.WithCancel(j.ctx)
	defer cancel()
	r := newLoadRun(ctx, j.id, o, src)
	defer r.stop()
	if src == nil {
		r.gguf = ggufModel(j, o)
	}
	var err error
	if r.be, err = openBackend(ctx, &r.o); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok && r.be.dev != nil {
			r.be.dev.Close()
		}
		if !ok && r.be.cpu != nil {
			r.be.cpu.Close()
		}
	}()
	r.phase("backend")
	type phase struct {
		name string
		run  func() error
	}
	var phases []phase
	if r.gguf.Truthy() {
		phases = append(phases, phase{"gguf", r.convertGGUF})
	} else if r.o.Local {
		phases = append(phases, phase{"gguf", r.openLocal})
	}
	for _, p := range append(phases, []phase{
		{"manifest", r.readManifest},
		{"quota", r.checkQuota},
		{"tokenizer", r.readTokenizer},
		{"shards", r.downloadShards},
		{"build", r.buildEngine},
	}...) {
		if err := p.run(); err != nil {
			return nil, err
		}
		r.phase(p.name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := await(r.loader.Call("commit", r.o.Model, r.manifestText, js.ValueOf(r.jsOpts))); err != nil {
		return nil, err
	}
	ok = true
	info := r.info()
	w.loaded = &loadedModel{runner: &api.Runner{Engine: r.eng, Model: r.m.Name}, dev: r.be.dev, cpu: r.be.cpu, info: info}
	w.src = &loadSource{opts: r.o, manifestText: r.manifestText, m: r.m, tok: r.tok}
	w.lost = nil
	return info, nil
}

// loadRun is one load in progress: what each phase reads and makes.
type loadRun struct {
	ctx    context.Context
	id     int
	o      loadOptions
	src    *loadSource // a reload's manifest and tokenizer, or nil
	jsOpts map[string]any
	loader js.Value // self.__wasmllmLoader (web/worker.js)
	stop   func() bool

	start, mark time.Time
	phases      map[string]float64

	be                *backend
	manifestText      string
	m                 *manifest.Manifest
	manifestFromCache bool
	kv                loader.DType
	plan              *loading.Plan
	shardsJSON        string
	tok               *tokenizer.Tokenizer
	asm               *loading.Assembler // the tensors copied out of the shards
	download          js.Value           // the loader's download result
	directBytes       int64              // weights written from JavaScript straight to the GPU
	persist           map[string]any     // navigator.storage.persist()'s answer, or nil
	eng               *engine.Engine

	gguf     js.Value       // a GGUF to convert (wasm/gguf.go), or undefined
	ggufInfo map[string]any // what its conversion did, for info
	local    js.Value       // a converted GGUF's folder (loader.js localFolder)
}

func newLoadRun(ctx context.Context, id int, o loadOptions, src *loadSource) *loadRun {
	ac := js.Global().Get("AbortController").New()
	r := &loadRun{ctx: ctx, id: id, o: o, src: src, loader: js.Global().Get("__wasmllmLoader"),
		start: time.Now(), mark: time.Now(), phases: map[string]float64{},
		stop: context.AfterFunc(ctx, func() { ac.Call("abort") })}
	r.jsOpts = map[string]any{
		"signal":      ac.Get("signal"),
		"concurrency": o.Concurrency,
		"maxRetries":  o.MaxRetries,
		"cache":       o.Cache == nil || *o.Cache,
	}
	r.jsOpts["persist"] = o.Persist == nil || *o.Persist
	if o.PersistBytes >= 0 && o.Persist != nil {
		r.jsOpts["persistBytes"] = o.PersistBytes
	}
	if e := o.StorageEstimate; e != nil {
		r.jsOpts["estimate"] = map[string]any{"quota": e.Quota, "usage": e.Usage}
	}
	return r
}

// phase records the time since the previous phase under name.
func (r *loadRun) phase(name string) {
	r.phases[name] = msSince(r.mark)
	r.mark = time.Now()
}

// readManifest fetches and parses the manifest (a reload's is kept) and
// checks it, and the KV cache it asks for, against the backend's limits.
func (r *loadRun) readManifest() error {
	if r.src != nil {
		r.manifestText, r.m = r.src.manifestText, r.src.m
	} else {
		mv, err := await(r.loader.Call("manifest", r.o.Model, js.ValueOf(r.jsOpts)))
		if err != nil {
			return err
		}
		r.manifestText, r.manifestFromCache = mv.Get("text").String(), mv.Get("fromCache").Truthy()
		if r.m, err = manifest.Parse([]byte(r.manifestText)); err != nil {
			return &api.Error{Code: api.CodeBadModel, Message: r.o.Model + ": " + err.Error(), Err: err}
		}
	}
	var err error
	if r.kv, err = r.kvType(); err != nil {
		return err
	}
	lim := r.be.limits
	if lim.PerLayer, err = loading.ParsePerLayer(r.o.PerLayerEmbeddings); err != nil {
		return err
	}
	r.plan, err = loading.CheckKV(r.m, lim, r.o.Context, r.kv)
	return err
}

// kvType is the KV cache's type on this load's backend.
func (r *loadRun) kvType() (loader.DType, error) {
	kv, err := kvDType(r.o.KVCacheDtype)
	switch {
	case err != nil:
	case r.be.name == loading.BackendCPU && kv == loader.F16:
		// The CPU backend's SIMD attention reads f32: f16 (the default)
		// is f32 there; q8 is kept, for its memory.
		kv = loader.F32
	case r.be.name == loading.BackendWebGPU && kv == model.KVQ8 && !gpuQ8(r.m.Config):
		// The WebGPU kernels read q8 in units of 16 values: the nearest
		// cache they have for other heads, said in engine.info.
		kv = loader.F16
		if note := "The WebGPU q8 KV cache needs heads of a multiple of 16 values: the cache is f16."; !strings.Contains(r.be.notice, note) {
			r.be.notice = strings.TrimSpace(r.be.notice + " " + note)
		}
	}
	return kv, err
}

// checkQuota checks that the shards not cached yet fit the storage quota.
func (r *loadRun) checkQuota() error {
	b, _ := json.Marshal(r.m.Shards)
	r.shardsJSON = string(b)
	q, err := await(r.loader.Call("quota", r.id, r.o.Model, r.shardsJSON, js.ValueOf(r.jsOpts)))
	if err == nil {
		if p := q.Get("persist"); p.Type() == js.TypeObject {
			r.persist = map[string]any{"granted": p.Get("granted").Truthy(), "asked": p.Get("asked").Truthy(), "already": p.Get("already").Truthy()}
		}
	}
	return err
}

// readTokenizer fetches the tokenizer files (a reload's tokenizer is kept).
func (r *loadRun) readTokenizer() error {
	if r.src != nil {
		r.tok = r.src.tok
		return nil
	}
	var err error
	r.tok, err = fetchTokenizer(r.o.Model, r.m, r.jsOpts)
	return err
}

// downloadShards downloads, verifies and caches the shards; as each one
// arrives its tensors are copied out: on WebGPU most go from the verified
// shard's JavaScript bytes straight into GPU buffers, the rest into Go.
func (r *loadRun) downloadShards() error {
	asm := loading.NewAssembler(r.m, r.o.Model)
	r.asm = asm
	if r.plan.PerLayerOnHost {
		asm.OnHost = map[string]bool{model.NamePLEmbed: true}
	}
	var shard js.Value
	// Tensors in parts are staged in JavaScript, and go to the GPU or the
	// ranks from there as the others do from their shard.
	stager := &jsStager{shard: &shard, bufs: map[string]js.Value{}}
	asm.Stager = stager
	bytesOf := func(ti *manifest.TensorInfo) (js.Value, int64) {
		if b, ok := stager.bufs[ti.Name]; ok {
			return b, 0
		}
		return shard, ti.Offset
	}
	if gb, ok := r.be.b.(*gpu.Backend); ok {
		asm.Upload = func(ti *manifest.TensorInfo) (model.Tensor, error) {
			d, _ := ti.Type()
			src, at := bytesOf(ti)
			t, err := gb.UploadJS(ti.Name, d, ti.Shape, src.Call("subarray", at, at+ti.Bytes))
			if err != nil {
				return nil, err
			}
			r.directBytes += ti.Bytes
			return t, nil
		}
	}
	if cb := r.be.cpu; cb != nil && cb.Ranks() > 1 {
		// The matrices split across the CPU ranks go to them straight
		// from the shard, one rank's rows at a time: rank 0's heap never
		// holds them whole.
		asm.Upload = func(ti *manifest.TensorInfo) (model.Tensor, error) {
			d, _ := ti.Type()
			src, at := bytesOf(ti)
			t, err := cb.UploadFrom(ti.Name, d, ti.Shape, ti.Bytes, func(dst []byte, off int64) {
				js.CopyBytesToGo(dst, src.Call("subarray", at+off, at+off+int64(len(dst))))
			})
			if t == nil || err != nil {
				return nil, err
			}
			return t, nil
		}
	}
	onShard := js.FuncOf(func(_ js.Value, a []js.Value) any {
		i, u8 := arg(a, 0).Int(), arg(a, 1)
		shard = u8
		defer func() { shard = js.Undefined() }()
		err := asm.AddShard(i, int64(u8.Get("byteLength").Int()), func(dst []byte, off int64) {
			js.CopyBytesToGo(dst, u8.Call("subarray", off, off+int64(len(dst))))
		})
		if err != nil {
			return jsValueOf(api.Classify(err))
		}
		return nil
	})
	defer onShard.Release()
	var err error
	r.download, err = await(r.loader.Call("download", r.id, r.o.Model, r.shardsJSON, onShard, js.ValueOf(r.jsOpts)))
	return err
}

// jsStager stages the tensors in parts (loading.Stager) in a Uint8Array
// each, copied from the shard being added (*shard).
type jsStager struct {
	shard *js.Value
	bufs  map[string]js.Value
}

func (s *jsStager) Stage(name string, n int64) {
	s.bufs[name] = js.Global().Get("Uint8Array").New(n)
}

func (s *jsStager) Put(name string, at int64, p manifest.Part, _ func([]byte, int64)) {
	s.bufs[name].Call("set", s.shard.Call("subarray", p.Offset, p.Offset+p.Bytes), at)
}

func (s *jsStager) Take(name string) []byte {
	b := s.bufs[name]
	data := make([]byte, b.Length())
	js.CopyBytesToGo(data, b)
	delete(s.bufs, name)
	return data
}

func (s *jsStager) Drop(name string) { delete(s.bufs, name) }

// buildEngine builds the model and the engine from the assembled weights,
// lets go of the host copies and waits for the device to finish the
// uploads.
func (r *loadRun) buildEngine() error {
	weights, err := r.asm.Weights()
	if err != nil {
		return err
	}
	r.asm = nil
	weights.PerLayerOnHost = r.plan.PerLayerOnHost
	mdl, err := model.Build(r.be.b, weights)
	if err != nil {
		return err
	}
	if r.eng, err = engine.New(mdl, r.tok, engine.Options{Context: r.plan.Context, KVDType: r.kv, PrefillChunk: r.plan.PrefillChunk}); err != nil {
		return err
	}
	runtime.GC()
	if r.be.dev != nil {
		return r.be.dev.Sync()
	}
	return nil
}

// info is what the page is told about the loaded model.
func (r *loadRun) info() map[string]any {
	tok, m := r.tok, r.m
	info := map[string]any{
		"backend":        r.be.name,
		"notice":         r.be.notice,
		"adapter":        r.be.adapter,
		"limits":         r.be.deviceLimits,
		"context_length": r.eng.Context(),
		"kv_cache_dtype": model.KVDTypeName(r.eng.KVDType()),
		"cpu_simd":       cpu.SIMD(),
		"cpu_ranks":      r.be.ranks,
		"cpu_ranks_note": r.be.ranksNote,
		"model": map[string]any{
			"name": m.Name, "url": r.o.Model, "arch": m.Arch, "quant": m.Quant, "config": m.Config,
			"bytes": m.TotalBytes(), "shards": len(m.Shards), "tensors": len(m.Tensors),
			"has_tokenizer": tok != nil, "has_chat_template": tok != nil && tok.ChatTemplate() != "",
			// The template has Qwen3's thinking switch (chat_template_kwargs.enable_thinking).
			"thinking": tok != nil && strings.Contains(tok.ChatTemplate(), "enable_thinking"),
		},
		"plan": map[string]any{"weight_bytes": r.plan.WeightBytes, "kv_bytes": r.plan.KVBytes,
			"kv_bytes_per_token": r.plan.KVBytesPerToken, "state_bytes": r.plan.StateBytes,
			"activation_bytes": r.plan.ActivationBytes, "prefill_chunk": r.plan.PrefillChunk,
			"per_layer_on_host": r.plan.PerLayerOnHost, "per_layer_host_bytes": r.plan.PerLayerHostBytes,
			"per_layer_token_bytes": r.plan.PerLayerTokenBytes},
		"load": map[string]any{
			"ms":                  msSince(r.start),
			"phases_ms":           r.phases,
			"network_bytes":       v8(r.download, "networkBytes"),
			"cached_bytes":        v8(r.download, "cachedBytes"),
			"manifest_from_cache": r.manifestFromCache,
			"gpu_direct_bytes":    r.directBytes,
			"reload":              r.src != nil,
			// What the browser said to navigator.storage.persist() before
			// a large download (null when not asked).
			"persist": r.persist,
		},
	}
	if r.ggufInfo != nil {
		info["gguf"] = r.ggufInfo
	}
	return info
}

// gpuQ8 reports whether the WebGPU kernels read a q8 cache of c's heads:
// every KV group's head dim a multiple of 16 (stories260K's 8 is not).
func gpuQ8(c model.Config) bool {
	if groups, _, _ := c.KVGroups(); len(groups) > 1 {
		for _, g := range groups {
			if g.HeadDim%16 != 0 {
				return false
			}
		}
		return true
	}
	return c.HeadDim%16 == 0
}

// kvDType parses the kvCacheDtype option: "f32" is F32, "" (the default)
// or "f16" F16, "q8" model.KVQ8. The CPU backend keeps F32 for F16
// (loadRun.kvType).
func kvDType(s string) (loader.DType, error) {
	if s == "" {
		return loader.F16, nil
	}
	if dt, ok := model.ParseKVDType(s); ok {
		return dt, nil
	}
	return 0, &api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf(`load options: kvCacheDtype %q: want "f32", "f16" or "q8"`, s),
		Details: map[string]any{"param": "kvCacheDtype"}}
}

// fetchTokenizer fetches the model's tokenizer files and builds the
// tokenizer (nil for a model folder without one).
func fetchTokenizer(model string, m *manifest.Manifest, jsOpts map[string]any) (*tokenizer.Tokenizer, error) {
	spec, err := loading.TokenizerFiles(m)
	if err != nil || spec == nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, name := range spec.Names() {
		// The loader checks the sha256 before it caches the file.
		v, err := await(js.Global().Get("__wasmllmLoader").Call("file", model, name, js.ValueOf(jsOpts), spec.SHA256[name]))
		if err != nil {
			return nil, err
		}
		b := make([]byte, v.Get("byteLength").Int())
		js.CopyBytesToGo(b, v)
		files[name] = b
	}
	return loading.BuildTokenizer(m, files)
}

func v8(v js.Value, key string) int64 {
	if x := v.Get(key); x.Type() == js.TypeNumber {
		return int64(x.Float())
	}
	return 0
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// backend is an opened backend and what the page is told about it.
type backend struct {
	name      string
	b         model.Backend
	dev       *gpu.Device
	cpu       *cpu.Backend // the CPU backend, whose ranks must be closed
	ranks     int          // the CPU engine's ranks (0 on WebGPU)
	ranksNote string       // why it runs fewer ranks than asked, or ""

	limits       loading.Limits
	notice       string
	adapter      any
	deviceLimits any
}

// openBackend opens WebGPU unless the CPU was asked for; without WebGPU
// it falls back to the CPU with a notice, unless WebGPU was asked for. Left
// to choose, it also takes the CPU when the only adapter is a software
// renderer (SwiftShader), which runs the kernels far slower than the CPU
// backend runs the model.
func openBackend(ctx context.Context, o *loadOptions) (*backend, error) {
	cpuBackend := func(notice string) *backend {
		cb, ranks, note := openCPU(o.CPURanks, o.CPUMinShardBytes)
		return &backend{name: loading.BackendCPU, b: cb, cpu: cb, ranks: ranks, ranksNote: note, notice: notice,
			limits: loading.Limits{Backend: loading.BackendCPU, HeapBytes: o.HeapBytes, Ranks: ranks, MinShardBytes: cb.MinShard()}}
	}
	if o.Backend == loading.BackendCPU {
		return cpuBackend(""), nil
	}
	b, d, err := gpu.OpenBackend(ctx, gpu.Options{MaxStorageBufferBindingSize: o.Limits.MaxStorageBufferBindingSize, MaxBufferSize: o.Limits.MaxBufferSize}, gpu.BackendOptions{})
	if err != nil {
		if o.Backend == loading.BackendWebGPU {
			return nil, &api.Error{Code: api.CodeNoWebGPU, Message: err.Error(), Err: err}
		}
		return cpuBackend("WebGPU is not available (" + err.Error() + "); running on the CPU, which is much slower."), nil
	}
	if d.AdapterInfo.Fallback && o.Backend != loading.BackendWebGPU {
		name := d.AdapterInfo.Architecture
		d.Close()
		return cpuBackend("WebGPU runs on a software renderer here (" + name + "), slower than the CPU engine; running on the CPU. Ask for the webgpu backend to use it anyway."), nil
	}
	return &backend{
		name: loading.BackendWebGPU, b: b, dev: d,
		limits: loading.Limits{Backend: loading.BackendWebGPU, HeapBytes: o.HeapBytes, PrefillChunk: b.PrefillChunk(),
			MaxStorageBufferBindingSize: d.Limits.MaxStorageBufferBindingSize, MaxBufferSize: d.Limits.MaxBufferSize},
		adapter: map[string]any{"vendor": d.AdapterInfo.Vendor, "architecture": d.AdapterInfo.Architecture,
			"device": d.AdapterInfo.Device, "description": d.AdapterInfo.Description, "fallback": d.AdapterInfo.Fallback,
			"shader_f16": d.Features.ShaderF16, "subgroups": d.Features.Subgroups},
		deviceLimits: map[string]any{"maxStorageBufferBindingSize": d.Limits.MaxStorageBufferBindingSize,
			"maxBufferSize": d.Limits.MaxBufferSize},
	}, nil
}

// maxDefaultRanks caps the default rank count: past four workers the
// exchanges cost more than a browser's cores give.
const maxDefaultRanks = 4

// openCPU opens the CPU backend on asked ranks (0: the cores, at most
// maxDefaultRanks): ranks past the first are Web Workers, which need a
// cross-origin isolated page; without one, or if they fail to start, one
// rank runs and the note says why.
func openCPU(asked, minShard int) (*cpu.Backend, int, string) {
	n := asked
	if n <= 0 {
		n = 1
		if c := js.Global().Get("navigator").Get("hardwareConcurrency"); c.Type() == js.TypeNumber {
			n = min(max(1, c.Int()), maxDefaultRanks)
		}
	}
	if n == 1 {
		return cpu.New(1), 1, ""
	}
	if ok, why := cpu.RanksAvailable(); !ok {
		return cpu.New(1), 1, fmt.Sprintf("one rank, not %d: %s", n, why)
	}
	b, err := cpu.NewRanks(cpu.RankOptions{Ranks: n, MinShardBytes: minShard})
	if err != nil {
		return cpu.New(1), 1, fmt.Sprintf("one rank, not %d: %v", n, err)
	}
	return b, n, ""
}
