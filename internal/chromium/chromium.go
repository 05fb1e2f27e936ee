// Package chromium holds what every headless Chromium the project starts
// shares: the verified flags for WebGPU on SwiftShader, how to find the
// binary, and a buffer for the tail of the browser's own output.
package chromium

import (
	"os"
	"os/exec"
	"strings"
	"sync"

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
