package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

func load(t *testing.T, path string, ctx int) *Engine {
	t.Helper()
	e, err := Load(path, cpu.New(0), LoadOptions{Options: Options{Context: ctx, PrefillChunk: 7}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func greedy(n int) sampler.Params {
	p := sampler.DefaultParams()
	p.Temperature, p.MaxTokens = 0, n
	return p
}

func gen(t *testing.T, e *Engine, req *Request) *Result {
	t.Helper()
	res, err := e.Generate(context.Background(), req, func(Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return res
}

const stories = "../testdata/models/stories260K.gguf"

// storyIDs is testdata/golden/stories260K.story.golden's greedy continuation
// of "Once upon a time" (llama.cpp and llama2.c's run.c agree on it).
var storyIDs = []int32{432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337}

func TestGreedyStory(t *testing.T) {
	e := load(t, stories, 256)
	res := gen(t, e, &Request{Prompt: "Once upon a time", Params: greedy(16)})
	if !slices.Equal(res.Prompt, []int32{1, 403, 407, 261, 378}) {
		t.Errorf("prompt ids %v", res.Prompt)
	}
	if !slices.Equal(res.Tokens, storyIDs) {
		t.Errorf("tokens %v, want %v", res.Tokens, storyIDs)
	}
	if res.Finish.Reason != sampler.FinishLength || res.Usage.CompletionTokens != 16 || res.Usage.PromptTokens != 5 {
		t.Errorf("finish %+v usage %+v", res.Finish, res.Usage)
	}
	if want := e.Tok.Decode(storyIDs); res.Text != want {
		t.Errorf("text %q, want %q", res.Text, want)
	}
}

// TestPrefixReuse: a second request that extends the first prefills only
// its new tokens and generates what a fresh engine generates.
func TestPrefixReuse(t *testing.T) {
	e := load(t, stories, 256)
	first := gen(t, e, &Request{Prompt: "Once upon a time", Params: greedy(8)})
	next := append(append(slices.Clone(first.Prompt), first.Tokens...), 267, 337)
	second := gen(t, e, &Request{Tokens: next, Params: greedy(8)})
	// the cache holds the prompt and all generated tokens but the last
	if want := len(first.Prompt) + len(first.Tokens) - 1; second.Usage.CachedTokens != want {
		t.Errorf("cached tokens %d, want %d", second.Usage.CachedTokens, want)
	}
	fresh := gen(t, load(t, stories, 256), &Request{Tokens: next, Params: greedy(8)})
	if !slices.Equal(second.Tokens, fresh.Tokens) {
		t.Errorf("with reuse %v, fresh %v", second.Tokens, fresh.Tokens)
	}
	// a different prompt shares only its first token (BOS)
	third := gen(t, e, &Request{Prompt: "The cat", Params: greedy(4)})
	if third.Usage.CachedTokens != 1 {
		t.Errorf("cached tokens %d, want 1", third.Usage.CachedTokens)
	}
}

func TestContextOverflow(t *testing.T) {
	e := load(t, stories, 32)
	long := make([]int32, 40)
	for i := range long {
		long[i] = int32(300 + i)
	}
	_, err := e.Generate(context.Background(), &Request{Tokens: long, Params: greedy(4)}, func(Token) error { return nil })
	var ce *ContextError
	if !errors.As(err, &ce) || !errors.Is(err, model.ErrContextFull) || ce.PromptTokens != 40 || ce.Context != 32 {
		t.Fatalf("err %v", err)
	}
	res := gen(t, e, &Request{Tokens: long, Params: greedy(4), Overflow: OverflowTruncate})
	if len(res.Prompt) != 28 || !slices.Equal(res.Prompt, long[12:]) {
		t.Errorf("truncated prompt %v", res.Prompt)
	}
	// generation that runs into the end of the context stops with "length"
	p := greedy(100)
	res = gen(t, e, &Request{Tokens: long[:20], Params: p, Overflow: OverflowTruncate})
	if res.Finish.Reason != sampler.FinishLength || len(res.Prompt)+len(res.Tokens) > 32 {
		t.Errorf("finish %+v after %d+%d tokens", res.Finish, len(res.Prompt), len(res.Tokens))
	}
}

func TestStopString(t *testing.T) {
	e := load(t, stories, 256)
	full := gen(t, e, &Request{Prompt: "Once upon a time", Params: greedy(40)})
	i := strings.Index(full.Text, "Lily")
	if i < 0 {
		t.Fatalf("story %q has no Lily", full.Text)
	}
	p := greedy(40)
	p.Stop = sampler.StringList{"Lily"}
	var streamed strings.Builder
	res, err := e.Generate(context.Background(), &Request{Prompt: "Once upon a time", Params: p}, func(tk Token) error {
		streamed.WriteString(tk.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != full.Text[:i] || streamed.String() != res.Text {
		t.Errorf("text %q streamed %q, want %q", res.Text, streamed.String(), full.Text[:i])
	}
	if res.Finish.Reason != sampler.FinishStop || res.Finish.StopString != "Lily" {
		t.Errorf("finish %+v", res.Finish)
	}
}

func TestAbort(t *testing.T) {
	e := load(t, stories, 256)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := e.Generate(ctx, &Request{Prompt: "Once upon a time", Params: greedy(50)}, func(Token) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || len(res.Tokens) != 3 {
		t.Fatalf("err %v after %d tokens", err, len(res.Tokens))
	}
	// the engine stays usable
	again := gen(t, e, &Request{Prompt: "Once upon a time", Params: greedy(16)})
	if !slices.Equal(again.Tokens, storyIDs) {
		t.Errorf("after abort %v", again.Tokens)
	}
}

// nop forces the full-row path without changing the logits.
type nop struct{}

func (nop) Process([]float32, []int32) error { return nil }

// TestCandidatesMatchFullRow: seeded sampling through the GPU-style top-k
// candidates gives exactly the tokens of the full-row path.
func TestCandidatesMatchFullRow(t *testing.T) {
	seed := int64(7)
	p := sampler.DefaultParams()
	p.Temperature, p.TopK, p.TopP, p.MinP, p.MaxTokens, p.Seed = 0.9, 40, 0.9, 0.02, 24, &seed
	p.RepetitionPenalty, p.PresencePenalty = 1.3, 0.5
	e := load(t, stories, 256)
	cand := gen(t, e, &Request{Prompt: "Once upon a time", Params: p})
	if e.Stats.FullRows != 0 {
		t.Errorf("candidate path read %d full rows", e.Stats.FullRows)
	}
	p.Processors = []sampler.LogitsProcessor{nop{}}
	e2 := load(t, stories, 256)
	full := gen(t, e2, &Request{Prompt: "Once upon a time", Params: p})
	if e2.Stats.FullRows == 0 {
		t.Errorf("full-row path read no full rows")
	}
	if !slices.Equal(cand.Tokens, full.Tokens) {
		t.Errorf("candidates %v\nfull row   %v", cand.Tokens, full.Tokens)
	}
	again := gen(t, load(t, stories, 256), &Request{Prompt: "Once upon a time", Params: p})
	if !slices.Equal(again.Tokens, full.Tokens) {
		t.Errorf("same seed, different tokens: %v vs %v", again.Tokens, full.Tokens)
	}
}

func TestChat(t *testing.T) {
	e := load(t, "../testdata/hf/tiny-qwen3", 256)
	// the tiny vocabulary's folder has no template: borrow Qwen3's
	tj, err := os.ReadFile("../testdata/hf/tiny-qwen3/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	for _, f := range []string{"../testdata/hf/tiny-qwen3/tokenizer_config.json", "../testdata/tokenizer/qwen3/tokenizer_config.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if cfg == nil {
			cfg = m
		} else {
			cfg["chat_template"] = m["chat_template"]
		}
	}
	cj, _ := json.Marshal(cfg)
	if e.Tok, err = tokenizer.FromHFJSON(tj, cj); err != nil {
		t.Fatal(err)
	}
	msgs := []tokenizer.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi there"}}
	res := gen(t, e, &Request{Messages: msgs, Params: greedy(4)})
	text, err := e.Tok.RenderChat(msgs, tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(text, "<|im_start|>assistant\n") {
		t.Errorf("rendered %q", text)
	}
	if ids, err := e.Tok.Encode(text, false); err != nil || !slices.Equal(res.Prompt, ids) {
		t.Errorf("prompt ids %v", res.Prompt)
	}
	// stories260K has no chat template: a clear error
	_, err = load(t, stories, 64).Generate(context.Background(), &Request{Messages: msgs, Params: greedy(1)}, func(Token) error { return nil })
	if !errors.Is(err, tokenizer.ErrNoChatTemplate) {
		t.Errorf("no template: %v", err)
	}
}

// TestHistoryCountsOnce: every generated token enters the sampler's
// history once, whichever readback path chose it, so penalties see the
// true output.
func TestHistoryCountsOnce(t *testing.T) {
	p := greedy(48)
	p.FrequencyPenalty = 0.7 // forces the candidate path, and must count each token once
	e := load(t, stories, 256)
	var got []int32
	res, err := e.Generate(context.Background(), &Request{Prompt: "Once upon a time", Params: p}, func(tk Token) error {
		got = append(got, tk.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Recompute with the sampler on full rows from the CPU model directly.
	s, err := sampler.New(p, e.Model.Config.Vocab, e.Tok.EOS(), res.Prompt)
	if err != nil {
		t.Fatal(err)
	}
	m := e.Model
	cache, _ := m.NewCache(128)
	logits, _ := m.Forward(cache, res.Prompt, 0, false)
	row := make([]float32, m.Config.Vocab)
	pos := len(res.Prompt)
	for i, want := range got {
		m.Backend().ReadF32(logits, row)
		r, err := s.Sample(row)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != want {
			t.Fatalf("token %d: engine %d, reference %d", i, want, r.ID)
		}
		logits, _ = m.Forward(cache, []int32{r.ID}, pos, false)
		pos++
	}
	if !slices.Equal(s.Output(), got) {
		t.Errorf("history %v vs output %v", s.Output(), got)
	}
}

// TestKVDType: the default cache is f32; the CPU backend keeps an f16 or
// a q8 cache when asked, reports it and generates the same story; a type
// no cache stores is an error.
func TestKVDType(t *testing.T) {
	for _, dt := range []loader.DType{loader.F32, loader.F16, model.KVQ8} {
		e, err := Load(stories, cpu.New(0), LoadOptions{Options: Options{Context: 64, KVDType: dt}})
		if err != nil {
			t.Fatalf("%v: %v", dt, err)
		}
		if got := e.KVDType(); got != dt {
			t.Errorf("asked %v: engine reports %v", dt, got)
		}
		if _, ok := e.Cache().(*cpu.KVCache); !ok {
			t.Errorf("asked %v: cache %T", dt, e.Cache())
		}
		if res := gen(t, e, &Request{Prompt: "Once upon a time", Params: greedy(16)}); !slices.Equal(res.Tokens, storyIDs) {
			t.Errorf("asked %v: tokens %v, want %v", dt, res.Tokens, storyIDs)
		}
	}
	_, err := Load(stories, cpu.New(0), LoadOptions{Options: Options{Context: 64, KVDType: loader.Q4_0}})
	if !errors.Is(err, model.ErrKVDType) {
		t.Errorf("Q4_0 cache: %v, want ErrKVDType", err)
	}
}

// TestAbortFlushesHeldText: a request cancelled while text is held back
// (it could start a stop string) still sends that text, so everything
// counted in the usage was shown.
func TestAbortFlushesHeldText(t *testing.T) {
	e := load(t, stories, 256)
	p := greedy(50)
	p.Stop = []string{" little boy"} // the story says " little girl": " little" is held, then shown
	ctx, cancel := context.WithCancel(context.Background())
	var streamed strings.Builder
	held := false
	res, err := e.Generate(ctx, &Request{Prompt: "Once upon a time", Params: p}, func(tok Token) error {
		streamed.WriteString(tok.Text)
		if tok.Text == "" && !held {
			held = true
			cancel()
		}
		return nil
	})
	if !held {
		t.Fatal("no token was held back")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if want := e.Tok.Decode(res.Tokens); res.Text != want || streamed.String() != want {
		t.Errorf("text %q, streamed %q, want %q (every generated token's text)", res.Text, streamed.String(), want)
	}
}

// TestSpecialAsText: "<s>" written in a text prompt is the BOS token by
// default (Hugging Face, llama.cpp's parse_special), and plain text with
// SpecialAsText, as Google SentencePiece reads it; a leading BOS is added
// either way.
func TestSpecialAsText(t *testing.T) {
	e := load(t, stories, 64)
	const text = "Once <s> upon"
	bos := e.Tok.BOS()
	def, err := e.PromptIDs(&Request{Prompt: text, Params: sampler.DefaultParams()})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := e.PromptIDs(&Request{Prompt: text, Params: sampler.DefaultParams(), SpecialAsText: true})
	if err != nil {
		t.Fatal(err)
	}
	if def[0] != bos || plain[0] != bos {
		t.Fatalf("no leading BOS %d: %v, %v", bos, def, plain)
	}
	if !slices.Contains(def[1:], bos) {
		t.Errorf("default: %v has no %d for the <s> in %q", def, bos, text)
	}
	if slices.Contains(plain[1:], bos) || len(plain) <= len(def) {
		t.Errorf("SpecialAsText: %v (default %v): <s> should be text", plain, def)
	}
	want, err := e.Tok.EncodeOpts(text, tokenizer.EncodeOptions{AddSpecial: true, SpecialAsText: true})
	if err != nil || !slices.Equal(plain, want) {
		t.Errorf("SpecialAsText ids %v, tokenizer %v (%v)", plain, want, err)
	}
}
