// Package firefox is the driver of headless Firefox that the browser tests
// and wasmexec use beside package chromium: the preferences that turn on
// WebGPU (wgpu over Mesa's llvmpipe Vulkan on CPU-only machines) and keep
// the network quiet, how to find the binary, and one tab driven over
// WebDriver BiDi (Firefox speaks BiDi, not CDP) with the same methods as a
// chromium.Tab: Open, Reload, Eval, Close.
package firefox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"wasmllm/internal/testkit/chromium"
)

// Prefs are the preferences for headless Firefox with WebGPU (navigator.gpu
// exists only in secure contexts: serve pages on http://127.0.0.1) and a
// quiet network. The remote agent adds its own recommended set.
var Prefs = map[string]any{
	"dom.webgpu.enabled":                          true,
	"gfx.webgpu.ignore-blocklist":                 true,
	"dom.webgpu.workers.enabled":                  true,
	"dom.max_script_run_time":                     0,
	"dom.max_chrome_script_run_time":              0,
	"browser.shell.checkDefaultBrowser":           false,
	"browser.startup.page":                        0,
	"app.update.disabledForTesting":               true,
	"app.normandy.enabled":                        false,
	"datareporting.policy.dataSubmissionEnabled":  false,
	"datareporting.healthreport.uploadEnabled":    false,
	"toolkit.telemetry.enabled":                   false,
	"messaging-system.rsexperimentloader.enabled": false,
	"services.settings.server":                    "http://127.0.0.1:9/remote-settings",
	"network.captive-portal-service.enabled":      false,
	"network.connectivity-service.enabled":        false,
	"network.dns.disablePrefetch":                 true,
	"network.http.speculative-parallel-limit":     0,
	"browser.safebrowsing.malware.enabled":        false,
	"browser.safebrowsing.phishing.enabled":       false,
	"browser.search.update":                       false,
	"browser.region.network.url":                  "",
	"extensions.update.enabled":                   false,
	"extensions.getAddons.cache.enabled":          false,
	"browser.newtabpage.enabled":                  false,
}

