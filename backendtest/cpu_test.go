package backendtest

import (
	"testing"

	"wasmllm/cpu"
)

func TestCPU(t *testing.T) { Run(t, cpu.New(0), Options{}) }
