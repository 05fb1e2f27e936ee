package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/chromium"
	"wasmllm/internal/testkit/firefox"
)

// browser is one headless browser with one tab: Chromium (WebGPU on
// SwiftShader here, or on the machine's GPU with -chromium-flag), or
// Firefox (wgpu over llvmpipe here).
type browser struct {
	tab     browsertest.Tab
	name    string // "chromium" or "firefox"
	verbose bool
}

// startBrowser starts Chromium with a fresh profile in profileDir, so Cache
// Storage starts empty and a model's first load comes from the network.
func startBrowser(ctx context.Context, exe, profileDir string, extra []string, verbose bool) (*browser, error) {
	if _, err := os.Stat(exe); err != nil {
		return nil, fmt.Errorf("no Chromium at %s (set -browser or WASMLLM_CHROMIUM): %w", exe, err)
	}
	t, err := chromium.Start(ctx, chromium.Options{Exec: exe, Profile: profileDir, Extra: chromium.ExtraFlags(extra)})
	if err != nil {
		return nil, err
	}
	b := &browser{tab: t, name: "chromium", verbose: verbose}
	go func() {
		for m, err := range chromedp.Console(t.Ctx) {
			if err != nil {
				return
			}
			b.console(string(m.Type), m.Text, m.Source == "network" ||
				m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException)
		}
	}()
	return b, nil
}

// startFirefox starts Firefox with a fresh profile in profileDir and WebGPU
// on (firefox.Prefs).
func startFirefox(ctx context.Context, exe, profileDir string, verbose bool) (*browser, error) {
	b := &browser{name: "firefox", verbose: verbose}
	t, err := firefox.Start(ctx, firefox.Options{Exec: exe, Profile: profileDir,
		OnConsole: func(level, text string) { b.console(level, text, level != "error") }})
	if err != nil {
		return nil, err
	}
	b.tab = t
	return b, nil
}

func (b *browser) close() { b.tab.Close() }

// console prints the probe's progress lines, and the page's errors (all
// messages with -v); quiet is a message that is neither.
func (b *browser) console(level, text string, quiet bool) {
	prefix := ""
	if b.name == "firefox" {
		prefix = "firefox: "
	}
	switch {
	case strings.HasPrefix(text, "probe: ") || strings.HasPrefix(text, "page: "):
		logf("%s%s", prefix, text)
	case b.verbose || !quiet:
		logf("%sconsole.%s: %s", prefix, level, text)
	}
}

// call evaluates fn(arg) on a freshly loaded page, awaits the promise it
// returns and decodes its value into out. A throw or a rejection is an
// error, and so is running past timeout (the page is then left behind by
// the next open).
func (b *browser) call(pageURL, fn string, arg any, timeout time.Duration, out any) error {
	if err := b.tab.Open(pageURL, time.Minute); err != nil {
		return err
	}
	a, err := json.Marshal(arg)
	if err != nil {
		return err
	}
	res, err := b.tab.Eval("("+fn+")("+string(a)+")", `e => String((e && (e.stack || e.message)) || e)`, timeout)
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	if !res.OK {
		var msg string
		json.Unmarshal(res.Error, &msg)
		return fmt.Errorf("%s: %s", fn, msg)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res.Value, out)
}