// Path is the browser binary: $WASMLLM_FIREFOX, else /usr/bin/firefox-esr,
// else firefox-esr or firefox on $PATH; "" when none is found.
func Path() string {
	if p := os.Getenv("WASMLLM_FIREFOX"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/firefox-esr"); err == nil {
		return "/usr/bin/firefox-esr"
	}
	for _, name := range []string{"firefox-esr", "firefox"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// IsFirefox reports whether the binary path names Firefox.
func IsFirefox(exe string) bool {
	return strings.Contains(strings.ToLower(filepath.Base(exe)), "firefox")
}

// Options configure Start.
type Options struct {
	Exec    string // the binary; "" for Path()
	Profile string // the profile folder (prefs are written into it); "" for a temporary one
	// Prefs are set after the package's Prefs.
	Prefs map[string]any
	// Output also receives the browser's own output (the tab keeps its tail).
	Output io.Writer
	// Channels are names of functions defined on every page's globalThis
	// before its scripts run; calling one with a string delivers it to
	// OnMessage, in call order (BiDi script.message).
	Channels  []string
	OnMessage func(channel, data string)
	// OnConsole receives the page's console messages (BiDi log.entryAdded).
	OnConsole func(level, text string)
}

// Tab is a headless Firefox with one tab, driven over WebDriver BiDi.
type Tab struct {
	Tail    *chromium.TailBuffer // the last 16 KiB of the browser's output
	Crashed <-chan struct{}      // closed when the browser exits
	cmd     *exec.Cmd
	bidi    *bidi
	context string // the tab's browsing context id
	tmp     string // a temporary profile to remove, or ""
	opened  bool   // a tab of NewTab: Close closes only it
}

var listening = regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)

// Start launches Firefox headless with a fresh profile holding Prefs and
// o.Prefs, connects to its BiDi endpoint and returns its one tab.
func Start(ctx context.Context, o Options) (*Tab, error) {
	exe := o.Exec
	if exe == "" {
		exe = Path()
	}
	if _, err := os.Stat(exe); exe == "" || err != nil {
		if p, lerr := exec.LookPath(exe); exe == "" || lerr != nil {
			return nil, fmt.Errorf("no Firefox at %q (set WASMLLM_FIREFOX)", exe)
		} else {
			exe = p
		}
	}
	t := &Tab{Tail: &chromium.TailBuffer{Max: 16 << 10}}
	profile := o.Profile
	if profile == "" {
		dir, err := os.MkdirTemp("", "wasmllm-firefox-")
		if err != nil {
			return nil, err
		}
		profile, t.tmp = dir, dir
	}
	if err := writePrefs(profile, o.Prefs); err != nil {
		t.removeProfile()
		return nil, err
	}
	var out io.Writer = t.Tail
	if o.Output != nil {
		out = io.MultiWriter(t.Tail, o.Output)
	}
	pr, pw := io.Pipe()
	t.cmd = exec.Command(exe, "--headless", "--no-remote", "--profile", profile, "--remote-debugging-port=0", "about:blank")
	t.cmd.Stdout, t.cmd.Stderr = pw, pw
	t.cmd.Env = append(os.Environ(), "MOZ_CRASHREPORTER_DISABLE=1", "MOZ_HEADLESS=1")
	if err := t.cmd.Start(); err != nil {
		t.removeProfile()
		return nil, fmt.Errorf("starting %s: %w", exe, err)
	}
	crashed := make(chan struct{})
	t.Crashed = crashed
	go func() {
		t.cmd.Wait()
		pw.Close()
		close(crashed)
	}()
	url := make(chan string, 1)
	go scanOutput(pr, out, url)
	var ws string
	select {
	case ws = <-url:
	case <-crashed:
		t.removeProfile()
		return nil, t.WithTail(fmt.Errorf("%s exited before its BiDi endpoint was up", exe))
	case <-time.After(time.Minute):
		t.Close()
		return nil, t.WithTail(fmt.Errorf("%s printed no BiDi endpoint within a minute", exe))
	case <-ctx.Done():
		t.Close()
		return nil, ctx.Err()
	}
	if err := t.connect(ctx, ws, o); err != nil {
		t.Close()
		return nil, t.WithTail(fmt.Errorf("connecting to %s at %s: %w", exe, ws, err))
	}
	return t, nil
}

// scanOutput copies the browser's output to out and sends the BiDi
// endpoint, once, on url.
func scanOutput(r io.Reader, out io.Writer, url chan<- string) {
	buf := make([]byte, 32<<10)
	var line []byte
	sent := false
	for {
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if !sent {
			line = append(line, buf[:n]...)
			if m := listening.FindSubmatch(line); m != nil {
				url <- string(m[1])
				sent, line = true, nil
			} else if i := strings.LastIndexByte(string(line), '\n'); i >= 0 {
				line = line[i+1:]
			}
		}
		if err != nil {
			return
		}
	}
}

func writePrefs(profile string, extra map[string]any) error {
	all := map[string]any{}
	for k, v := range Prefs {
		all[k] = v
	}
	for k, v := range extra {
		all[k] = v
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		var v string
		switch x := all[k].(type) {
		case bool:
			v = strconv.FormatBool(x)
		case int:
			v = strconv.Itoa(x)
		case string:
			v = strconv.Quote(x)
		default:
			return fmt.Errorf("firefox pref %s: unsupported value %T", k, x)
		}
		fmt.Fprintf(&b, "user_pref(%q, %s);\n", k, v)
	}
	return os.WriteFile(filepath.Join(profile, "user.js"), []byte(b.String()), 0o644)
}

// connect opens the BiDi session, subscribes to the events o wants, adds
// the channel functions and finds the tab.
func (t *Tab) connect(ctx context.Context, ws string, o Options) error {
	b, err := dialBiDi(ctx, ws+"/session", func(method string, params map[string]any) {
		switch method {
		case "script.message":
			if o.OnMessage != nil {
				ch, _ := params["channel"].(string)
				data, _ := params["data"].(map[string]any)
				s, _ := data["value"].(string)
				o.OnMessage(ch, s)
			}
		case "log.entryAdded":
			if o.OnConsole != nil {
				level, _ := params["level"].(string)
				text, _ := params["text"].(string)
				o.OnConsole(level, text)
			}
		}
	})
	if err != nil {
		return err
	}
	t.bidi = b
	if _, err := b.call(ctx, "session.new", map[string]any{"capabilities": map[string]any{}}); err != nil {
		return err
	}
	var events []string
	if o.OnConsole != nil {
		events = append(events, "log.entryAdded")
	}
	if len(o.Channels) > 0 {
		events = append(events, "script.message")
		args := make([]any, len(o.Channels))
		var names []string
		for i, ch := range o.Channels {
			args[i] = map[string]any{"type": "channel", "value": map[string]any{"channel": ch}}
			names = append(names, strconv.Quote(ch))
		}
		// (a, b) => { globalThis["a"] = (s) => a(String(s)); ... }
		var fn strings.Builder
		fn.WriteString("(...chs) => { const names = [" + strings.Join(names, ",") + "]; ")
		fn.WriteString("names.forEach((n, i) => { globalThis[n] = (s) => { chs[i](String(s)); }; }); }")
		if _, err := b.call(ctx, "script.addPreloadScript", map[string]any{"functionDeclaration": fn.String(), "arguments": args}); err != nil {
			return err
		}
	}
	if len(events) > 0 {
		if _, err := b.call(ctx, "session.subscribe", map[string]any{"events": events}); err != nil {
			return err
		}
	}
	tree, err := b.call(ctx, "browsingContext.getTree", map[string]any{})
	if err != nil {
		return err
	}
	contexts, _ := tree["contexts"].([]any)
	if len(contexts) == 0 {
		return errors.New("browsingContext.getTree: no tab")
	}
	first, _ := contexts[0].(map[string]any)
	t.context, _ = first["context"].(string)
	return nil
}

// NewTab opens another tab in the same browser (BiDi browsingContext.create):
// the same profile, so the same origins' storage, caches, Web Locks and
// SharedWorkers. Its Close closes only it (the page goes away as when a
// user closes a tab); its console goes to the first tab's OnConsole.
func (t *Tab) NewTab(timeout time.Duration) (*Tab, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := t.callOrCrash(ctx, "browsingContext.create", map[string]any{"type": "tab"})
	if err != nil {
		return nil, t.WithTail(fmt.Errorf("opening a tab: %w", err))
	}
	id, _ := res["context"].(string)
	if id == "" {
		return nil, fmt.Errorf("browsingContext.create: no context in %v", res)
	}
	return &Tab{Tail: t.Tail, Crashed: t.Crashed, bidi: t.bidi, context: id, opened: true}, nil
}

// Close ends the browser and removes a temporary profile; on a tab from
// NewTab, it closes that tab only.
func (t *Tab) Close() {
	if t.opened {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.callOrCrash(ctx, "browsingContext.close", map[string]any{"context": t.context})
		cancel()
		return
	}
	if t.bidi != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.bidi.call(ctx, "browser.close", map[string]any{})
		cancel()
		t.bidi.close()
	}
	if t.cmd != nil && t.cmd.Process != nil {
		select {
		case <-t.Crashed:
		case <-time.After(5 * time.Second):
			t.cmd.Process.Kill()
			<-t.Crashed
		}
	}
	t.removeProfile()
}

