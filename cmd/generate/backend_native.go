//go:build !js

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"wasmllm/cpu"
	"wasmllm/internal/inbrowser"
	"wasmllm/model"
)

func newBackend(ctx context.Context, c *config) (model.Backend, func(), error) {
	switch c.backend {
	case "cpu":
		return cpu.New(c.threads), func() {}, nil
	case "webgpu":
		return nil, nil, errors.New("-backend webgpu runs in the browser: use runElsewhere")
	}
	return nil, nil, fmt.Errorf("-backend %q: want cpu or webgpu", c.backend)
}

// runElsewhere runs the whole command in headless Chromium when the backend
// is webgpu (internal/inbrowser: cmd/generate built for GOOS=js, run by
// cmd/wasmexec with the same arguments and working directory). It reports
// whether it ran.
func runElsewhere(ctx context.Context, c *config, stdout, stderr io.Writer) (bool, error) {
	if c.backend != "webgpu" {
		return false, nil
	}
	files := c.structure.files()
	files["model"], files["tokenizer"] = c.model, c.tokenizer
	r := inbrowser.Run{Pkg: "./cmd/generate", Files: files, Args: c.args}
	if c.logits != "" {
		r.Writable = []string{c.logits}
	}
	return true, r.Do(ctx, stdout, stderr)
}

// ExitError is the exit status of the run in the browser.
type ExitError = inbrowser.ExitError

// OutsideRepoError reports a file the browser cannot read.
type OutsideRepoError = inbrowser.OutsideRepoError
