// Package result holds what the bench's browser-side probe (cmd/bench/probe,
// GOOS=js) reports to the driver (cmd/bench) as JSON: the adapter, the
// roofline probes, the hot kernels and whole-model runs.
package result

import "slices"

// Adapter describes the WebGPU adapter the probe ran on.
type Adapter struct {
	Vendor       string `json:"vendor"`
	Architecture string `json:"architecture"`
	Device       string `json:"device"`
	Description  string `json:"description"`
	// Fallback is a software adapter such as SwiftShader (the CPU).
	Fallback  bool `json:"fallback"`
	Subgroups bool `json:"subgroups"`
	ShaderF16 bool `json:"shader_f16"`

	MaxStorageBufferBindingSize uint64 `json:"max_storage_buffer_binding_size"`
	MaxBufferSize               uint64 `json:"max_buffer_size"`
}

// Shape is one workgroup shape a probe tried and the rate it reached.
type Shape struct {
	WG     int     `json:"wg"`     // threads per workgroup
	Groups int     `json:"groups"` // workgroups dispatched
	Rate   float64 `json:"rate"`   // GB/s or GFLOP/s
}

// Roofline is what the adapter gives a plain compute shader.
type Roofline struct {
	// ReadGBps is the best streaming-read rate over ReadShapes, reading
	// ReadBytes (shaders/bench_read.wgsl, entry stream_read).
	ReadGBps   float64 `json:"read_gbps"`
	ReadBytes  int64   `json:"read_bytes"`
	ReadShapes []Shape `json:"read_shapes"`
	// FMAGFLOPs is the best f32 FMA rate over FMAShapes
	// (shaders/bench_fma.wgsl).
	FMAGFLOPs float64 `json:"fma_gflops"`
	FMAShapes []Shape `json:"fma_shapes"`
	// SyncMs is the cost of one empty submit with a 4-byte readback,
	// subtracted from every timing.
	SyncMs float64 `json:"sync_ms"`
}

// Kernel is one hot kernel at one shape.
type Kernel struct {
	Name  string  `json:"name"`
	Shape string  `json:"shape"`
	Unit  string  `json:"unit"`  // "GB/s" or "GFLOP/s"
	Rate  float64 `json:"rate"`  // in Unit
	Ratio float64 `json:"ratio"` // Rate over the probe's rate in the same unit
	Ms    float64 `json:"ms"`    // per call
	// Bytes is what one call reads (weights, or keys and values); Flops
	// the arithmetic of one call (GEMM).
	Bytes int64   `json:"bytes"`
	Flops float64 `json:"flops,omitempty"`
	Calls int     `json:"calls"` // calls per timed submit
}

// Kernels is the probe's "kernels" phase.
type Kernels struct {
	Adapter  Adapter  `json:"adapter"`
	Roofline Roofline `json:"roofline"`
	Kernels  []Kernel `json:"kernels"`
	Notes    []string `json:"notes,omitempty"`
}

// Run is one generation: a prompt of Prompt tokens, then DecodeTokens more.
// Prefill is the time to the first token (prompt processing and the first
// sample); decode the time from the first token to the last.
type Run struct {
	Prompt       int     `json:"prompt"`
	Rep          int     `json:"rep"`
	PrefillMs    float64 `json:"prefill_ms"`
	DecodeTokens int     `json:"decode_tokens"` // tokens after the first
	DecodeMs     float64 `json:"decode_ms"`
}

// PrefillTokS is the prompt's tokens per second of time to first token.
func (r Run) PrefillTokS() float64 {
	if r.PrefillMs <= 0 {
		return 0
	}
	return float64(r.Prompt) / r.PrefillMs * 1e3
}

// DecodeTokS is decoded tokens per second after the first token.
func (r Run) DecodeTokS() float64 {
	if r.DecodeMs <= 0 || r.DecodeTokens <= 0 {
		return 0
	}
	return float64(r.DecodeTokens) / r.DecodeMs * 1e3
}

