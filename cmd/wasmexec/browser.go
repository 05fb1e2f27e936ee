package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"wasmllm/internal/testkit/chromium"
	"wasmllm/internal/testkit/firefox"
)

// The page reports through these CDP bindings. Runtime.bindingCalled events
// arrive in call order, so stdout and stderr keep the program's order.
const (
	writeBinding = "__wasmexec_write"
	exitBinding  = "__wasmexec_exit"
)

// outcome is how a run ended: the program's exit code, or an error.
type outcome struct {
	code int
	err  error
}

// execute runs cfg's program in a fresh headless Chromium (or Firefox, when
// cfg.browser is one) and returns its exit code.
func execute(ctx context.Context, cfg *config) (int, error) {
	srv, err := newServer(cfg.wasm, cfg.wasmExecJS, cfg.repoRoot, pageConfig{
		WASM:         "/prog.wasm",
		Argv:         cfg.argv,
		Env:          cfg.env,
		WriteBinding: writeBinding,
		ExitBinding:  exitBinding,
		Root:         cfg.repoRoot,
		Cwd:          cfg.cwd,
		Writable:     cfg.writable,
	})
	if err != nil {
		return 0, err
	}
	base, stopServer, err := srv.listen()
	if err != nil {
		return 0, err
	}
	defer stopServer()

	var verboseOut io.Writer
	if cfg.verbose {
		verboseOut = os.Stderr
	}
	done := make(chan outcome, 1)
	finish := func(o outcome) {
		select {
		case done <- o:
		default:
		}
	}
	out := &outputs{stdout: os.Stdout, stderr: os.Stderr}
	if firefox.IsFirefox(cfg.browser) {
		return executeFirefox(ctx, cfg, base, out, done, finish)
	}
	tab, err := chromium.Start(ctx, chromium.Options{Exec: cfg.browser, Output: verboseOut, Extra: chromium.ExtraFlags(cfg.extraFlags),
		Listen: func(ev any) {
			if ev, ok := ev.(*runtime.EventBindingCalled); ok {
				switch ev.Name {
				case writeBinding:
					if err := out.write(ev.Payload); err != nil {
						finish(outcome{err: err})
					}
				case exitBinding:
					code, err := strconv.Atoi(ev.Payload)
					if err != nil {
						finish(outcome{err: fmt.Errorf("bad exit code %q from the page", ev.Payload)})
						return
					}
					finish(outcome{code: code})
				}
			}
		}})
	if err != nil {
		return 0, err
	}
	defer tab.Close()
	tctx := tab.Ctx

	start := func() error {
		for _, name := range []string{writeBinding, exitBinding} {
			if _, err := chromedp.Call(tctx, runtime.AddBinding, runtime.AddBindingParams{Name: name}); err != nil {
				return fmt.Errorf("starting %s: %w", cfg.browser, err)
			}
		}
		go forwardConsole(tctx, cfg.verbose)
		res, err := chromedp.Call(tctx, page.Navigate, page.NavigateParams{URL: base + "/"})
		if err != nil {
			return fmt.Errorf("loading the page: %w", err)
		}
		if res.ErrorText != "" {
			return fmt.Errorf("loading the page: %s", res.ErrorText)
		}
		return nil
	}
	if err := start(); err != nil {
		return 0, tab.WithTail(err)
	}
	detached, err := chromedp.Detached(tctx)
	if err != nil {
		return 0, err
	}

	timer := time.NewTimer(cfg.timeout)
	defer timer.Stop()
	select {
	case o := <-done:
		if o.err != nil {
			return 0, tab.WithTail(o.err)
		}
		return o.code, nil
	case <-tab.Crashed:
		return 0, tab.WithTail(errors.New("the page crashed (renderer process died)"))
	case <-timer.C:
		dumpGoroutines(tctx, done)
		return 0, fmt.Errorf("timed out after %v (set -timeout or WASMEXEC_TIMEOUT)", cfg.timeout)
	case <-detached:
		return 0, tab.WithTail(errors.New("the page went away before the program exited"))
	case <-tctx.Done():
		if ctx.Err() != nil {
			return 0, errors.New("interrupted")
		}
		return 0, tab.WithTail(errors.New("lost the connection to Chromium before the program exited"))
	}
}

// dumpGoroutines asks a Go program that waits on events to print every
// goroutine's stack, as go_js_wasm_exec does under Node on a deadlock: an
// event with id 0 makes the runtime block forever, which it then reports. A
// program busy in a loop never sees it.
func dumpGoroutines(ctx context.Context, done <-chan outcome) {
	ectx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	go chromedp.Do(ectx, chromedp.Evaluate[chromedp.Void](dumpGoroutinesJS))
	select {
	case <-done:
	case <-ectx.Done():
	}
}

// dumpGoroutinesJS makes a waiting Go program report every goroutine.
const dumpGoroutinesJS = `(g => { if (g && !g.exited) { g._pendingEvent = { id: 0 }; g._resume(); } })(globalThis.wasmexecGo)`

// forwardConsole prints the page's console errors and warnings (WebGPU
// reports some problems only there) and, when verbose, every other message
// and the network log (tests fetch missing files on purpose).
func forwardConsole(ctx context.Context, verbose bool) {
	for m, err := range chromedp.Console(ctx) {
		if err != nil {
			return
		}
		quiet := m.Source == "network" ||
			m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleWarning
		if quiet && !verbose {
			continue
		}
		fmt.Fprintf(os.Stderr, "wasmexec: console.%s: %s\n", m.Type, m.Text)
	}
}

// outputs decodes the page's "fd:base64" writes onto the real stdout and stderr.
type outputs struct {
	stdout, stderr io.Writer
}

func (o *outputs) write(payload string) error {
	fd, b64, ok := strings.Cut(payload, ":")
	if !ok {
		return fmt.Errorf("bad write from the page: %.40q", payload)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("bad write from the page: %w", err)
	}
	w := o.stdout
	if fd == "2" {
		w = o.stderr
	}
	_, err = w.Write(data)
	return err
}
