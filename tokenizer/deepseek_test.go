package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDeepSeekR1Templates renders the DeepSeek-R1-Distill chats (both
// template revisions) byte for byte as Hugging Face's Jinja2 does, and
// checks the Llama-3 ids of each.
func TestDeepSeekR1Templates(t *testing.T) {
	dir := filepath.Join(testdata, "chat", "deepseek-r1")
	type line struct {
		chatLine
		Template string `json:"template"`
		BOS      string `json:"bos_token"`
		EOS      string `json:"eos_token"`
	}
	lines := readJSONL[line](t, filepath.Join(dir, "deepseek-r1-chat.jsonl"))
	tk := hfTok(t, filepath.Join("tokenizer", "llama3"))
	for _, c := range lines {
		src, err := os.ReadFile(filepath.Join(dir, c.Template))
		if err != nil {
			t.Fatal(err)
		}
		kw := kwargs(c.Kwargs)
		kw["bos_token"], kw["eos_token"] = c.BOS, c.EOS
		opts := ChatOptions{Kwargs: kw}
		got, err := RenderChat(string(src), c.Messages, opts)
		if err != nil {
			t.Errorf("%s: %v", c.Case, err)
			continue
		}
		if got != c.Rendered {
			t.Errorf("%s: rendered text differs: %s", c.Case, firstDiff(got, c.Rendered))
			continue
		}
		if d := diffIDs(tk.mustEncode(got, false), c.IDs); d != "" {
			t.Errorf("%s: ids differ\n%s", c.Case, d)
		}
	}
	if len(lines) != 17 {
		t.Errorf("%d chats, want 17", len(lines))
	}
}
