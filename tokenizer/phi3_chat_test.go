package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPhi3Templates renders the Phi-3.5-mini and Phi-4-mini chats
// (testdata/chat/phi3: system or not, an empty system message, multi-turn,
// no generation prompt, tools in the system message, a tool result) byte
// for byte as Hugging Face's Jinja2 renders them, and the Phi-3.5 form of
// a system and a user message encodes, with tiny-phi4mini's vocab, to
// llama.cpp's ids for that prompt.
func TestPhi3Templates(t *testing.T) {
	dir := filepath.Join(testdata, "chat", "phi3")
	type line struct {
		chatLine
		Template string `json:"template"`
		BOS      string `json:"bos_token"`
		EOS      string `json:"eos_token"`
	}
	lines := readJSONL[line](t, filepath.Join(dir, "phi3-chat.jsonl"))
	var phi35 string
	for _, c := range lines {
		src, err := os.ReadFile(filepath.Join(dir, c.Template))
		if err != nil {
			t.Fatal(err)
		}
		kw := kwargs(c.Kwargs)
		kw["bos_token"], kw["eos_token"] = c.BOS, c.EOS
		got, err := RenderChat(string(src), c.Messages, ChatOptions{Kwargs: kw})
		if err != nil {
			t.Errorf("%s %s: %v", c.Template, c.Case, err)
			continue
		}
		if got != c.Rendered {
			t.Errorf("%s %s: rendered text differs: %s", c.Template, c.Case, firstDiff(got, c.Rendered))
		}
		if c.Case == "sys_user_gen" && filepath.Base(c.Template) == "phi-3.5-mini-instruct.jinja" {
			phi35 = got
		}
	}
	if len(lines) != 20 {
		t.Errorf("%d chats, want 20", len(lines))
	}
	// llama.cpp's ids of the same prompt (the second tokenize case).
	tok := ggufTok(t, "../testdata/phi3/models/tiny-phi4mini-q4_0.gguf")
	cases := readJSONL[phi3Case](t, "../testdata/phi3/golden/tokenize/tiny-phi4mini.cases.jsonl")
	if len(cases) < 2 || cases[1].Text != phi35 || !cases[1].ParseSpecial {
		t.Fatalf("the Phi-3.5 render %q is not the tokenize case %q", phi35, cases[1].Text)
	}
	if ids := tok.mustEncode(phi35, false); !slices.Equal(ids, cases[1].IDs) {
		t.Errorf("ids %v, llama.cpp %v", ids, cases[1].IDs)
	}
}
