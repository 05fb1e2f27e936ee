package e2e

import (
	"path/filepath"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/tokenizer"
)

// TestChatTemplateModel drives the page with a chat model: tiny-qwen3
// (random weights) converted with the Qwen3 chat template, so the page
// sends chat requests and offers the thinking switch. The first reply
// equals cmd/generate -chat; the second turn prefills only what the first
// did not leave in the cache; the switch and the system prompt reach the
// template.
func TestChatTemplateModel(t *testing.T) {
	skipShort(t)
	models := t.TempDir()
	model := filepath.Join(models, "qwen")
	browsertest.Convert(t, browsertest.RepoFile("testdata/hf/tiny-qwen3"), model,
		browsertest.ConvertOptions{Tokenizer: browsertest.ChatTokenizer(t, "tiny-qwen3")})
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	if err := b.Viewport(1280, 860, 1, false); err != nil {
		t.Fatal(err)
	}
	openPage(t, b, srv.URL+"/?model=qwen&backend=cpu")

	var ui struct {
		ThinkingHidden, Thinking, ModeNoteHidden bool
		Chat, Offered                            bool
	}
	b.MustRun(`({ThinkingHidden: document.getElementById("thinking-row").hidden, Thinking: document.getElementById("thinking").checked,
		ModeNoteHidden: document.getElementById("mode-note").hidden, Chat: wasmllmApp.features.chat, Offered: wasmllmApp.features.thinking})`, &ui)
	if !ui.Chat || !ui.Offered || ui.ThinkingHidden || !ui.Thinking || !ui.ModeNoteHidden {
		t.Errorf("chat model UI: %+v; want chat mode with the thinking switch shown and on", ui)
	}

	s := settings{Temperature: 0.7, TopP: 0.95, TopK: 20, MinP: 0.05, RepetitionPenalty: 1, MaxTokens: 24, Seed: 11}
	s.apply(t, b)
	think := map[string]any{"enable_thinking": true}
	typeMessage(t, b, "Hello")
	r1 := waitReply(t, b, 1)
	want1 := generate(t, append([]string{"-model", model, "-chat", "Hello"}, s.flags()...)...)
	if r1.Text != want1.Text || r1.Usage.CompletionTokens != len(want1.IDs) {
		t.Errorf("reply 1 (%d tokens): %q\ngenerate -chat (%d tokens): %q", r1.Usage.CompletionTokens, r1.Text, len(want1.IDs), want1.Text)
	}
	msgs := []tokenizer.Message{{Role: "user", Content: "Hello"}}
	ids1 := chatIDs(t, model, msgs, think)
	if r1.Usage.PromptTokens != len(ids1) {
		t.Errorf("turn 1: %d prompt tokens, the template gives %d", r1.Usage.PromptTokens, len(ids1))
	}

	typeMessage(t, b, "How are you?")
	r2 := waitReply(t, b, 2)
	msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: r1.Text}, tokenizer.Message{Role: "user", Content: "How are you?"})
	ids2 := chatIDs(t, model, msgs, think)
	cached := expectedCached(ids1, want1.IDs, ids2)
	t.Logf("turn 2: %d prompt tokens, %d cached (turn 1: %d prompt + %d generated), %d prefilled",
		r2.Usage.PromptTokens, r2.Usage.PromptTokensDetails.CachedTokens, len(ids1), len(want1.IDs), r2.Timings.PrefillTokens)
	if r2.Usage.PromptTokens != len(ids2) || r2.Usage.PromptTokensDetails.CachedTokens != cached || r2.Timings.PrefillTokens != len(ids2)-cached {
		t.Errorf("turn 2: prompt %d, cached %d, prefilled %d; want %d, %d, %d",
			r2.Usage.PromptTokens, r2.Usage.PromptTokensDetails.CachedTokens, r2.Timings.PrefillTokens, len(ids2), cached, len(ids2)-cached)
	}
	if cached < len(ids1) {
		t.Errorf("turn 2 reused %d tokens, less than turn 1's prompt of %d", cached, len(ids1))
	}

	// Thinking off and a system prompt, in a new chat: the template gets both.
	b.MustRun(`(() => { document.getElementById("settings").open = true;
		const sys = document.getElementById("system"); sys.value = "Answer briefly."; sys.dispatchEvent(new Event("input", {bubbles: true})); })()`, nil)
	if err := b.Click("#thinking"); err != nil {
		t.Fatal(err)
	}
	if err := b.Click("[data-testid=new-chat]"); err != nil {
		t.Fatal(err)
	}
	typeMessage(t, b, "Hello")
	r3 := waitReply(t, b, 3)
	ids3 := chatIDs(t, model, []tokenizer.Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: "Hello"}},
		map[string]any{"enable_thinking": false})
	if r3.Usage.PromptTokens != len(ids3) {
		t.Errorf("system prompt, thinking off: %d prompt tokens, the template gives %d", r3.Usage.PromptTokens, len(ids3))
	}
	screenshot(t, b, "chat-template-model.png")
}
