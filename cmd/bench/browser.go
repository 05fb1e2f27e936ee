package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"wasmllm/internal/chromium"
)

// browser is one headless Chromium (WebGPU on SwiftShader here, or on the
// machine's GPU with -chromium-flag) with one tab, driven over CDP.
type browser struct {
	ctx     context.Context
	cancel  func()
	verbose bool
	crashed chan struct{}
	log     *chromium.TailBuffer
}

// startBrowser starts Chromium with a fresh profile in profileDir, so Cache
// Storage starts empty and a model's first load comes from the network.
func startBrowser(ctx context.Context, exe, profileDir string, extra []string, verbose bool) (*browser, error) {
	if _, err := os.Stat(exe); err != nil {
		return nil, fmt.Errorf("no Chromium at %s (set -browser or WASMLLM_CHROMIUM): %w", exe, err)
	}
	b := &browser{verbose: verbose, crashed: make(chan struct{}), log: &chromium.TailBuffer{Max: 16 << 10}}
	opts := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(exe), chromedp.UserDataDir(profileDir),
		chromedp.CombinedOutput(b.log)}, chromium.Flags...)
	opts = append(opts, chromium.ExtraFlags(extra)...)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	var once sync.Once
	tctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if _, ok := ev.(*inspector.EventTargetCrashed); ok {
			once.Do(func() { close(b.crashed) })
		}
	}))
	b.ctx = tctx
	b.cancel = func() { cancelTab(); cancelAlloc() }
	// chromedp turns the Network domain on, which keeps a copy of every
	// response for DevTools: models are large, so turn it off.
	if _, err := chromedp.Call(tctx, network.Disable, cdp.Empty{}); err != nil {
		b.cancel()
		return nil, fmt.Errorf("starting %s: %w%s", exe, err, suffix(b.log))
	}
	go b.console()
	return b, nil
}

func (b *browser) close() { b.cancel() }

// console prints the probe's progress lines, and the page's errors and
// warnings (all messages with -v).
func (b *browser) console() {
	for m, err := range chromedp.Console(b.ctx) {
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

// open navigates to url and waits for window.pageReady.
func (b *browser) open(url string) error {
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Navigate(url),
		chromedp.Poll[chromedp.Void]("window.pageReady === true", chromedp.WithPollingTimeout(time.Minute)))
	if err != nil {
		return fmt.Errorf("opening %s: %w%s", url, err, suffix(b.log))
	}
	return nil
}

// call evaluates fn(arg) on a freshly loaded page, awaits the promise it
// returns and decodes its value into out. A throw or a rejection is an
// error, and so is running past timeout (the page is then left behind by
// the next open).
func (b *browser) call(pageURL, fn string, arg any, timeout time.Duration, out any) error {
	if err := b.open(pageURL); err != nil {
		return err
	}
	a, err := json.Marshal(arg)
	if err != nil {
		return err
	}
	expr := `(async () => { try { return {ok: true, value: await (` + fn + `)(` + string(a) + `)}; } catch (e) {
		return {ok: false, error: String((e && (e.stack || e.message)) || e)}; } })()`
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	type reply struct {
		raw []byte
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
		ch <- reply{raw, err}
	}()
	var r reply
	select {
	case r = <-ch:
	case <-b.crashed:
		return errors.New("the page crashed (renderer process died)" + suffix(b.log))
	}
	if r.err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: no answer within %v", fn, timeout)
		}
		return fmt.Errorf("%s: %w%s", fn, r.err, suffix(b.log))
	}
	var res struct {
		OK    bool            `json:"ok"`
		Value json.RawMessage `json:"value"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(r.raw, &res); err != nil {
		return fmt.Errorf("%s: decoding the reply: %w", fn, err)
	}
	if !res.OK {
		return fmt.Errorf("%s: %s", fn, res.Error)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res.Value, out)
}

// suffix is the output's tail, for an error message.
func suffix(t *chromium.TailBuffer) string {
	if s := strings.TrimSpace(t.String()); s != "" {
		return "\nChromium output (tail):\n" + s
	}
	return ""
}
