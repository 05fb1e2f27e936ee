package errcode

import (
	"errors"
	"fmt"
	"testing"
)

// A sentinel from New keeps its text and code through wrapping, and is
// itself only.
func TestNewError(t *testing.T) {
	s := New(NoWebGPU, "gpu: WebGPU is not available")
	err := fmt.Errorf("%w: requestAdapter returned no adapter", s)
	var c Coded
	if !errors.As(err, &c) || c.ErrorCode() != NoWebGPU || c.Error() != "gpu: WebGPU is not available" {
		t.Fatalf("errors.As(%v) = %v", err, c)
	}
	if !errors.Is(err, s) || errors.Is(err, New(NoWebGPU, s.Error())) {
		t.Errorf("errors.Is: the sentinel %v, another with the same text %v", errors.Is(err, s), errors.Is(err, New(NoWebGPU, s.Error())))
	}
}
