package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"wasmllm/internal/chromium"
)

// browser is one headless Chromium (WebGPU on SwiftShader here, or on the
// machine's GPU with -chromium-flag) with one tab.
type browser struct {
	tab     *chromium.Tab
	verbose bool
}

// startBrowser starts Chromium with a fresh profile in profileDir, so Cache
// Storage starts empty and a model's first load comes from the network.
func startBrowser(ctx context.Context, exe, profileDir string, extra []string, verbose bool) (*browser, error) {
	if _, err := os.Stat(exe); err != nil {
		return nil, fmt.Errorf("no Chromium at %s (set -browser or WASMLLM_CHROMIUM): %w", exe, err)
	}
	tab, err := chromium.Start(ctx, chromium.Options{Exec: exe, Profile: profileDir, Extra: chromium.ExtraFlags(extra)})
	if err != nil {
		return nil, err
	}
	b := &browser{tab: tab, verbose: verbose}
	go b.console()
	return b, nil
}

func (b *browser) close() { b.tab.Close() }

// console prints the probe's progress lines, and the page's errors and
// warnings (all messages with -v).
func (b *browser) console() {
	for m, err := range chromedp.Console(b.tab.Ctx) {
		if err != nil {
			return
		}
		switch {
		case strings.HasPrefix(m.Text, "probe: ") || strings.HasPrefix(m.Text, "page: "):
			logf("%s", m.Text)
		case b.verbose || (m.Source != "network" && (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException)):
			logf("console.%s: %s", m.Type, m.Text)
		}
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
