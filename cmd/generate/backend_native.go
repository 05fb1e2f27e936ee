//go:build !js

package main

import (
	"context"
	"fmt"

	"wasmllm/cpu"
	"wasmllm/model"
)

func newBackend(ctx context.Context, c *config) (model.Backend, func(), error) {
	switch c.backend {
	case "cpu":
		return cpu.New(c.threads), func() {}, nil
	case "webgpu":
		return nil, nil, fmt.Errorf("-backend webgpu: not wired to headless Chromium yet")
	}
	return nil, nil, fmt.Errorf("-backend %q: want cpu or webgpu", c.backend)
}
