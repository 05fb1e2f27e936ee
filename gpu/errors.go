package gpu

import (
	"errors"
	"fmt"
	"strings"

	"wasmllm/loader"
)

// ErrNoWebGPU is returned (wrapped) by Open when the browser has no WebGPU or
// offers no adapter.
var ErrNoWebGPU = errors.New("gpu: WebGPU is not available")

// DeviceLostError reports that the device was lost (device.lost). Every call
// after the loss returns it; open a new Device to continue.
type DeviceLostError struct {
	Reason  string // "destroyed" after Close, else "unknown"
	Message string
}

func (e *DeviceLostError) Error() string {
	return fmt.Sprintf("gpu: device lost (%s): %s", e.Reason, e.Message)
}

// GPUError is an error that WebGPU reported for an object or a program.
type GPUError struct {
	Kind    string // "validation", "out-of-memory", "internal" or "exception"
	Label   string // label of the object or program, "" when unknown
	Message string
}

func (e *GPUError) Error() string {
	if e.Label == "" {
		return fmt.Sprintf("gpu: %s error: %s", e.Kind, e.Message)
	}
	return fmt.Sprintf("gpu: %s error in %q: %s", e.Kind, e.Label, e.Message)
}

// CompileMessage is one message of a WGSL compilation.
type CompileMessage struct {
	Type string // "error", "warning" or "info"
	Line int    // 1-based; 0 when the message has no position
	Col  int    // 1-based, in UTF-16 code units as WebGPU counts them
	Text string
	Src  string // the source line, when known
}

// ShaderError reports a WGSL module that did not compile.
type ShaderError struct {
	File     string // the name given to CreateShaderModule, e.g. "shaders/matmul.wgsl"
	Messages []CompileMessage
}

func (e *ShaderError) Error() string {
	var b strings.Builder
	for i, m := range e.Messages {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d:%d: %s: %s", e.File, m.Line, m.Col, m.Type, m.Text)
		if m.Src != "" {
			fmt.Fprintf(&b, "\n\t%s", m.Src)
		}
	}
	if len(e.Messages) == 0 {
		fmt.Fprintf(&b, "%s: shader module is invalid", e.File)
	}
	return b.String()
}

// LimitError reports a request beyond the device's limits (Device.Limits,
// including any limit lowered by Options).
type LimitError struct {
	Label string // the object being created
	Limit string // WebGPU limit name, e.g. "maxStorageBufferBindingSize"
	Need  uint64
	Have  uint64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("gpu: %q needs %s = %d, the device allows %d", e.Label, e.Limit, e.Need, e.Have)
}

// UsageError reports a call that WebGPU would reject: a misaligned offset,
// a range outside a buffer, a destroyed object, a missing usage flag.
type UsageError struct {
	Op    string // the method, e.g. "WriteBuffer"
	Label string // the object, when there is one
	Msg   string
}

func (e *UsageError) Error() string {
	if e.Label == "" {
		return fmt.Sprintf("gpu: %s: %s", e.Op, e.Msg)
	}
	return fmt.Sprintf("gpu: %s %q: %s", e.Op, e.Label, e.Msg)
}

// KVCacheError reports a KV cache that does not fit the device.
type KVCacheError struct {
	Layers, Capacity, KVHeads, HeadDim int
	DType                              loader.DType // F32 or F16
	// Limit names what was exceeded: "maxStorageBufferBindingSize" or
	// "maxBufferSize" (per buffer), or "out-of-memory" when the device
	// could not allocate the cache.
	Limit string
	// Need and Have are bytes: for a per-buffer limit, one layer's K (or V)
	// buffer and the limit; for out-of-memory, the whole cache and what was
	// allocated before the device refused (0 when it reported the failure
	// only once every buffer was created).
	Need, Have uint64
	Total      uint64 // bytes of the whole cache: a K and a V buffer per layer
	// MaxCapacity is the most positions one buffer of the limit holds.
	MaxCapacity int
	Err         error // the device's error, for out-of-memory
}

func (e *KVCacheError) Error() string {
	what := fmt.Sprintf("gpu: KV cache of %d layers × %d positions × %d kv heads × %d %s (%d bytes)",
		e.Layers, e.Capacity, e.KVHeads, e.HeadDim, e.DType, e.Total)
	if e.Limit == "out-of-memory" {
		if e.Have == 0 {
			return fmt.Sprintf("%s: the device could not allocate %d bytes: %v", what, e.Need, e.Err)
		}
		return fmt.Sprintf("%s: the device ran out of memory after %d of %d bytes: %v", what, e.Have, e.Need, e.Err)
	}
	return fmt.Sprintf("%s needs %d bytes per layer's K and V buffer; the device allows %d (%s), room for %d positions",
		what, e.Need, e.Have, e.Limit, e.MaxCapacity)
}

func (e *KVCacheError) Unwrap() error { return e.Err }

// KVShapeError reports a KV cache request the kernels cannot serve.
type KVShapeError struct {
	Layers, Capacity, KVHeads, HeadDim int
	DType                              loader.DType
	Reason                             string
}

func (e *KVShapeError) Error() string {
	return fmt.Sprintf("gpu: KV cache of %d layers × %d positions × %d kv heads × %d %s: %s",
		e.Layers, e.Capacity, e.KVHeads, e.HeadDim, e.DType, e.Reason)
}
