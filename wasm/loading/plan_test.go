package loading_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"wasmllm/api"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/wasm/loading"
)

func planManifest() *manifest.Manifest {
	c := model.Config{Arch: model.ArchLlama, Vocab: 1000, Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16,
		FFN: 128, RMSEps: 1e-5, RopeTheta: 1e4, MaxContext: 8192}
	return &manifest.Manifest{FormatVersion: 1, Arch: c.Arch, Config: c,
		Shards: []manifest.Shard{{File: "s-0123456789abcdef.bin", Bytes: 1 << 20}},
		Tensors: []manifest.TensorInfo{
			{Name: "token_embd.weight", DType: "F32", Shape: []int{1000, 64}, Bytes: 256000},
			{Name: "blk.0.attn_qkv.weight", DType: "q4", Shape: []int{128, 64}, Offset: 256000, Bytes: 4608},
			{Name: "blk.0.ffn_gate_up_exps.weight", DType: "F16", Shape: []int{4, 32, 64}, Offset: 262144, Bytes: 16384},
		}}
}

func TestCheckFits(t *testing.T) {
	m := planManifest()
	p, err := loading.Check(m, loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 1 << 27, MaxBufferSize: 1 << 28}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The model's 8192 positions are capped at DefaultContext.
	if p.Context != loading.DefaultContext {
		t.Errorf("context %d, want %d", p.Context, loading.DefaultContext)
	}
	if want := int64(2 * 2 * loading.DefaultContext * 2 * 16 * 4); p.KVBytes != want {
		t.Errorf("KV bytes %d, want %d", p.KVBytes, want)
	}
	if want := int64(256000 + 4608 + 16384); p.WeightBytes != want {
		t.Errorf("weight bytes %d, want %d", p.WeightBytes, want)
	}
	// On the CPU, F16 is widened to F32.
	p, err = loading.Check(m, loading.Limits{Backend: loading.BackendCPU}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(256000 + 4608 + 4*4*32*64); p.WeightBytes != want || p.Context != 100 {
		t.Errorf("cpu: weight bytes %d (want %d), context %d", p.WeightBytes, want, p.Context)
	}
	// The activations of a decode step and of a prefill batch, which is
	// no longer than the context: 1706 values and 100 × 706 + 64 + 1000
	// (the last row and its logits).
	if p.PrefillChunk != 100 || p.ActivationBytes != 4*(1706+100*706+64+1000) {
		t.Errorf("cpu: prefill chunk %d, activation bytes %d", p.PrefillChunk, p.ActivationBytes)
	}
}

// TestCheckActivations: on WebGPU a prefill batch whose largest activation
// (the (T, 2F) gate_up) exceeds the binding limit is shortened to fit, and
// a model whose single token's logits do not fit is refused.
func TestCheckActivations(t *testing.T) {
	m := planManifest()
	lim := loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 65536, MaxBufferSize: 1 << 28, PrefillChunk: 512}
	p, err := loading.Check(m, lim, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 64 tokens × 2 × 128 values × 4 bytes is the binding: 64 fit
	if p.PrefillChunk != 64 {
		t.Errorf("prefill chunk %d, want 64", p.PrefillChunk)
	}
	if step, _ := model.ScratchBytes(&m.Config, 1, true); p.ActivationBytes != step+func() int64 { b, _ := model.ScratchBytes(&m.Config, 64, false); return b }() {
		t.Errorf("activation bytes %d", p.ActivationBytes)
	}
	m.Config.Vocab = 20000 // 80000 bytes of logits, over the binding; the embedding is not in the manifest
	d := tooLarge(t, func() error { _, err := loading.Check(m, lim, 0); return err }())
	if d["need"] != int64(80000) || !strings.Contains(d["what"].(string), "activations of one token") {
		t.Errorf("details %v", d)
	}
}

// code is the error code the worker posts for err ("" for nil), with its
// message and details.
func code(err error) (string, string, map[string]any) {
	if err == nil {
		return "", "", nil
	}
	e := api.Classify(err)
	return e.Code, e.Message, e.Details
}

func tooLarge(t *testing.T, err error) map[string]any {
	t.Helper()
	c, _, d := code(err)
	if c != api.CodeModelTooLarge {
		t.Fatalf("error %v, want model_too_large", err)
	}
	var tl *loading.TooLargeError
	if !errors.As(err, &tl) {
		t.Errorf("error %T, want a *TooLargeError", err)
	}
	return d
}

func TestCheckTensorTooLarge(t *testing.T) {
	m := planManifest()
	// One embedding row is 256 bytes of F32: a 200-byte buffer cannot hold it.
	d := tooLarge(t, func() error {
		_, err := loading.Check(m, loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 1 << 20, MaxBufferSize: 200}, 16)
		return err
	}())
	if d["need"] != int64(256) || d["have"] != int64(200) || d["over"] != int64(56) || d["limit"] != "the device's maxBufferSize" ||
		!strings.Contains(d["what"].(string), "token_embd.weight") {
		t.Errorf("details %v", d)
	}
	// An expert (32 rows of 64 F16) stays whole: 4096 bytes.
	m.Tensors = m.Tensors[2:]
	d = tooLarge(t, func() error {
		_, err := loading.Check(m, loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 4000, MaxBufferSize: 1 << 20}, 16)
		return err
	}())
	if d["need"] != int64(4096) || d["over"] != int64(96) || !strings.Contains(d["what"].(string), "one expert") {
		t.Errorf("details %v", d)
	}
}