func (t *Tab) removeProfile() {
	if t.tmp != "" {
		os.RemoveAll(t.tmp)
		t.tmp = ""
	}
}

// Navigate loads url and waits (up to timeout) for its load event.
func (t *Tab) Navigate(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := t.callOrCrash(ctx, "browsingContext.navigate", map[string]any{"context": t.context, "url": url, "wait": "complete"}); err != nil {
		return t.WithTail(fmt.Errorf("opening %s: %w", url, err))
	}
	return nil
}

// Open navigates to url and waits (up to timeout) until the page sets
// window.pageReady.
func (t *Tab) Open(url string, timeout time.Duration) error {
	if err := t.Navigate(url, timeout); err != nil {
		return err
	}
	return t.ready(timeout)
}

// Reload reloads the page and waits for window.pageReady.
func (t *Tab) Reload(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := t.callOrCrash(ctx, "browsingContext.reload", map[string]any{"context": t.context, "wait": "complete"}); err != nil {
		return t.WithTail(fmt.Errorf("reloading: %w", err))
	}
	return t.ready(timeout)
}

func (t *Tab) ready(timeout time.Duration) error {
	r, err := t.Eval(`new Promise((ok) => { const check = () => window.pageReady === true ? ok(true) : setTimeout(check, 50); check(); })`,
		`e => String(e)`, min(timeout, time.Minute))
	if err != nil {
		return err
	}
	if !r.OK {
		return t.WithTail(fmt.Errorf("waiting for window.pageReady: %s", r.Error))
	}
	return nil
}

// Eval evaluates the JavaScript expression expr, awaits it if it is a
// promise, and returns how it settled; errorJS is a function expression
// turning a thrown value e into JSON (e.g. `e => String(e)`). The browser
// exiting or running past timeout is an error.
func (t *Tab) Eval(expr, errorJS string, timeout time.Duration) (*chromium.Result, error) {
	wrapped := `(async () => { try { return JSON.stringify({ok: true, value: await (` + expr + `)}); } catch (e) {
		return JSON.stringify({ok: false, error: (` + errorJS + `)(e)}); } })()`
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := t.callOrCrash(ctx, "script.evaluate", map[string]any{
		"expression": wrapped, "target": map[string]any{"context": t.context},
		"awaitPromise": true, "resultOwnership": "none",
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("evaluating %.80q: no answer within %v", expr, timeout)
		}
		return nil, t.WithTail(fmt.Errorf("evaluating %.80q: %w", expr, err))
	}
	if res["type"] == "exception" {
		return nil, t.WithTail(fmt.Errorf("evaluating %.80q: %v", expr, res["exceptionDetails"]))
	}
	v, _ := res["result"].(map[string]any)
	s, ok := v["value"].(string)
	if !ok {
		return nil, fmt.Errorf("evaluating %.80q: the result is not a string: %v", expr, v)
	}
	var r chromium.Result
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("decoding the result of %.80q: %w", expr, err)
	}
	return &r, nil
}

// callOrCrash is a BiDi call that fails at once when the browser exits.
func (t *Tab) callOrCrash(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-t.Crashed:
			cancel()
		case <-ctx.Done():
		}
	}()
	res, err := t.bidi.call(ctx, method, params)
	if err != nil {
		select {
		case <-t.Crashed:
			return nil, errors.New("Firefox exited")
		default:
		}
	}
	return res, err
}

// WithTail appends the tail of the browser's output to err.
func (t *Tab) WithTail(err error) error {
	if s := strings.TrimSpace(t.Tail.String()); s != "" {
		return fmt.Errorf("%w\nFirefox output (tail):\n%s", err, s)
	}
	return err
}
