// Command wasmexec runs a GOOS=js GOARCH=wasm program in headless Chromium
// with WebGPU enabled. It is a drop-in go_js_wasm_exec:
//
//	GOOS=js GOARCH=wasm go test -exec "$PWD/build/wasmexec" ./gpu/
//	wasmexec [flags] prog.wasm [args...]
//
// It serves the program, Go's wasm_exec.js and the repository root (read-only,
// under /fs/) from 127.0.0.1, streams the program's stdout and stderr, and
// exits with the program's exit code. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"wasmllm/internal/testkit/firefox"
)

const usage = `usage: wasmexec [flags] prog.wasm [args...]

Runs a GOOS=js GOARCH=wasm program in headless Chromium with WebGPU.

Environment:
  WASMEXEC_TIMEOUT         default for -timeout (a Go duration)
  WASMEXEC_BROWSER         default for -browser
  WASMEXEC_CHROMIUM_FLAGS  extra Chromium flags, separated by spaces
  WASMEXEC_ENV             extra variable names to pass, separated by commas
                           (WASMLLM_*, GO* and CI always pass)

Flags:
`

func main() {
	os.Exit(run())
}

func run() int {
	fl := flag.NewFlagSet("wasmexec", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprint(fl.Output(), usage)
		fl.PrintDefaults()
	}
	timeout := fl.Duration("timeout", envDuration("WASMEXEC_TIMEOUT", 10*time.Minute),
		"kill the browser after this long (extended to -test.timeout plus 30s when that is longer)")
	browser := fl.String("browser", os.Getenv("WASMEXEC_BROWSER"), "Chromium executable (default /usr/bin/chromium, then $PATH), or a Firefox one (\"firefox\": /usr/bin/firefox-esr, then $PATH)")
	verbose := fl.Bool("v", false, "also print Chromium's own output and every console message of the page")
	var writable pathList
	fl.Var(&writable, "allow-write", "let the program create and write this file (repeatable); everything else is read-only")
	if err := fl.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fl.NArg() < 1 {
		fl.Usage()
		return 2
	}
	cfg, err := configure(fl.Arg(0), fl.Args()[1:], *browser, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmexec:", err)
		return 1
	}
	cfg.verbose = *verbose
	cfg.writable = writable

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT)
	defer stop()
	code, err := execute(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmexec:", err)
		return 1
	}
	return code
}

// config is one run, resolved from flags and the environment.
type config struct {
	wasm       string
	argv       []string
	env        map[string]string
	browser    string
	extraFlags []string
	wasmExecJS string
	repoRoot   string
	cwd        string   // the program's working directory
	writable   []string // absolute paths the program may write
	timeout    time.Duration
	verbose    bool
}

func configure(wasm string, args []string, browser string, timeout time.Duration) (*config, error) {
	st, err := os.Stat(wasm)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", wasm)
	}
	c := &config{
		wasm:       wasm,
		argv:       append([]string{wasm}, args...),
		env:        passEnv(os.Environ(), os.Getenv("WASMEXEC_ENV")),
		extraFlags: strings.Fields(os.Getenv("WASMEXEC_CHROMIUM_FLAGS")),
		timeout:    extendTimeout(timeout, args),
	}
	if err := checkArgSize(c.argv, c.env); err != nil {
		return nil, err
	}
	if c.browser, err = findBrowser(browser); err != nil {
		return nil, err
	}
	if c.wasmExecJS, err = findWasmExecJS(); err != nil {
		return nil, err
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if c.repoRoot, err = findRepoRoot(wd); err != nil {
		return nil, err
	}
	c.cwd = wd
	return c, nil
}

// pathList collects repeated path flags as absolute, clean paths.
type pathList []string

func (p *pathList) String() string { return strings.Join(*p, ",") }

func (p *pathList) Set(v string) error {
	abs, err := filepath.Abs(v)
	if err != nil {
		return err
	}
	*p = append(*p, abs)
	return nil
}

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
		fmt.Fprintf(os.Stderr, "wasmexec: ignoring %s=%q: not a positive duration\n", name, v)
	}
	return def
}

// extendTimeout leaves room for the test binary's own -test.timeout, which
// prints every goroutine's stack before it exits.
func extendTimeout(d time.Duration, args []string) time.Duration {
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "-test.timeout=")
		if !ok {
			v, ok = strings.CutPrefix(a, "--test.timeout=")
		}
		if !ok {
			continue
		}
		if t, err := time.ParseDuration(v); err == nil && t > 0 && t+30*time.Second > d {
			d = t + 30*time.Second
		}
	}
	return d
}

// passEnv keeps the variables a wasm program of this project reads:
// WASMLLM_*, GO*, and the names listed in extra.
func passEnv(environ []string, extra string) map[string]string {
	names := map[string]bool{}
	for _, n := range strings.Split(extra, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names[n] = true
		}
	}
	env := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if strings.HasPrefix(k, "WASMLLM_") || strings.HasPrefix(k, "GO") || k == "CI" || names[k] {
			env[k] = v
		}
	}
	return env
}

// argSizeLimit mirrors wasm_exec.js: argv and env strings, each NUL-terminated
// and 8-byte aligned, plus an 8-byte pointer for each and two terminators, must
// fit between linear-memory offsets 4096 and 12288.
const argSizeLimit = 8192

func checkArgSize(argv []string, env map[string]string) error {
	n := 0
	add := func(s string) { n += (len(s) + 1 + 7) &^ 7; n += 8 }
	for _, a := range argv {
		add(a)
	}
	for k, v := range env {
		add(k + "=" + v)
	}
	n += 16
	if n >= argSizeLimit {
		return fmt.Errorf("arguments and environment take %d bytes; wasm_exec.js allows fewer than %d (unset long GO* or WASMLLM_* variables)", n, argSizeLimit)
	}
	return nil
}

// ErrNoBrowser is returned when no Chromium executable is found.
var ErrNoBrowser = errors.New("Chromium not found: install it as /usr/bin/chromium, put chromium on $PATH, or set WASMEXEC_BROWSER")

func findBrowser(path string) (string, error) {
	if path == "firefox" {
		if p := firefox.Path(); p != "" {
			return p, nil
		}
		return "", errors.New("Firefox not found: install firefox-esr, or set WASMLLM_FIREFOX")
	}
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("browser %q: %w", path, err)
		}
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// findWasmExecJS finds the wasm_exec.js that matches the Go toolchain that
// built the program: $GOROOT (go test sets it), `go env GOROOT`, then the
// GOROOT this runner was built with.
func findWasmExecJS() (string, error) {
	var roots []string
	if r := os.Getenv("GOROOT"); r != "" {
		roots = append(roots, r)
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		roots = append(roots, strings.TrimSpace(string(out)))
	}
	roots = append(roots, runtime.GOROOT())
	for _, r := range roots {
		for _, rel := range []string{"lib/wasm/wasm_exec.js", "misc/wasm/wasm_exec.js"} {
			p := filepath.Join(r, rel)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("wasm_exec.js not found under GOROOT (tried %s)", strings.Join(roots, ", "))
}