func TestCheckKV(t *testing.T) {
	m := planManifest()
	m.Tensors = nil
	lim := loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 1 << 30, MaxBufferSize: 128 * 1000}
	// Per layer and position: 2 heads × 16 × 4 bytes = 128; the buffer holds 1000.
	p, err := loading.Check(m, lim, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Context != 1000 {
		t.Errorf("context %d, want the 1000 the device holds", p.Context)
	}
	d := tooLarge(t, func() error { _, err := loading.Check(m, lim, 2000); return err }())
	if d["need"] != int64(2000*128) || d["have"] != int64(128000) {
		t.Errorf("details %v", d)
	}
}

// TestCheckKVF16: an f16 cache takes 2 bytes a value, so the device holds
// twice the positions and the plan counts half the bytes.
func TestCheckKVF16(t *testing.T) {
	m := planManifest()
	m.Tensors = nil
	lim := loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 1 << 30, MaxBufferSize: 128 * 1000}
	p, err := loading.CheckKV(m, lim, 0, loader.F16)
	if err != nil {
		t.Fatal(err)
	}
	if p.Context != 2000 || p.KVDType != loader.F16 || p.KVBytes != 2*2*2000*64 {
		t.Errorf("plan %+v, want 2000 positions of 64 bytes per layer's K and V", p)
	}
	if p, err := loading.CheckKV(m, lim, 1500, loader.F16); err != nil || p.KVBytes != 2*2*1500*64 {
		t.Errorf("1500 positions: %+v, %v", p, err)
	}
	f32, _ := loading.Check(m, loading.Limits{Backend: loading.BackendCPU}, 100)
	f16, _ := loading.CheckKV(m, loading.Limits{Backend: loading.BackendCPU}, 100, loader.F16)
	if f32.KVDType != loader.F32 || f16.KVBytes*2 != f32.KVBytes {
		t.Errorf("kv bytes f32 %+v, f16 %+v", f32, f16)
	}
	d := tooLarge(t, func() error { _, err := loading.CheckKV(m, lim, 2001, loader.F16); return err }())
	if d["need"] != int64(2001*64) {
		t.Errorf("details %v", d)
	}
	if _, err := loading.CheckKV(m, lim, 0, loader.Q4_0); err == nil {
		t.Error("a Q4_0 KV cache passed the check")
	} else if c, _, _ := code(err); c != api.CodeBadRequest {
		t.Errorf("a Q4_0 KV cache: %v is %s, want bad_request", err, c)
	}
}

