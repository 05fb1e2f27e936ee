package model

import (
	"errors"
	"fmt"

	"wasmllm/errcode"
)

// UnsupportedError reports a model that a backend cannot run yet: a layer
// kind or parameter its kernels do not have. Build returns it (through a
// LayerChecker) before a weight is uploaded, and the browser's plan before
// a byte is fetched, so nothing computes with a missing kernel.
type UnsupportedError struct {
	Backend string // "webgpu"
	Arch    string
	What    string // the missing kernels, e.g. "Gated DeltaNet layers"
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("model: architecture %s is not supported on %s yet (%s); use the CPU backend", e.Arch, e.Backend, e.What)
}

// Unwrap makes errors.Is(err, errors.ErrUnsupported) hold.
func (e *UnsupportedError) Unwrap() error { return errors.ErrUnsupported }

// ErrorCode is bad_model: this model cannot load on this backend.
func (e *UnsupportedError) ErrorCode() string { return errcode.BadModel }

// ErrorDetails names the backend, the architecture and what is missing.
func (e *UnsupportedError) ErrorDetails() map[string]any {
	return map[string]any{"backend": e.Backend, "arch": e.Arch, "unsupported": e.What}
}

// LayerChecker is an optional Backend interface: a backend that has the
// kernels of only some layer kinds refuses a config it cannot run (a
// *UnsupportedError), which Build asks before uploading a weight.
type LayerChecker interface {
	CheckLayers(c *Config) error
}
