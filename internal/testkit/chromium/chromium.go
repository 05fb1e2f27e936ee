// Package chromium is the one driver of headless Chromium that the browser
// tests, the bench and wasmexec share: the verified flags for WebGPU on
// SwiftShader, how to find the binary, starting it with one tab (Tab),
// opening a page, evaluating JavaScript, and the tail of the browser's own
// output for error messages.
package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Flags are the flags for headless Chromium with WebGPU (SwiftShader on
// CPU-only machines) and a quiet network.
var Flags = []chromedp.ExecAllocatorOption{
	chromedp.Headless,
	chromedp.NoSandbox,
	chromedp.NoFirstRun,
	chromedp.NoDefaultBrowserCheck,
	chromedp.Flag("enable-unsafe-webgpu", true),
	chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("disable-sync", true),
	chromedp.Flag("disable-quic", true),
	chromedp.Flag("disable-extensions", true),
	chromedp.Flag("disable-dev-shm-usage", true),
	chromedp.Flag("disable-background-timer-throttling", true),
	chromedp.Flag("disable-renderer-backgrounding", true),
	chromedp.Flag("disable-hang-monitor", true),
}

// ExtraFlags turns command-line style flags ("--name" or "--name=value")
// into allocator options.
func ExtraFlags(flags []string) []chromedp.ExecAllocatorOption {
	var opts []chromedp.ExecAllocatorOption
	for _, f := range flags {
		name, val, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if ok {
			opts = append(opts, chromedp.Flag(name, val))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts
}

// Path is the browser binary: $WASMLLM_CHROMIUM, else /usr/bin/chromium,
// else chromium on $PATH; "" when none is found.
func Path() string {
	if p := os.Getenv("WASMLLM_CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// TailBuffer keeps the last Max bytes written to it (the browser's own
// output, for error messages).
type TailBuffer struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

func (b *TailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns what the buffer holds.
func (b *TailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Options configure Start.
type Options struct {
	Exec    string // the binary; "" for Path()
	Profile string // the user data folder; "" for a fresh one Chromium picks
	// Extra come after Flags.
	Extra []chromedp.ExecAllocatorOption
	// Output also receives the browser's own output (the tab keeps its tail).
	Output io.Writer
	// Listen, when set, receives the tab's CDP events.
	Listen func(ev any)
}

// Tab is a headless Chromium with one tab, driven over CDP: what the
// browser tests, the bench and wasmexec share.
type Tab struct {
	Ctx     context.Context // the tab's; cancelled by Close
	Tail    *TailBuffer     // the last 16 KiB of the browser's output
	Crashed <-chan struct{} // closed when the page's renderer dies
	cancel  func()
}

// Start launches Chromium with Flags and o.Extra and opens its tab, with
// the Network domain off (chromedp turns it on, which keeps a copy of every
// response for DevTools: model files are large).
func Start(ctx context.Context, o Options) (*Tab, error) {
	exe := o.Exec
	if exe == "" {
		exe = Path()
	}
	if _, err := os.Stat(exe); exe == "" || err != nil {
		return nil, fmt.Errorf("no Chromium at %q (set WASMLLM_CHROMIUM)", exe)
	}
	t := &Tab{Tail: &TailBuffer{Max: 16 << 10}}
	var out io.Writer = t.Tail
	if o.Output != nil {
		out = io.MultiWriter(t.Tail, o.Output)
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(exe), chromedp.CombinedOutput(out)}
	if o.Profile != "" {
		opts = append(opts, chromedp.UserDataDir(o.Profile))
	}
	opts = append(append(opts, Flags...), o.Extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	crashed := make(chan struct{})
	t.Crashed = crashed
	var once sync.Once
	tctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if _, ok := ev.(*inspector.EventTargetCrashed); ok {
			once.Do(func() { close(crashed) })
		}
		if o.Listen != nil {
			o.Listen(ev)
		}
	}))
	t.Ctx, t.cancel = tctx, func() { cancelTab(); cancelAlloc() }
	if _, err := chromedp.Call(tctx, network.Disable, cdp.Empty{}); err != nil {
		t.Close()
		return nil, t.WithTail(fmt.Errorf("starting %s: %w", exe, err))
	}
	return t, nil
}

// Close ends the browser; on a tab from NewTab, it closes that tab only.
func (t *Tab) Close() { t.cancel() }

// NewTab opens another tab in the same browser: the same profile, so the
// same origins' storage, caches, Web Locks and SharedWorkers (what tests of
// several tabs of one origin need). Its Close closes only it (the page goes
// away as when a user closes a tab); closing t closes it too.
func (t *Tab) NewTab() (*Tab, error) {
	crashed := make(chan struct{})
	var once sync.Once
	ctx, cancel := chromedp.NewContext(t.Ctx, chromedp.WithListener(func(ev any) {
		if _, ok := ev.(*inspector.EventTargetCrashed); ok {
			once.Do(func() { close(crashed) })
		}
	}))
	nt := &Tab{Ctx: ctx, Tail: t.Tail, Crashed: crashed, cancel: func() {
		// Cancel waits until the target is closed.
		if chromedp.Cancel(ctx) != nil {
			cancel()
		}
	}}
	if _, err := chromedp.Call(ctx, network.Disable, cdp.Empty{}); err != nil {
		cancel()
		return nil, t.WithTail(fmt.Errorf("opening a tab: %w", err))
	}
	return nt, nil
}

// Open navigates to url and waits (up to timeout) until the page sets
// window.pageReady.
func (t *Tab) Open(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(t.Ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), t.ready(timeout)); err != nil {
		return t.WithTail(fmt.Errorf("opening %s: %w", url, err))
	}
	return nil
}

// Reload reloads the page and waits for window.pageReady.
func (t *Tab) Reload(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(t.Ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Reload(), t.ready(timeout)); err != nil {
		return t.WithTail(fmt.Errorf("reloading: %w", err))
	}
	return nil
}

func (t *Tab) ready(timeout time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void]("window.pageReady === true", chromedp.WithPollingTimeout(min(timeout, time.Minute)))
}

// Result is what Eval's expression settled to: its value (as JSON) when it
// returned, or errorJS's rendering of what it threw or rejected with.
type Result struct {
	OK    bool            `json:"ok"`
	Value json.RawMessage `json:"value"`
	Error json.RawMessage `json:"error"`
}

// Eval evaluates the JavaScript expression expr, awaits it if it is a
// promise, and returns how it settled; errorJS is a function expression
// turning a thrown value e into JSON (e.g. `e => String(e)`). A crashed page
// or running past timeout is an error.
func (t *Tab) Eval(expr, errorJS string, timeout time.Duration) (*Result, error) {
	wrapped := `(async () => { try { return {ok: true, value: await (` + expr + `)}; } catch (e) {
		return {ok: false, error: (` + errorJS + `)(e)}; } })()`
	ctx, cancel := context.WithTimeout(t.Ctx, timeout)
	defer cancel()
	type reply struct {
		raw []byte
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](wrapped, chromedp.EvalAwaitPromise))
		ch <- reply{raw, err}
	}()
	var r reply
	select {
	case r = <-ch:
	case <-t.Crashed:
		return nil, t.WithTail(errors.New("the page crashed (renderer process died)"))
	}
	if r.err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("evaluating %.80q: no answer within %v", expr, timeout)
		}
		return nil, t.WithTail(fmt.Errorf("evaluating %.80q: %w", expr, r.err))
	}
	var res Result
	if err := json.Unmarshal(r.raw, &res); err != nil {
		return nil, fmt.Errorf("decoding the result of %.80q: %w", expr, err)
	}
	return &res, nil
}

// WithTail appends the tail of the browser's output to err.
func (t *Tab) WithTail(err error) error {
	if s := strings.TrimSpace(t.Tail.String()); s != "" {
		return fmt.Errorf("%w\nChromium output (tail):\n%s", err, s)
	}
	return err
}