// PerToken counts one decode step's work, averaged over a run's decode.
type PerToken struct {
	Dispatches    float64 `json:"dispatches"`
	Submits       float64 `json:"submits"`
	Maps          float64 `json:"maps"`
	BytesRead     float64 `json:"bytes_read"`
	JSCalls       float64 `json:"js_calls"`
	ProgramBuilds float64 `json:"program_builds"`
	// EncodeMs is the Go-side time to issue one step's ops (Model.Forward
	// and Argmax, which only record commands); StepMs the whole step with
	// its submit, the GPU's work and the 4-byte readback.
	EncodeMs float64 `json:"encode_ms"`
	StepMs   float64 `json:"step_ms"`
}

// Model is the probe's "model" phase: one model on one backend.
type Model struct {
	Model   string   `json:"model"`
	Backend string   `json:"backend"` // "webgpu" or "cpu"
	Adapter *Adapter `json:"adapter,omitempty"`
	Arch    string   `json:"arch"`
	Layers  int      `json:"layers"`
	Hidden  int      `json:"hidden"`
	Vocab   int      `json:"vocab"`
	Experts int      `json:"experts,omitempty"`
	// WeightBytes is every weight as the backend holds it; ActiveBytes what
	// one decode token reads of them (every matrix, one embedding row, and
	// for MoE the router and only the chosen experts).
	WeightBytes int64 `json:"weight_bytes"`
	ActiveBytes int64 `json:"active_bytes"`
	// KVBytesPerPos is what attention reads per cached position, over all
	// layers, keys and values.
	KVBytesPerPos int64  `json:"kv_bytes_per_pos"`
	KVDType       string `json:"kv_dtype"`
	// Ranks is the CPU engine's rank count (1: the engine's own instance
	// alone; more: Web Workers holding shares of the weights).
	Ranks int `json:"ranks,omitempty"`
	// LayerDispatches are the dispatches each layer of a decode step
	// recorded (gpu.Backend.LayerDispatches; WebGPU only).
	LayerDispatches []int `json:"layer_dispatches,omitempty"`
	// LayerTypes are a hybrid model's layer kinds (model.Config.LayerTypes:
	// "linear_attention" for Gated DeltaNet, "full_attention"); nil when
	// every layer is attention.
	LayerTypes []string `json:"layer_types,omitempty"`
	// StepsAhead is the fraction of greedy decode steps submitted before
	// the previous step's token was read back (pipelined decode; WebGPU).
	StepsAhead *float64  `json:"decode_submitted_ahead,omitempty"`
	Context    int       `json:"context"`
	BuildMs    float64   `json:"build_ms"`
	Runs       []Run     `json:"runs"`
	PerToken   *PerToken `json:"per_token,omitempty"`
	Notes      []string  `json:"notes,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// KernelNames are the hot kernels the probe times, in order: Llama-3.2-1B's
// decode GEMVs, its prefill GEMM, decode attention and Qwen3-30B-A3B's
// experts for a token and for a prefill chunk; quick (the bench's -short
// mode) has small shapes of fewer.
func KernelNames(quick bool) []string {
	if quick {
		return []string{"gemv_q4", "gemv_q8", "gemv_q4_k", "gemv_q6_k", "gemv_q5_k", "gemv_q3_k", "gemv_q2_k", "gemm_q4", "gemm_q4_k", "attn_decode_1k", "moe_q4", "moe_q4_k", "moe_prefill_q4", "moe_prefill_q4_k", "attend_seq", "encoder_q8_0"}
	}
	return []string{"gemv_q4_qkv", "gemv_q4_gate_up", "gemv_q4_down", "gemv_q4_lm_head", "gemv_q8_gate_up",
		"gemv_q4_k_gate_up", "gemv_q6_k_gate_up", "gemv_q5_k_gate_up", "gemv_q3_k_gate_up", "gemv_q2_k_gate_up", "gemm_q4", "gemm_q4_k", "attn_decode_1k", "attn_decode_4k", "attn_decode_4k_f16", "moe_q4", "moe_q4_k", "moe_prefill_q4", "moe_prefill_q4_k",
		"attend_seq", "encoder_q8_0"}
}

// Fastest keeps each kernel's fastest row (least Ms), in the order of its
// first.
func Fastest(rows []Kernel) []Kernel {
	var out []Kernel
	at := map[string]int{}
	for _, r := range rows {
		i, ok := at[r.Name]
		switch {
		case !ok:
			at[r.Name] = len(out)
			out = append(out, r)
		case r.Ms < out[i].Ms:
			out[i] = r
		}
	}
	return out
}

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