func TestCheckHeap(t *testing.T) {
	m := planManifest()
	_, err := loading.Check(m, loading.Limits{Backend: loading.BackendCPU, HeapBytes: 300000}, 16)
	d := tooLarge(t, err)
	need := int64(256000+4608+4*4*32*64) + 2*2*16*128 + 4*(1706+16*706+64+1000) // weights, KV cache, activations
	if d["need"] != need || d["over"] != need-300000 {
		t.Errorf("details %v (need %d)", d, need)
	}
	if _, msg, _ := code(err); !strings.Contains(err.Error(), "too large") || !strings.HasPrefix(msg, "model too large: ") {
		t.Errorf("message %q, posted as %q", err, msg)
	}
}

// TestCheckHints: a model over the CPU heap says what would fit: a
// shorter context when the weights and activations leave room (293376
// bytes of weights, 372552 of activations at 128-token batches, 512 bytes
// of KV cache a token: 12 tokens in a heap of 672172), else a smaller
// quantisation (q8: 68000 + 4608 + 8704 bytes of weights, 8192 of KV
// cache and 56264 of activations fit 200000), else that even q4 does not.
func TestCheckHints(t *testing.T) {
	m := planManifest()
	for _, c := range []struct {
		heap int64
		ctx  int
		want []string
	}{
		{672172, 4096, []string{"a context of at most 12 tokens fits"}},
		{200000, 16, []string{"converted with -quant q8 (79.4 KiB (81312 bytes) of weights) it fits", "more CPU ranks"}},
		{20000, 16, []string{"even with -quant q8", "even with -quant q4", "more CPU ranks"}},
	} {
		_, err := loading.Check(m, loading.Limits{Backend: loading.BackendCPU, HeapBytes: c.heap}, c.ctx)
		tooLarge(t, err)
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("heap %d, context %d: %q does not say %q", c.heap, c.ctx, err, w)
			}
		}
	}
}

// TestCheckAutoContext: on the CPU a context nobody asked for shrinks to
// what the heap leaves beside the weights and activations (312 tokens of
// 512 bytes beside 293376 bytes of weights and 372552 of activations in
// 825672), but not below 256 tokens, and an asked-for context never
// shrinks.
func TestCheckAutoContext(t *testing.T) {
	m := planManifest()
	lim := loading.Limits{Backend: loading.BackendCPU, HeapBytes: 825672}
	p, err := loading.Check(m, lim, 0)
	if err != nil || p.Context != 312 || p.KVBytes != 312*512 {
		t.Fatalf("default context in a heap of 825672: %+v, %v", p, err)
	}
	if _, err := loading.Check(m, lim, 1024); err == nil {
		t.Error("an asked-for context of 1024 shrank")
	}
	lim.HeapBytes = 672172
	if _, err := loading.Check(m, lim, 0); err == nil || !strings.Contains(err.Error(), "at most 12 tokens") {
		t.Errorf("room for 12 tokens: %v", err)
	}
}

