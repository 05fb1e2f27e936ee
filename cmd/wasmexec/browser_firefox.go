package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"wasmllm/internal/testkit/firefox"
)

// executeFirefox runs the page at base in headless Firefox: the same page
// and server as Chromium's, with the write and exit bindings as BiDi
// channels (script.message events arrive in call order).
func executeFirefox(ctx context.Context, cfg *config, base string, out *outputs, done chan outcome, finish func(outcome)) (int, error) {
	o := firefox.Options{
		Exec:     cfg.browser,
		Channels: []string{writeBinding, exitBinding},
		OnMessage: func(ch, payload string) {
			switch ch {
			case writeBinding:
				if err := out.write(payload); err != nil {
					finish(outcome{err: err})
				}
			case exitBinding:
				code, err := strconv.Atoi(payload)
				if err != nil {
					finish(outcome{err: fmt.Errorf("bad exit code %q from the page", payload)})
					return
				}
				finish(outcome{code: code})
			}
		},
		OnConsole: func(level, text string) {
			if cfg.verbose || level == "error" || level == "warn" {
				fmt.Fprintf(os.Stderr, "wasmexec: console.%s: %s\n", level, text)
			}
		},
	}
	if cfg.verbose {
		o.Output = os.Stderr
	}
	tab, err := firefox.Start(ctx, o)
	if err != nil {
		return 0, err
	}
	defer tab.Close()
	if err := tab.Navigate(base+"/", time.Minute); err != nil {
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
		return 0, tab.WithTail(errors.New("Firefox exited before the program did"))
	case <-timer.C:
		tab.Eval(dumpGoroutinesJS, `e => String(e)`, 2*time.Second)
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		return 0, fmt.Errorf("timed out after %v (set -timeout or WASMEXEC_TIMEOUT)", cfg.timeout)
	case <-ctx.Done():
		return 0, errors.New("interrupted")
	}
}
