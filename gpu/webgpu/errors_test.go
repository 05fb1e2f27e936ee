package webgpu

import (
	"errors"
	"fmt"
	"testing"
)

func TestShaderErrorFormat(t *testing.T) {
	e := &ShaderError{File: "shaders/x.wgsl", Messages: []CompileMessage{
		{Type: "error", Line: 4, Col: 18, Text: "unresolved value 'y'", Src: "    let x = y;"},
		{Type: "warning", Line: 9, Col: 1, Text: "unused"},
	}}
	want := "shaders/x.wgsl:4:18: error: unresolved value 'y'\n\t    let x = y;\nshaders/x.wgsl:9:1: warning: unused"
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if got := (&ShaderError{File: "a.wgsl"}).Error(); got != "a.wgsl: shader module is invalid" {
		t.Errorf("empty ShaderError = %q", got)
	}
}

func TestErrorTypes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&DeviceLostError{Reason: "destroyed", Message: "bye"}, "gpu: device lost (destroyed): bye"},
		{&GPUError{Kind: "validation", Label: "bg", Message: "bad"}, `gpu: validation error in "bg": bad`},
		{&GPUError{Kind: "internal", Message: "oops"}, "gpu: internal error: oops"},
		{&LimitError{Label: "emb", Limit: "maxStorageBufferBindingSize", Need: 10, Have: 5}, `gpu: "emb" needs maxStorageBufferBindingSize = 10, the device allows 5`},
		{&UsageError{Op: "WriteBuffer", Label: "w", Msg: "misaligned"}, `gpu: WriteBuffer "w": misaligned`},
		{fmt.Errorf("%w: no adapter", ErrNoWebGPU), "gpu: WebGPU is not available: no adapter"},
	} {
		if tc.err.Error() != tc.want {
			t.Errorf("Error() = %q, want %q", tc.err.Error(), tc.want)
		}
	}
	if !errors.Is(fmt.Errorf("%w: x", ErrNoWebGPU), ErrNoWebGPU) {
		t.Error("wrapped ErrNoWebGPU not recognised")
	}
}

func TestStatsSub(t *testing.T) {
	a := Stats{Dispatches: 310, Submits: 3, Passes: 4, Maps: 2, BytesRead: 8, BytesWritten: 16, JSCalls: 9, ProgramRuns: 2}
	b := Stats{Dispatches: 10, Submits: 2, Passes: 3, Maps: 1, BytesRead: 4, BytesWritten: 0, JSCalls: 6, ProgramRuns: 1}
	want := Stats{Dispatches: 300, Submits: 1, Passes: 1, Maps: 1, BytesRead: 4, BytesWritten: 16, JSCalls: 3, ProgramRuns: 1}
	if got := a.Sub(b); got != want {
		t.Errorf("Sub = %+v, want %+v", got, want)
	}
}