// TestCheckHeapRanks: on CPU ranks each rank's heap holds its share of
// the split matrices (cpu.Shardable) and rank 0 the rest, the KV cache and
// what passes through as a split tensor is handed out, and the
// activations: a model too large for one heap of 750000 bytes fits two,
// and the message of one that does not fit names the ranks.
func TestCheckHeapRanks(t *testing.T) {
	m := planManifest()
	for i := range 8 {
		m.Tensors = append(m.Tensors, manifest.TensorInfo{Name: fmt.Sprintf("blk.%d.ffn_down.weight", i), DType: "F32", Shape: []int{256, 64}, Bytes: 65536})
	}
	// One rank: 256000 + 4608 + 32768 (the F16 experts, widened) + 8 × 65536,
	// 8192 of KV cache and 56264 of activations.
	one := loading.Limits{Backend: loading.BackendCPU, HeapBytes: 750000}
	if _, err := loading.Check(m, one, 16); err == nil {
		t.Fatal("one heap of 750000 held 882120 bytes")
	}
	// Two: rank 0 holds 128000 + 2304 + 8 × 32768 + 32768, the KV cache,
	// the activations and 256000 in passing (the embedding's two shares):
	// 745672.
	two := loading.Limits{Backend: loading.BackendCPU, HeapBytes: 750000, Ranks: 2, MinShardBytes: 1}
	if _, err := loading.Check(m, two, 16); err != nil {
		t.Fatalf("two heaps of 750000: %v", err)
	}
	two.HeapBytes = 740000
	_, err := loading.Check(m, two, 16)
	if d := tooLarge(t, err); d["need"] != int64(745672) || !strings.Contains(err.Error(), "2 CPU ranks") {
		t.Errorf("two heaps of 740000: %v (details %v)", err, d)
	}
}

func TestCheckShardSize(t *testing.T) {
	m := planManifest()
	m.Shards[0].Bytes = loading.MaxShardBytes + 1
	d := tooLarge(t, func() error { _, err := loading.Check(m, loading.Limits{Backend: loading.BackendCPU}, 16); return err }())
	if d["over"] != int64(1) || !strings.Contains(d["what"].(string), m.Shards[0].File) {
		t.Errorf("details %v", d)
	}
}

// TestCheckHostileConfig: num_layers 2^53 made 2*Layers*ctx*row wrap to 0,
// so the check passed and the browser downloaded the shards. A config
// that skipped manifest validation is refused here too, and so is an
// absurd context.
func TestCheckHostileConfig(t *testing.T) {
	m := planManifest()
	m.Config.Layers = 1 << 53
	_, err := loading.Check(m, loading.Limits{Backend: loading.BackendCPU}, 0)
	if c, msg, _ := code(err); c != api.CodeBadModel || !strings.Contains(msg, "num_layers") {
		t.Errorf("num_layers 2^53: %v, want bad_model naming num_layers", err)
	}
	m = planManifest()
	_, err = loading.Check(m, loading.Limits{Backend: loading.BackendCPU}, 1<<40)
	if c, _, _ := code(err); c != api.CodeBadRequest {
		t.Errorf("a context of 2^40: %v, want bad_request", err)
	}
}

