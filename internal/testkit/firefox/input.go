package firefox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Click clicks the centre of the first element matching the CSS selector
// with the mouse (WebDriver BiDi input.performActions: trusted events, as a
// user's click), after scrolling it into view.
func (t *Tab) Click(selector string, timeout time.Duration) error {
	sel, _ := json.Marshal(selector)
	res, err := t.Eval(`(() => {
		const e = document.querySelector(`+string(sel)+`);
		if (!e) throw new Error("no element matches " + `+string(sel)+`);
		e.scrollIntoView({block: "center", inline: "center"});
		const r = e.getBoundingClientRect();
		return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];
	})()`, `e => String(e && e.message || e)`, timeout)
	if err != nil {
		return err
	}
	if !res.OK {
		return fmt.Errorf("click %s: %s", selector, res.Error)
	}
	var at [2]int
	if err := json.Unmarshal(res.Value, &at); err != nil {
		return fmt.Errorf("click %s: %w", selector, err)
	}
	return t.perform(timeout, map[string]any{"type": "pointer", "id": "mouse", "parameters": map[string]any{"pointerType": "mouse"},
		"actions": []map[string]any{
			{"type": "pointerMove", "x": at[0], "y": at[1], "origin": "viewport"},
			{"type": "pointerDown", "button": 0},
			{"type": "pointerUp", "button": 0},
		}})
}

// Keys types keys into the focused element as real key events, holding the
// modifiers (WebDriver key values such as Shift, "\uE008") while it types.
// The control characters chromedp's kb package uses for Enter ("\r"), Tab
// and Escape are sent as WebDriver's keys of the same name.
func (t *Tab) Keys(keys string, modifiers []string, timeout time.Duration) error {
	var actions []map[string]any
	for _, m := range modifiers {
		actions = append(actions, map[string]any{"type": "keyDown", "value": m})
	}
	for _, r := range keys {
		v := string(r)
		if w, ok := webDriverKeys[r]; ok {
			v = w
		}
		actions = append(actions, map[string]any{"type": "keyDown", "value": v}, map[string]any{"type": "keyUp", "value": v})
	}
	for i := len(modifiers) - 1; i >= 0; i-- {
		actions = append(actions, map[string]any{"type": "keyUp", "value": modifiers[i]})
	}
	return t.perform(timeout, map[string]any{"type": "key", "id": "keyboard", "actions": actions})
}

// The WebDriver key values of chromedp/kb's control characters.
var webDriverKeys = map[rune]string{
	'\r':   "\uE007", // Enter
	'\n':   "\uE007",
	'\t':   "\uE004", // Tab
	'\x1b': "\uE00C", // Escape
	'\b':   "\uE003", // Backspace
}

// The WebDriver key values of the modifiers.
const (
	KeyShift   = "\uE008"
	KeyControl = "\uE009"
	KeyAlt     = "\uE00A"
	KeyMeta    = "\uE03D"
)

func (t *Tab) perform(timeout time.Duration, source map[string]any) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := t.callOrCrash(ctx, "input.performActions", map[string]any{"context": t.context, "actions": []any{source}}); err != nil {
		return t.WithTail(err)
	}
	return nil
}
