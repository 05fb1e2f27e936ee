//go:build !js

package main

import (
	"context"
	"errors"
	"io"

	"wasmllm/cpu"
	"wasmllm/internal/inbrowser"
	"wasmllm/model"
)

func newBackend(_ context.Context, c *config) (model.Backend, func(), error) {
	if c.backend == "cpu" {
		return cpu.New(c.threads), func() {}, nil
	}
	return nil, nil, errors.New("-backend webgpu runs in the browser: use runElsewhere")
}

// runElsewhere runs the whole command in headless Chromium when the backend
// is webgpu, as cmd/generate does (internal/inbrowser); the model must lie
// inside the repository, which wasmexec serves. It reports whether it ran.
func runElsewhere(ctx context.Context, c *config, stdout, stderr io.Writer) (bool, error) {
	if c.backend != "webgpu" {
		return false, nil
	}
	r := inbrowser.Run{Pkg: "./cmd/embed", Files: map[string]string{"model": c.model}, Args: c.args}
	return true, r.Do(ctx, stdout, stderr)
}