// TestCheckDeltaNet: on WebGPU a Qwen3.5 plan counts the Gated DeltaNet
// layers' f32 states beside the attention layers' KV cache, and refuses a
// device whose binding cannot hold one layer's recurrent state.
func TestCheckDeltaNet(t *testing.T) {
	L, F := model.LayerLinearAttention, model.LayerFullAttention
	c := model.Config{Arch: model.ArchQwen35, Vocab: 1000, Hidden: 64, Layers: 4, Heads: 2, KVHeads: 1, HeadDim: 64, FFN: 128,
		RMSEps: 1e-6, RopeTheta: 1e7, RopeDim: 16, MaxContext: 4096, AttnOutputGate: true, QKNorm: true,
		LayerTypes: []string{L, L, L, F}, LinearConvKernel: 4, LinearKeyHeads: 2, LinearValueHeads: 4, LinearHeadDim: 32}
	m := &manifest.Manifest{FormatVersion: 1, Arch: c.Arch, Config: c, Shards: []manifest.Shard{{File: "s-0123456789abcdef.bin", Bytes: 1 << 20}}}
	lim := loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 1 << 27, MaxBufferSize: 1 << 28}
	p, err := loading.Check(m, lim, 100)
	if err != nil {
		t.Fatal(err)
	}
	// one attention layer's K and V (100 × 64 × 4 each), three linear
	// layers' conv (3 × 256) and recurrent (4 × 32 × 32) states, three
	// times on WebGPU (live, the prompt's checkpoint, the pipelined step's
	// copy)
	one := int64(3 * 4 * (3*256 + 4*32*32))
	if got := c.StateBytes(); got != one {
		t.Errorf("Config.StateBytes %d, want %d", got, one)
	}
	states := 3 * one
	if want := int64(2*100*64*4) + states; p.KVBytes != want || p.StateBytes != states {
		t.Errorf("KV and state bytes %d (state %d), want %d (state %d)", p.KVBytes, p.StateBytes, want, states)
	}
	// On the CPU the heap holds the states too: a context asked for fits a
	// heap of exactly weights, activations, KV and states, and not one
	// byte less.
	cpuLim := loading.Limits{Backend: loading.BackendCPU}
	full, err := loading.Check(m, cpuLim, 300)
	if err != nil {
		t.Fatal(err)
	}
	// two copies on the CPU (live, checkpoint)
	if full.StateBytes != 2*one || full.KVBytes != 2*300*64*4+2*one {
		t.Errorf("CPU plan: KV %d, state %d", full.KVBytes, full.StateBytes)
	}
	cpuLim.HeapBytes = full.WeightBytes + full.ActivationBytes + full.KVBytes - 1
	if _, err := loading.Check(m, cpuLim, 300); err == nil {
		t.Errorf("a heap one byte short of weights, activations, KV and states: no error")
	}
	cpuLim.HeapBytes++
	if _, err := loading.Check(m, cpuLim, 300); err != nil {
		t.Errorf("a heap of exactly weights, activations, KV and states: %v", err)
	}
	lim.MaxStorageBufferBindingSize = 4*4*32*32 - 4 // one float short of a layer's state
	d := tooLarge(t, func() error { _, err := loading.Check(m, lim, 16); return err }())
	if d["need"] != int64(4*4*32*32) || !strings.Contains(d["what"].(string), "recurrent state") {
		t.Errorf("details %v", d)
	}
}

// TestCheckKVGroups: a Gemma 4 config keeps keys and values for its
// layers with their own KV only, each at its own head dim (two KV groups:
// two local layers of 32, one global of 64; the three sharing layers none).
func TestCheckKVGroups(t *testing.T) {
	S, F := model.LayerSlidingAttention, model.LayerFullAttention
	c := model.Config{Arch: model.ArchGemma4, Vocab: 512, Hidden: 64, Layers: 6, Heads: 4, KVHeads: 1, HeadDim: 64, HeadDimSWA: 32,
		FFN: 96, RMSEps: 1e-6, RopeTheta: 1e6, RopeLocalTheta: 1e4, MaxContext: 8192, SlidingWindow: 6, SharedKVLayers: 3,
		LayerTypes: []string{S, S, F, S, S, F}, TiedEmbeddings: true}
	m := planManifest()
	m.Arch, m.Config = c.Arch, c
	p, err := loading.Check(m, loading.Limits{Backend: loading.BackendCPU}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2 * 100 * (2*32 + 64) * 4); p.KVBytes != want {
		t.Errorf("KV bytes %d, want %d", p.KVBytes, want)
	}
}

