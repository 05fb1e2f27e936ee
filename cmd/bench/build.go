package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// goBuild builds pkg into out, for GOOS=js GOARCH=wasm when wasm is set.
func goBuild(ctx context.Context, root, out, pkg string, wasm bool) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = os.Environ()
	if wasm {
		cmd.Env = append(cmd.Env, "GOOS=js", "GOARCH=wasm")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}

// wasmExecJS returns the toolchain's wasm_exec.js.
func wasmExecJS(ctx context.Context, root string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOROOT")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %v", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "lib", "wasm", "wasm_exec.js")
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	return p, nil
}

// errNoNpm means the peer cannot be installed here.
var errNoNpm = errors.New("npm not found")

// installPeer installs bench/'s locked packages (wllama) with npm ci unless
// node_modules already matches the lock file, and returns wllama's esm
// folder.
func installPeer(ctx context.Context, dir string) (string, error) {
	esm := filepath.Join(dir, "node_modules", "@wllama", "wllama", "esm")
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return "", err
	}
	// npm ci writes node_modules/.package-lock.json; a newer copy means the
	// install is current.
	if st, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && !st.ModTime().Before(lock.ModTime()) {
		if _, err := os.Stat(filepath.Join(esm, "index.js")); err == nil {
			return esm, nil
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errNoNpm
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci in %s: %v\n%s", dir, err, b)
	}
	if _, err := os.Stat(filepath.Join(esm, "index.js")); err != nil {
		return "", fmt.Errorf("npm ci did not install wllama: %w", err)
	}
	return esm, nil
}

// convert runs cmd/convert (built at bin) on src into the folder dst.
func convert(ctx context.Context, bin, root, src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "-o", dst, "-progress=false", src)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("convert %s: %v\n%s", src, err, b)
	}
	return nil
}
