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
// is webgpu: it builds cmd/generate for GOOS=js (build/generate.wasm) and
// cmd/wasmexec (build/wasmexec) in the repository, the go command's cache
// making later builds quick, then runs the program there with the same
// arguments and working directory. It reports whether it ran.
func runElsewhere(ctx context.Context, c *config, stdout, stderr io.Writer) (bool, error) {
	if c.backend != "webgpu" {
		return false, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return true, err
	}
	root, err := findModuleRoot(wd)
	if err != nil {
		return true, err
	}
	files := c.structure.files()
	files["model"], files["tokenizer"] = c.model, c.tokenizer
	for _, flag := range []string{"model", "tokenizer", "json-schema", "grammar", "tools"} {
		if p := files[flag]; p != "" {
			if err := checkInside(root, flag, p); err != nil {
				return true, err
			}
		}
	}
	wasm := filepath.Join(root, "build", "generate.wasm")
	runner := filepath.Join(root, "build", "wasmexec")
	if err := goBuild(ctx, root, wasm, "./cmd/generate", "js", "wasm"); err != nil {
		return true, err
	}
	if err := goBuild(ctx, root, runner, "./cmd/wasmexec", runtime.GOOS, runtime.GOARCH); err != nil {
		return true, err
	}
	var args []string
	if c.logits != "" {
		args = append(args, "-allow-write", c.logits)
	}
	args = append(append(args, wasm), c.args...)
	cmd := exec.CommandContext(ctx, runner, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// wasmexec closes Chromium on an interrupt; a kill would leave it running.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return true, &ExitError{Code: ee.ExitCode()}
	}
	return true, err
}

// ExitError is the exit status of the run in the browser, which has printed
// its own error.
type ExitError struct{ Code int }

func (e *ExitError) Error() string {
	return fmt.Sprintf("-backend webgpu: the run in headless Chromium exited with status %d", e.Code)
}

// ExitCode is the status to exit with.
func (e *ExitError) ExitCode() int { return e.Code }

// OutsideRepoError reports a file the browser cannot read: wasmexec serves it
// only the repository.
type OutsideRepoError struct {
	Flag, Path, Root string
}

func (e *OutsideRepoError) Error() string {
	return fmt.Sprintf("-%s %s: -backend webgpu reads files through wasmexec, which serves the browser only the repository %s; copy the file under it",
		e.Flag, e.Path, e.Root)
}

// checkInside reports whether path, with symbolic links resolved as the
// server resolves them, lies inside root. A missing file is left to the run
// itself to report.
func checkInside(root, flag, path string) error {
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
		return &OutsideRepoError{Flag: flag, Path: path, Root: root}
	}
	return nil
}

// findModuleRoot walks up from dir to the directory whose go.mod declares
// module wasmllm.
func findModuleRoot(dir string) (string, error) {
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
			return "", fmt.Errorf("-backend webgpu: run it inside the wasmllm repository (%s is not): it builds cmd/generate for the browser", dir)
		}
		d = parent
	}
}

// goBuild builds pkg for goos/goarch into out, in the repository root.
func goBuild(ctx context.Context, root, out, pkg, goos, goarch string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("-backend webgpu: building %s for %s/%s: %v\n%s", pkg, goos, goarch, err, b)
	}
	return nil
}