// TestCheckPerLayer: on WebGPU Gemma 4's per-layer table (here 6 layers
// × 32 values over 4096 tokens, q8: three times the rest) goes to the
// worker's memory by default, out of the GPU's weight bytes, each token
// uploading 6·32·4 bytes; PerLayerGPU keeps it there, PerLayerHost takes
// it off even when smaller, and a heap too small for it leaves it on the
// GPU in auto. ParsePerLayer refuses other words.
func TestCheckPerLayer(t *testing.T) {
	S, F := model.LayerSlidingAttention, model.LayerFullAttention
	c := model.Config{Arch: model.ArchGemma4, Vocab: 4096, Hidden: 64, Layers: 6, Heads: 4, KVHeads: 1, HeadDim: 64, HeadDimSWA: 32,
		FFN: 96, RMSEps: 1e-6, RopeTheta: 1e6, RopeLocalTheta: 1e4, MaxContext: 8192, SlidingWindow: 6, SharedKVLayers: 3,
		PerLayerInput: 32, LayerTypes: []string{S, S, F, S, S, F}, TiedEmbeddings: true}
	m := planManifest()
	m.Arch, m.Config = c.Arch, c
	const table = 4096 * 192 / 32 * 34 // q8: 32 bytes and a scale a group
	m.Tensors = append(m.Tensors, manifest.TensorInfo{Name: model.NamePLEmbed, DType: "q8", Shape: []int{4096, 192}, Offset: 278528, Bytes: table})
	m.Shards[0].Bytes = 278528 + table
	lim := loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 1 << 27, MaxBufferSize: 1 << 28}
	rest := int64(256000 + 4608 + 16384)
	for _, c := range []struct {
		place  loading.PerLayerPlace
		heap   int64
		onHost bool
	}{{loading.PerLayerAuto, 0, true}, {loading.PerLayerGPU, 0, false}, {loading.PerLayerHost, 0, true}, {loading.PerLayerAuto, 100000, false}} {
		l := lim
		l.PerLayer, l.HeapBytes = c.place, c.heap
		p, err := loading.Check(m, l, 100)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		want := rest + table
		if c.onHost {
			want = rest
		}
		if p.PerLayerOnHost != c.onHost || p.WeightBytes != want || (c.onHost && (p.PerLayerHostBytes != table || p.PerLayerTokenBytes != 6*32*4)) {
			t.Errorf("%+v: on host %v (%d bytes, %d a token), weight bytes %d; want %v, %d", c, p.PerLayerOnHost, p.PerLayerHostBytes, p.PerLayerTokenBytes, p.WeightBytes, c.onHost, want)
		}
	}
	for s, want := range map[string]loading.PerLayerPlace{"": loading.PerLayerAuto, "auto": loading.PerLayerAuto, "gpu": loading.PerLayerGPU, "host": loading.PerLayerHost} {
		if got, err := loading.ParsePerLayer(s); got != want || err != nil {
			t.Errorf("ParsePerLayer(%q) = %v, %v", s, got, err)
		}
	}
	var oe *loading.OptionError
	if _, err := loading.ParsePerLayer("disk"); !errors.As(err, &oe) {
		t.Errorf("ParsePerLayer(\"disk\"): %v, want an *OptionError", err)
	}
}

// TestCheckKVQ8: a q8 cache takes a byte a value and an f32 scale per
// block (here a head of 16: 2 heads × (16 + 4) = 40 bytes a layer's K or
// V), so the device's binding holds 3200 positions where f16's holds
// 2000, and the plan's bytes per token say so.
func TestCheckKVQ8(t *testing.T) {
	m := planManifest()
	m.Tensors = nil
	lim := loading.Limits{Backend: loading.BackendWebGPU, MaxStorageBufferBindingSize: 1 << 30, MaxBufferSize: 128 * 1000}
	p, err := loading.CheckKV(m, lim, 0, model.KVQ8)
	if err != nil {
		t.Fatal(err)
	}
	if p.Context != 3200 || p.KVDType != model.KVQ8 || p.KVBytesPerToken != 2*2*40 || p.KVBytes != 2*2*3200*40 {
		t.Errorf("plan %+v, want 3200 positions of 40 bytes per layer's K and V", p)
	}
	f16, _ := loading.CheckKV(m, loading.Limits{Backend: loading.BackendCPU}, 100, loader.F16)
	q8, _ := loading.CheckKV(m, loading.Limits{Backend: loading.BackendCPU}, 100, model.KVQ8)
	if f16.KVBytesPerToken != 2*2*64 || q8.KVBytes*64 != f16.KVBytes*40 {
		t.Errorf("kv bytes f16 %+v, q8 %+v", f16, q8)
	}
}
