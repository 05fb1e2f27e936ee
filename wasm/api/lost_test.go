package api

import (
	"errors"
	"fmt"
	"testing"

	"wasmllm/gpu"
)

// A device loss, however deeply wrapped, is code device_lost with the
// loss's reason and message in the details.
func TestClassifyDeviceLost(t *testing.T) {
	lost := &gpu.DeviceLostError{Reason: "unknown", Message: "A valid external Instance reference no longer exists."}
	err := fmt.Errorf("decode step 3: %w", fmt.Errorf("gpu backend: %w", lost))
	e := Classify(err)
	if e.Code != CodeDeviceLost || e.Details["reason"] != "unknown" || e.Details["message"] != lost.Message {
		t.Errorf("Classify = %+v", e)
	}
	if e.Message != err.Error() || !errors.Is(e, lost) {
		t.Errorf("message %q, unwraps to the loss: %v", e.Message, errors.Is(e, lost))
	}
}
