package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"wasmllm/internal/testkit"
	"wasmllm/internal/testkit/chromium"
	"wasmllm/internal/testkit/firefox"
)

// NoWebGPU is an extra option for NewBrowser: a browser without a WebGPU
// adapter, as on browsers and machines that lack one.
var NoWebGPU chromedp.ExecAllocatorOption = func(a *chromedp.ExecAllocator) {
	chromedp.Flag("enable-unsafe-webgpu", false)(a)
	chromedp.Flag("disable-features", "WebGPU")(a)
}

// Chromium is the browser binary (see chromium.Path).
func Chromium() string {
	if p := chromium.Path(); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// Tab is one page of either headless browser, a *chromium.Tab or a
// *firefox.Tab: what a Browser and the bench drive.
type Tab interface {
	// Open navigates to url and waits until the page sets window.pageReady.
	Open(url string, timeout time.Duration) error
	// Reload reloads the page and waits for window.pageReady.
	Reload(timeout time.Duration) error
	// Eval evaluates expr, awaits it if it is a promise, and returns how it
	// settled; errorJS renders a thrown value as JSON.
	Eval(expr, errorJS string, timeout time.Duration) (*chromium.Result, error)
	// Close ends the browser.
	Close()
}

var (
	_ Tab = (*chromium.Tab)(nil)
	_ Tab = (*firefox.Tab)(nil)
)

// Browser is one headless browser with one tab, closed when the test ends:
// Chromium (NewBrowser, driven over CDP) or Firefox (NewFirefox, over
// WebDriver BiDi). Open, Reload, Run, Console, Click and Keys work in both;
// Viewport and Screenshot need Chromium.
type Browser struct {
	t       testing.TB
	tab     Tab
	ctx     context.Context // Chromium's tab context; nil in Firefox
	mu      sync.Mutex
	console []string
	// Timeout bounds each Run (default 3 minutes).
	Timeout time.Duration
}

// errNeedsChromium: an input or screenshot helper called on Firefox.
var errNeedsChromium = errors.New("browsertest: this helper drives Chromium over CDP; in Firefox use Run")

// NewBrowser starts Chromium with a fresh profile (so Cache Storage starts
// empty), with chromium.Flags and then extra. Without Chromium it is a
// testkit.Need: skipped, or failed under CI.
func NewBrowser(t testing.TB, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	_, err := os.Stat(Chromium())
	testkit.Need(t, err == nil, "no Chromium at %s (set WASMLLM_CHROMIUM)", Chromium())
	tab, err := chromium.Start(context.Background(), chromium.Options{Exec: Chromium(), Profile: t.TempDir(), Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	b := &Browser{t: t, tab: tab, ctx: tab.Ctx, Timeout: 3 * time.Minute}
	go func() {
		for m, err := range chromedp.Console(b.ctx) {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, fmt.Sprintf("console.%s: %s", m.Type, m.Text))
			b.mu.Unlock()
		}
	}()
	b.closeAtCleanup()
	return b
}

// Firefox is the Firefox binary (see firefox.Path).
func Firefox() string {
	if p := firefox.Path(); p != "" {
		return p
	}
	return "/usr/bin/firefox-esr"
}

// NewFirefox starts headless Firefox with a fresh profile and WebGPU on
// (firefox.Prefs). Without Firefox it is a testkit.Need.
func NewFirefox(t testing.TB) *Browser {
	t.Helper()
	return NewFirefoxPrefs(t, nil)
}

// NewFirefoxPrefs is NewFirefox with prefs set after firefox.Prefs: to turn
// something off, as on a browser that lacks it.
func NewFirefoxPrefs(t testing.TB, prefs map[string]any) *Browser {
	t.Helper()
	_, err := os.Stat(Firefox())
	testkit.Need(t, err == nil, "no Firefox at %s (set WASMLLM_FIREFOX)", Firefox())
	b := &Browser{t: t, Timeout: 3 * time.Minute}
	tab, err := firefox.Start(context.Background(), firefox.Options{Exec: Firefox(), Profile: t.TempDir(), Prefs: prefs,
		OnConsole: func(level, text string) {
			b.mu.Lock()
			b.console = append(b.console, fmt.Sprintf("console.%s: %s", level, text))
			b.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	b.tab = tab
	b.closeAtCleanup()
	return b
}

func (b *Browser) closeAtCleanup() {
	b.t.Cleanup(func() {
		if b.t.Failed() {
			b.t.Logf("browser console:\n%s", strings.Join(b.Console(), "\n"))
		}
		b.tab.Close()
	})
}

// NewTab opens another tab of the same browser, as a Browser of its own:
// the same profile, so the same origins' storage, caches, Web Locks and
// SharedWorkers (tests of several tabs of one origin). It is closed when
// the test ends, or earlier by Close. In Firefox its console messages go
// to the first tab's Console.
func (b *Browser) NewTab() *Browser {
	b.t.Helper()
	nb := &Browser{t: b.t, Timeout: b.Timeout}
	switch tab := b.tab.(type) {
	case *chromium.Tab:
		nt, err := tab.NewTab()
		if err != nil {
			b.t.Fatal(err)
		}
		nb.tab, nb.ctx = nt, nt.Ctx
		go func() {
			for m, err := range chromedp.Console(nb.ctx) {
				if err != nil {
					return
				}
				nb.mu.Lock()
				nb.console = append(nb.console, fmt.Sprintf("console.%s: %s", m.Type, m.Text))
				nb.mu.Unlock()
			}
		}()
	case *firefox.Tab:
		nt, err := tab.NewTab(time.Minute)
		if err != nil {
			b.t.Fatal(err)
		}
		nb.tab = nt
	default:
		b.t.Fatalf("browsertest: NewTab on a %T", b.tab)
	}
	nb.closeAtCleanup()
	return nb
}

// Close closes a tab from NewTab, as a user closing it would (its page
// goes away); on the first tab it ends the browser. Closing twice is
// harmless.
func (b *Browser) Close() {
	b.tab.Close()
}

// Console returns the page's console messages so far.
func (b *Browser) Console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

// Open navigates to url and waits until the page sets window.pageReady
// (TestPage does once wasmllm.js is imported).
func (b *Browser) Open(url string) {
	b.t.Helper()
	if err := b.tab.Open(url, b.Timeout); err != nil {
		b.t.Fatal(err)
	}
}

// Reload reloads the page and waits for window.pageReady.
func (b *Browser) Reload() {
	b.t.Helper()
	if err := b.tab.Reload(b.Timeout); err != nil {
		b.t.Fatal(err)
	}
}

// JSError is a rejection or exception from Run, with the WasmLLMError's
// code when it had one.
type JSError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

func (e *JSError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Run evaluates a JavaScript expression, awaits it if it is a promise, and
// decodes its value (as JSON) into out, which may be nil. A throw or a
// rejection is returned as a *JSError.
func (b *Browser) Run(expr string, out any) error {
	res, err := b.tab.Eval(expr, `e => ({code: (e && e.code) || "", message: String((e && e.message) || e), details: (e && e.details) || null})`, b.Timeout)
	if err != nil {
		return err
	}
	if !res.OK {
		var je JSError
		if err := json.Unmarshal(res.Error, &je); err != nil {
			return fmt.Errorf("decoding the error of %.80q: %w", expr, err)
		}
		return &je
	}
	if out == nil || len(res.Value) == 0 {
		return nil
	}
	return json.Unmarshal(res.Value, out)
}

// MustRun is Run that fails the test on error.
func (b *Browser) MustRun(expr string, out any) {
	b.t.Helper()
	if err := b.Run(expr, out); err != nil {
		b.t.Fatal(err)
	}
}

// Screenshot saves a PNG of the page to path.
func (b *Browser) Screenshot(path string) error {
	if b.ctx == nil {
		return errNeedsChromium
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	return os.WriteFile(path, buf, 0o644)
}
