package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// NewCrashableBrowser starts a browser that a second DevTools connection can
// reach, and returns it with a function that crashes its GPU process
// (Browser.crashGpuProcess, what chrome://gpucrash does; navigating a tab
// to chrome://gpucrash is refused over DevTools). Every WebGPU device in
// the browser, a worker's included, is lost with reason "unknown";
// Chromium starts a new GPU process, and new devices work.
//
// Chromium then blocks WebGPU for every page for a while when a second
// crash follows soon (requestAdapter returns null), and after a third
// crash for good; pass chromedp.Flag("disable-domain-blocking-for-3d-apis",
// true) to allow a second recovery.
func NewCrashableBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) (*Browser, func()) {
	t.Helper()
	// Not t.TempDir: Chromium's restarted GPU process may still write to
	// the profile when the test's directories are removed.
	dir, err := os.MkdirTemp("", "wasmllm-crash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50 && os.RemoveAll(dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	b := NewBrowser(t, append([]chromedp.ExecAllocatorOption{chromedp.UserDataDir(dir), chromedp.Flag("remote-debugging-port", "0"), remote.WebSocket}, extra...)...)
	crash := func() {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) != 2 {
			t.Fatalf("DevToolsActivePort: %q", data)
		}
		actx, cancelAlloc := remote.NewAllocator(context.Background(), "ws://127.0.0.1:"+lines[0]+lines[1])
		defer cancelAlloc()
		ctx, cancel := chromedp.NewContext(actx)
		defer cancel()
		if err := chromedp.Do(ctx); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.FromContext(ctx).Browser.Call(ctx, "Browser.crashGpuProcess", nil, nil); err != nil {
			t.Fatalf("Browser.crashGpuProcess: %v", err)
		}
	}
	return b, crash
}
