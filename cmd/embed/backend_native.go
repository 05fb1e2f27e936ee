//go:build !js

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"wasmllm/cpu"
	"wasmllm/model"
)

func newBackend(_ context.Context, c *config) (model.Backend, func(), error) {
	if c.backend == "cpu" {
		return cpu.New(c.threads), func() {}, nil
	}
	return nil, nil, errors.New("-backend webgpu runs in the browser: use runElsewhere")
}

// runElsewhere runs the whole command in headless Chromium when the backend
// is webgpu, as cmd/generate does: it builds cmd/embed for GOOS=js
// (build/embed.wasm) and cmd/wasmexec (build/wasmexec) in the repository,
// then runs the program there with the same arguments and working
// directory; the model must lie inside the repository, which wasmexec
// serves. It reports whether it ran.
func runElsewhere(ctx context.Context, c *config, stdout, stderr io.Writer) (bool, error) {
	if c.backend != "webgpu" {
		return false, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return true, err
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return true, err
	}
	if err := inside(root, c.model); err != nil {
		return true, err
	}
	wasm := filepath.Join(root, "build", "embed.wasm")
	runner := filepath.Join(root, "build", "wasmexec")
	for _, b := range []struct{ out, pkg, goos, goarch string }{
		{wasm, "./cmd/embed", "js", "wasm"}, {runner, "./cmd/wasmexec", runtime.GOOS, runtime.GOARCH},
	} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS="+b.goos, "GOARCH="+b.goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			return true, fmt.Errorf("-backend webgpu: building %s for %s/%s: %v\n%s", b.pkg, b.goos, b.goarch, err, out)
		}
	}
	cmd := exec.CommandContext(ctx, runner, append([]string{wasm}, c.args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return true, fmt.Errorf("-backend webgpu: the run in headless Chromium exited with status %d", ee.ExitCode())
	}
	return true, err
}

// inside reports a model outside root, which the browser cannot read.
func inside(root, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if realRoot, err := filepath.EvalSymlinks(root); err == nil {
		root = realRoot
	}
	if rel, err := filepath.Rel(root, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("-model %s: -backend webgpu reads files through wasmexec, which serves the browser only the repository %s; copy the file under it", path, root)
	}
	return nil
}

// moduleRoot walks up from dir to the directory whose go.mod declares
// module wasmllm.
func moduleRoot(dir string) (string, error) {
	for d := dir; ; {
		if f, err := os.Open(filepath.Join(d, "go.mod")); err == nil {
			s := bufio.NewScanner(f)
			for s.Scan() {
				if mod, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok && strings.Trim(strings.TrimSpace(mod), `"`) == "wasmllm" {
					f.Close()
					return d, nil
				}
			}
			f.Close()
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("-backend webgpu: run it inside the wasmllm repository (%s is not): it builds cmd/embed for the browser", dir)
		}
		d = parent
	}
}
