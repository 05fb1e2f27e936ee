package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"wasmllm/internal/testkit/firefox"
)

func (b *Browser) do(timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	if b.ctx == nil {
		return errNeedsChromium
	}
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// Keys types keys into the focused element as real key events (see
// chromedp/kb for Enter, Escape and Tab), holding the given modifiers: over
// CDP in Chromium, WebDriver BiDi's input actions in Firefox.
func (b *Browser) Keys(keys string, mods ...chromedp.Modifier) error {
	if ff, ok := b.tab.(*firefox.Tab); ok {
		var held []string
		for _, m := range mods {
			for _, k := range []struct {
				bit chromedp.Modifier
				key string
			}{{chromedp.ModifierShift, firefox.KeyShift}, {chromedp.ModifierCtrl, firefox.KeyControl},
				{chromedp.ModifierAlt, firefox.KeyAlt}, {chromedp.ModifierMeta, firefox.KeyMeta}} {
				if m&k.bit != 0 {
					held = append(held, k.key)
				}
			}
		}
		return ff.Keys(keys, held, time.Minute)
	}
	var opts []chromedp.KeyOption
	if len(mods) > 0 {
		opts = append(opts, chromedp.KeyModifiers(mods...))
	}
	return b.do(time.Minute, chromedp.KeyEvent(keys, opts...))
}

// Click clicks the centre of the first element matching the CSS selector
// with the mouse, in either browser.
func (b *Browser) Click(selector string) error {
	if ff, ok := b.tab.(*firefox.Tab); ok {
		return ff.Click(selector, time.Minute)
	}
	return b.do(time.Minute, chromedp.Click(chromedp.CSS(selector)))
}

// Viewport resizes the page's viewport; mobile also turns on mobile and
// touch emulation (a phone).
func (b *Browser) Viewport(width, height int64, scale float64, mobile bool) error {
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(scale)}
	if mobile {
		opts = append(opts, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	return b.do(time.Minute, chromedp.EmulateViewport(width, height, opts...))
}

// WaitFor polls a JavaScript expression until it is truthy, then decodes
// its value into out (which may be nil). It fails after timeout with the
// expression's last value.
func (b *Browser) WaitFor(expr string, timeout time.Duration, out any) error {
	deadline := time.Now().Add(timeout)
	for {
		var v json.RawMessage
		err := b.Run(`(async () => { try { return await (`+expr+`); } catch (e) { return null; } })()`, &v)
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(string(v)); s != "" && s != "null" && s != "false" && s != "0" && s != `""` {
			if out != nil {
				return json.Unmarshal(v, out)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting %v for %.120s: last value %s", timeout, expr, v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
