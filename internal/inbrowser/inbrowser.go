//go:build !js

// Package inbrowser runs a command of this repository, built for GOOS=js,
// in headless Chromium through cmd/wasmexec: the -backend webgpu path of
// cmd/generate and cmd/embed. The browser reads files only inside the
// repository, which wasmexec serves, so the files a run names are checked
// first.
package inbrowser

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
)

// Run is one run of a command in the browser.
type Run struct {
	// Pkg is the command's package, e.g. "./cmd/generate"; it is built to
	// build/NAME.wasm in the repository (the go command's cache makes later
	// builds quick), beside build/wasmexec.
	Pkg string
	// Files maps a flag's name to the file it names; each must lie in the
	// repository (an empty path is skipped).
	Files map[string]string
	// Writable are paths the program may write (wasmexec's -allow-write).
	Writable []string
	// Args are the program's arguments.
	Args []string
}

// Do builds and runs r with the working directory's repository, writing the
// program's output to stdout and stderr. A run that exits non-zero gives an
// *ExitError (the program has printed its own error); a file outside the
// repository an *OutsideRepoError, before anything is built.
func (r Run) Do(ctx context.Context, stdout, stderr io.Writer) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := ModuleRoot(wd)
	if err != nil {
		return fmt.Errorf("-backend webgpu: %w (%s builds for the browser)", err, r.Pkg)
	}
	for flag, p := range r.Files {
		if p != "" {
			if err := checkInside(root, flag, p); err != nil {
				return err
			}
		}
	}
	wasm := filepath.Join(root, "build", filepath.Base(r.Pkg)+".wasm")
	runner := filepath.Join(root, "build", "wasmexec")
	if err := goBuild(ctx, root, wasm, r.Pkg, "js", "wasm"); err != nil {
		return err
	}
	if err := goBuild(ctx, root, runner, "./cmd/wasmexec", runtime.GOOS, runtime.GOARCH); err != nil {
		return err
	}
	var args []string
	for _, w := range r.Writable {
		args = append(args, "-allow-write", w)
	}
	args = append(append(args, wasm), r.Args...)
	cmd := exec.CommandContext(ctx, runner, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// wasmexec closes Chromium on an interrupt; a kill would leave it running.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return &ExitError{Code: ee.ExitCode()}
	}
	return err
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

// ModuleRoot walks up from dir to the directory whose go.mod declares
// module wasmllm.
func ModuleRoot(dir string) (string, error) {
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
			return "", fmt.Errorf("run it inside the wasmllm repository (%s is not)", dir)
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
