//go:build js

package main

import (
	"context"
	"io"

	"wasmllm/cpu"
	"wasmllm/gpu"
	"wasmllm/model"
)

// newBackend opens the browser's WebGPU device for -backend webgpu.
func newBackend(ctx context.Context, c *config) (model.Backend, func(), error) {
	if c.backend == "cpu" {
		return cpu.New(c.threads), func() {}, nil
	}
	b, d, err := gpu.OpenBackend(ctx, gpu.Options{}, gpu.BackendOptions{})
	if err != nil {
		return nil, nil, err
	}
	return b, d.Close, nil
}

// runElsewhere does nothing in the browser: the command runs here.
func runElsewhere(context.Context, *config, io.Writer, io.Writer) (bool, error) { return false, nil }
