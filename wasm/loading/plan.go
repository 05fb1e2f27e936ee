package loading

import (
	"fmt"
	"strings"

	"wasmllm/cpu"
	wgpu "wasmllm/gpu"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// Backends.
const (
	BackendWebGPU = "webgpu"
	BackendCPU    = "cpu"
)

// DefaultHeapBytes bounds the model bytes held by the Go heap of the wasm
// module (a 32-bit address space, shared with the runtime and the garbage
// collector's headroom).
const DefaultHeapBytes = 2 << 30

// DefaultContext is the KV cache capacity when none is asked for and the
// model allows more.
const DefaultContext = 4096

// minAutoContext is the shortest context a load shrinks the default to
// on the CPU to fit its heap; below it the load is refused, with a hint.
const minAutoContext = 256

// MaxShardBytes is the largest shard the browser loader takes: it holds a
// shard in one ArrayBuffer while verifying it.
const MaxShardBytes = 1 << 30

// Limits are what the chosen backend can hold.
type Limits struct {
	Backend string // BackendWebGPU or BackendCPU
	// MaxStorageBufferBindingSize and MaxBufferSize are the WebGPU device's
	// limits. A weight larger than a binding is split by rows (experts stay
	// whole), so what must fit is one row, or one expert's rows.
	MaxStorageBufferBindingSize uint64
	MaxBufferSize               uint64
	// HeapBytes bounds the bytes the Go heap holds at once: the whole model
	// and its KV cache on the CPU backend, the downloaded weights on WebGPU
	// (they pass through Go on their way to the GPU). 0 means
	// DefaultHeapBytes.
	HeapBytes int64
	// Ranks is the CPU engine's rank count; each rank has a heap of its
	// own, and the large matrices (cpu.Shardable with MinShardBytes) are
	// split across them, so the model may be up to Ranks times one heap.
	Ranks         int
	MinShardBytes int
	// PrefillChunk is the tokens of a prefill batch (the engine's
	// PrefillChunk; 0 means DefaultPrefillChunk).
	PrefillChunk int
	// PerLayer is where Gemma 4's per-layer embedding table goes on
	// WebGPU: PerLayerAuto (the zero value), PerLayerGPU or PerLayerHost.
	PerLayer PerLayerPlace
}

// PerLayerPlace is where a WebGPU plan keeps Gemma 4's per-layer
// embedding table (model.NamePLEmbed), which is read one row per token.
type PerLayerPlace int

const (
	// PerLayerAuto keeps the table in the worker's memory when it is
	// larger than the rest of the weights on the GPU (Gemma 4 E2B's is
	// several times larger) and the heap holds it; on the GPU otherwise.
	PerLayerAuto PerLayerPlace = iota
	// PerLayerGPU keeps it in GPU buffers (split by rows as any tensor).
	PerLayerGPU
	// PerLayerHost keeps it in the worker's memory.
	PerLayerHost
)

// ParsePerLayer reads createEngine's perLayerEmbeddings: "" or "auto",
// "gpu", "host"; anything else is an *OptionError.
func ParsePerLayer(s string) (PerLayerPlace, error) {
	switch s {
	case "", "auto":
		return PerLayerAuto, nil
	case "gpu":
		return PerLayerGPU, nil
	case "host":
		return PerLayerHost, nil
	}
	return 0, &OptionError{Msg: fmt.Sprintf("perLayerEmbeddings %q: want \"auto\", \"gpu\" or \"host\"", s)}
}

// StateCopies is how many copies of a recurrent model's states
// (model.Config.StateBytes) the engine keeps: the live states, the
// checkpoint at the last prompt's end (engine's prefix reuse), and on
// WebGPU the states a pipelined decode step saves before it is submitted
// ahead of its input's readback (the CPU reads synchronously and never
// goes ahead).
func StateCopies(gpu bool) int {
	if gpu {
		return 3
	}
	return 2
}

// DefaultPrefillChunk is engine.Options.PrefillChunk's default.
const DefaultPrefillChunk = 128

// Plan is the outcome of checking a manifest against Limits.
type Plan struct {
	Context     int   // KV cache capacity in tokens
	WeightBytes int64 // weights as the backend stores them
	KVBytes     int64 // the whole KV cache, and the recurrent states of Gated DeltaNet layers (f32)
	// StateBytes is the part of KVBytes that is recurrent state, every copy
	// the engine keeps (StateCopies): fixed, whatever the context (0 for a
	// model without Gated DeltaNet layers).
	StateBytes int64
	KVDType    loader.DType
	// KVBytesPerToken is the keys and values of one position over every
	// attention layer, in KVDType (model.KVRowBytes, twice, per layer).
	KVBytesPerToken int64
	DownloadBytes   int64 // the shards
	// ActivationBytes is the activations of a decode step and of a
	// prefill batch of PrefillChunk tokens (model.ScratchBytes): what a
	// prompt and its answer allocate beside the weights and the KV cache.
	ActivationBytes int64
	PrefillChunk    int // tokens per prefill batch, at most Context
	// PerLayerOnHost: Gemma 4's per-layer embedding table stays in the
	// worker's memory (PerLayerHostBytes of it, not in WeightBytes), and
	// each token uploads its row, PerLayerTokenBytes (L·P f32 values).
	PerLayerOnHost     bool
	PerLayerHostBytes  int64
	PerLayerTokenBytes int64
}

// Check verifies, before anything is downloaded, that every tensor of m
// and a KV cache of context tokens (0: the model's maximum, at most
// DefaultContext, lowered to what the device holds) fit the backend.
func Check(m *manifest.Manifest, lim Limits, context int) (*Plan, error) {
	return CheckKV(m, lim, context, loader.F32)
}

// CheckKV is Check for a KV cache that stores kv: F32, F16 (2 bytes a
// value instead of 4) or model.KVQ8 (1 byte a value and an f32 scale per
// block: model.KVRowBytes). The caller passes the type the backend will
// use.
func CheckKV(m *manifest.Manifest, lim Limits, context int, kv loader.DType) (*Plan, error) {
	if model.KVRowBytes(kv, 1, 32) == 0 {
		return nil, &OptionError{Msg: fmt.Sprintf("KV cache dtype %v: want F32, F16 or Q8_0 (q8)", kv)}
	}
	heap := lim.HeapBytes
	if heap <= 0 {
		heap = DefaultHeapBytes
	}
	gpu := lim.Backend == BackendWebGPU
	buf := lim.MaxStorageBufferBindingSize
	bufName := "maxStorageBufferBindingSize"
	if lim.MaxBufferSize < buf {
		buf, bufName = lim.MaxBufferSize, "maxBufferSize"
	}
	p := &Plan{DownloadBytes: m.TotalBytes(), KVDType: kv}
	var hostBytes int64 // the Go heap's share on WebGPU
	// On the CPU with ranks: what rank 0 and each peer hold, and what
	// passes through rank 0's heap as a split tensor is handed out (one
	// rank's rows at a time, cpu.Backend.UploadFrom: twice a share, for
	// the rows in flight and rank 0's own before they are widened).
	var rank0, peer, transit int64
	var plHost, plGPU int64 // the per-layer table's bytes in the shards and on the GPU
	ranks := max(1, lim.Ranks)
	for i := range m.Tensors {
		t := &m.Tensors[i]
		d, ok := t.Type()
		if !ok {
			return nil, modelErrorf("manifest.json: tensor %q has an unknown dtype %q", t.Name, t.DType)
		}
		if d == loader.Mixed {
			continue // its row blocks are entries of their own, counted there
		}
		n := int64(1)
		for _, x := range t.Shape {
			n *= int64(x)
		}
		cols := int64(1)
		if len(t.Shape) > 0 {
			cols = int64(t.Shape[len(t.Shape)-1])
		}
		unit := int64(1)
		if len(t.Shape) == 3 {
			unit = int64(t.Shape[1])
		}
		if gpu {
			row := gpuRowBytes(d, cols)
			if kquantOnGPU(d, t.Shape) {
				row = cols / 256 * int64(wgpu.KQuantBlockBytes(d))
			}
			if need := row * unit; uint64(need) > buf {
				what := "one row"
				if unit > 1 {
					what = "one expert"
				}
				return nil, &TooLargeError{What: fmt.Sprintf("tensor %q (%v %s): %s", t.Name, t.Shape, t.DType, what),
					Limit: "the device's " + bufName, Need: need, Have: int64(buf)}
			}
			onGPU := gpuBytes(d, n, t.Bytes)
			if kquantOnGPU(d, t.Shape) {
				onGPU = n / 256 * int64(wgpu.KQuantBlockBytes(d))
			}
			p.WeightBytes += onGPU
			if t.Name == model.NamePLEmbed && loader.CanDequantize(d) {
				plHost, plGPU = t.Bytes, onGPU
			}
			if !ResidentOnGPU(t) {
				hostBytes += t.Bytes
			}
		} else {
			b := cpuBytes(d, n, t.Bytes)
			p.WeightBytes += b
			if cpu.Shardable(d, t.Shape, t.Bytes, ranks, lim.MinShardBytes) {
				share := (b + int64(ranks) - 1) / int64(ranks)
				rank0 += share
				peer += share
				transit = max(transit, 2*((t.Bytes+int64(ranks)-1)/int64(ranks)))
			} else {
				rank0 += b
			}
		}
	}
	c := &m.Config
	ctx := context
	asked := ctx > 0
	if !asked {
		ctx = c.MaxContext
		if ctx <= 0 || ctx > DefaultContext {
			ctx = DefaultContext
		}
	}
	if ctx > model.MaxContext {
		return nil, &OptionError{Msg: fmt.Sprintf("a context of %d tokens: at most %d", ctx, model.MaxContext)}
	}
	// The manifest's config is validated (Layers <= MaxLayers, KVHeads <=
	// MaxHeads, HeadDim <= MaxHeadDim), so 2*Layers*ctx*row stays far
	// below 2^63 (2^58 at most).
	if err := c.Validate(); err != nil {
		return nil, &ModelError{Msg: "manifest.json: " + err.Error(), Err: err}
	}
	if gpu {
		if err := wgpu.CheckConfig(c); err != nil {
			return nil, err
		}
		if plHost > 0 && (lim.PerLayer == PerLayerHost ||
			lim.PerLayer == PerLayerAuto && plGPU > p.WeightBytes-plGPU && hostBytes+plHost <= heap) {
			p.WeightBytes -= plGPU
			hostBytes += plHost
			p.PerLayerOnHost, p.PerLayerHostBytes, p.PerLayerTokenBytes = true, plHost, model.PerLayerRowBytes(c)
		}
	}
	// Only attention layers keep keys and values; a Gated DeltaNet layer
	// keeps a fixed-size f32 state instead, whatever the context.
	// A model whose layers differ in KV heads or head dim (Gemma 4) keeps
	// one cache per KV group, and a layer sharing another's KV keeps
	// none: kvLayers·row is the values of one position over them all,
	// row the largest group's (a binding holds one layer of one group).
	kvLayers := int64(c.AttentionLayers())
	// The engine keeps the states in StateCopies copies: the live ones,
	// the prompt's checkpoint, and on WebGPU the copy a pipelined decode
	// step saves before it goes ahead.
	states := c.StateBytes() * int64(StateCopies(gpu))
	row := model.KVRowBytes(kv, c.KVHeads, c.HeadDim)
	if groups, _, _ := c.KVGroups(); len(groups) > 1 {
		var perPos int64
		row = 0
		for _, g := range groups {
			r := model.KVRowBytes(kv, g.KVHeads, g.HeadDim)
			perPos += int64(g.Layers) * r
			row = max(row, r)
		}
		kvLayers = (perPos + row - 1) / row // whole rows of the largest group
	}
	if gpu && c.Hybrid() {
		// each layer's state is one buffer, and so is a prefill chunk's
		// scratch (wgpu.DeltaNetBindings)
		for _, sp := range c.Specs() {
			if !sp.IsDeltaNet() {
				continue
			}
			state, scratch := wgpu.DeltaNetBindings(sp.DeltaNet)
			for _, b := range []struct {
				what string
				need int64
			}{{"a Gated DeltaNet layer's recurrent state", state}, {"a Gated DeltaNet prefill chunk's scratch", scratch}} {
				if uint64(b.need) > buf {
					return nil, &TooLargeError{What: b.what, Limit: "the device's " + bufName, Need: b.need, Have: int64(buf)}
				}
			}
			break // every linear layer has the same spec
		}
	}
	if gpu {
		if fit := int64(buf) / row; int64(ctx) > fit {
			if asked || fit < 1 {
				return nil, &TooLargeError{What: fmt.Sprintf("a KV cache of %d tokens (per layer)", ctx), Limit: "the device's " + bufName,
					Need: int64(ctx) * row, Have: int64(buf), Hint: fmt.Sprintf("the device holds at most %d tokens", fit)}
			}
			ctx = int(fit)
		}
	}
	// The activations: a decode step's and a prefill batch's (never
	// longer than the context). On WebGPU each is one buffer, so the
	// largest must fit a binding: a shorter batch when it does not.
	chunk := lim.PrefillChunk
	if chunk <= 0 {
		chunk = DefaultPrefillChunk
	}
	chunk = min(chunk, ctx)
	if gpu {
		if _, big := model.ScratchBytes(c, 1, true); uint64(big) > buf {
			return nil, &TooLargeError{What: "the activations of one token (the largest buffer)", Limit: "the device's " + bufName, Need: big, Have: int64(buf)}
		}
		for chunk > 1 {
			if _, big := model.ScratchBytes(c, chunk, false); uint64(big) <= buf {
				break
			}
			chunk--
		}
	}
	step, _ := model.ScratchBytes(c, 1, true)
	batch, _ := model.ScratchBytes(c, chunk, false)
	p.PrefillChunk = chunk
	p.ActivationBytes = step
	if chunk > 1 {
		p.ActivationBytes += batch
	}
	// On the CPU a context nobody asked for shrinks to what the heap
	// leaves beside the weights (the fullest rank's) and the activations,
	// down to minAutoContext, as on WebGPU it shrinks to the binding limit.
	if !gpu && !asked {
		onHeap := p.WeightBytes + p.ActivationBytes
		if ranks > 1 {
			onHeap = rank0 + transit + p.ActivationBytes
		}
		if fit := (heap - onHeap - states) / (2 * max(kvLayers, 1) * row); fit < int64(ctx) && fit >= minAutoContext {
			ctx = int(fit)
		}
	}
	p.Context = ctx
	p.KVBytesPerToken = 2 * kvLayers * row
	p.KVBytes = p.KVBytesPerToken*int64(ctx) + states
	p.StateBytes = states
	if gpu {
		// Most weights go from JavaScript to the GPU; the Go heap holds the
		// others.
		if need := hostBytes; need > heap {
			return nil, &TooLargeError{What: fmt.Sprintf("loading %s of weights through Go", bytesText(hostBytes)),
				Limit: "the wasm heap budget", Need: need, Have: heap}
		}
	} else if ranks == 1 {
		act := p.ActivationBytes
		if need := p.WeightBytes + p.KVBytes + act; need > heap {
			return nil, &TooLargeError{What: fmt.Sprintf("the model on the CPU backend (%s of weights, %s of KV cache, %s of activations)", bytesText(p.WeightBytes), bytesText(p.KVBytes), bytesText(act)),
				Limit: "the wasm heap budget", Need: need, Have: heap, Hint: cpuHint(m, p.WeightBytes, p.WeightBytes, act, heap, p.KVBytes, ctx, 1)}
		}
	} else if need := rank0 + p.KVBytes + transit + p.ActivationBytes; need > heap || peer > heap {
		if peer > need {
			need = peer
		}
		return nil, &TooLargeError{What: fmt.Sprintf("the model on %d CPU ranks (%s of weights, %s on the first rank with %s of KV cache, %s of activations and %s passing through, %s on each other)",
			ranks, bytesText(p.WeightBytes), bytesText(rank0), bytesText(p.KVBytes), bytesText(p.ActivationBytes), bytesText(transit), bytesText(peer)),
			Limit: "the wasm heap budget of each rank", Need: need, Have: heap, Hint: cpuHint(m, p.WeightBytes, rank0+transit, p.ActivationBytes, heap, p.KVBytes, ctx, ranks)}
	}
	for _, s := range m.Shards {
		if s.Bytes > MaxShardBytes {
			return nil, &TooLargeError{What: "shard " + s.File, Limit: "the loader's shard size limit", Need: s.Bytes, Have: MaxShardBytes,
				Hint: "convert the model again with smaller shards (cmd/convert -shard-mb 32)"}
		}
	}
	return p, nil
}

// cpuHint says what would fit a CPU heap of heap bytes that the model
// (total bytes of weights as the CPU stores them, weights of them on the
// fullest heap, act bytes of activations, kv bytes of KV cache for ctx
// tokens) does not: a shorter
// context when the weights leave room, else a smaller quantisation of the
// model's matrices (q8, then q4; only one smaller than what it has now;
// split evenly across the ranks, an estimate) or more ranks.
func cpuHint(m *manifest.Manifest, total, weights, act, heap, kv int64, ctx, ranks int) string {
	kvToken := kv / int64(max(ctx, 1))
	if room := heap - weights - act; room > 0 && kvToken > 0 {
		if n := room / kvToken; n >= 1 {
			return fmt.Sprintf("a context of at most %d tokens fits (the context option)", n)
		}
	}
	var hints []string
	for _, q := range []struct {
		name string
		dt   loader.DType
	}{{"q8", loader.Q8}, {"q4", loader.Q4}} {
		b := quantBytes(m, q.dt)
		if b >= total {
			continue
		}
		if per := b / int64(ranks); per+kv+act <= heap {
			hints = append(hints, fmt.Sprintf("converted with -quant %s (%s of weights) it fits", q.name, bytesText(b)))
			break
		}
		hints = append(hints, fmt.Sprintf("even with -quant %s (%s of weights) it does not fit", q.name, bytesText(b)))
	}
	if ranks < 4 {
		hints = append(hints, "more CPU ranks (cpuRanks, in a cross-origin isolated page) split the large matrices")
	}
	return strings.Join(hints, "; ")
}

// quantBytes is what m's weights take with every matrix that can be
// quantised to dt (rows of whole 32-value groups) stored so: planar q8 or
// q4 values and an f16 scale a group; the rest as the CPU stores it now.
func quantBytes(m *manifest.Manifest, dt loader.DType) int64 {
	var total int64
	for i := range m.Tensors {
		t := &m.Tensors[i]
		d, _ := t.Type()
		if d == loader.Mixed {
			continue // counted as its row blocks
		}
		n := int64(1)
		for _, x := range t.Shape {
			n *= int64(x)
		}
		b := cpuBytes(d, n, t.Bytes)
		if len(t.Shape) >= 2 && t.Shape[len(t.Shape)-1]%32 == 0 {
			q := n/32*2 + n // q8
			if dt == loader.Q4 {
				q = n/32*2 + n/2
			}
			b = min(b, q)
		}
		total += b
	}
	return total
}

// gpuRowBytes is the bytes one row of cols values takes in a WebGPU weight
// buffer (the value plane, for planar types), after the conversion the
// backend makes on upload.
func gpuRowBytes(d loader.DType, cols int64) int64 {
	switch d {
	case loader.F16:
		return 2 * cols
	case loader.Q8, loader.Q8_0:
		return cols
	case loader.Q4, loader.Q4_0:
		return cols / 2
	}
	return 4 * cols // F32, and everything the backend widens to F32
}

func gpuBytes(d loader.DType, n, stored int64) int64 {
	switch d {
	case loader.F32, loader.F16, loader.Q8, loader.Q4, loader.Q8_0, loader.Q4_0:
		return stored
	}
	return 4 * n
}

func cpuBytes(d loader.DType, n, stored int64) int64 {
	switch d {
	case loader.Q8_0, loader.Q4_0, loader.Q4, loader.Q8,
		loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K:
		return stored
	}
	return 4 * n
}

// kquantOnGPU reports a K-quant weight, which the WebGPU backend keeps as
// ggml's blocks (matrices and MoE experts).
func kquantOnGPU(d loader.DType, shape []int) bool {
	switch d {
	case loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K:
		return len(shape) >= 2
	}
	return false
}
