package webgpu

import (
	"fmt"
	"strings"

	"wasmllm/errcode"
)

// ErrNoWebGPU is returned (wrapped) by Open when the browser has no WebGPU or
// offers no adapter; its code is no_webgpu.
var ErrNoWebGPU = errcode.New(errcode.NoWebGPU, "gpu: WebGPU is not available")

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
