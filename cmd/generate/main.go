// Command generate runs a model from a terminal: a GGUF file, a Hugging Face
// folder, a llama2.c checkpoint or a converted folder, on the CPU backend or
// (with -backend webgpu) on WebGPU in headless Chromium.
//
//	go run ./cmd/generate -model testdata/models/stories260K.gguf -prompt "Once upon a time" -n 64
//	go run ./cmd/generate -model M -tokens 1,2,3 -n 0 -logits out.json
//	go run ./cmd/generate -model M -prompt Hi -json -temperature 0.7 -top-k 40 -seed 7 -logprobs 5
//	go run ./cmd/generate -model M -chat "Weather in Paris?" -tools tools.json -tool-choice required
//	go run ./cmd/generate -model M -prompt "Answer:" -choice yes,no
//
// Structured output (-response-format json, -json-schema, -grammar, -regex,
// -choice) and tool calls (-tools, -tool-choice) are read as the JS API and
// the server read response_format, guided_* and tools (api); a reply
// read for tool calls prints its content and then one JSON line
// {"content": ..., "tool_calls": [...]} in OpenAI's message shape.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"wasmllm/api"
	"wasmllm/engine"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
	"wasmllm/toolcall"
)

type config struct {
	model, tokenizer, prompt, tokens, logits, backend, chat string
	kvDType                                                 loader.DType
	n, ctx, threads                                         int
	json, system, parseSpecial                              bool
	params                                                  sampler.Params
	nSet                                                    bool
	args                                                    []string // as given, to run again in the browser
	structure                                               structureFlags
	chatKwargs                                              map[string]any // -chat-template-kwargs
	// shape holds the reply's constraint and tools, as parsed from the
	// structure flags; run fills in its engine request.
	shape *api.Request
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		if ee, ok := err.(interface{ ExitCode() int }); ok {
			os.Exit(ee.ExitCode()) // the browser run printed its error
		}
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	c := &config{params: sampler.DefaultParams(), args: args}
	c.params.Temperature = 0 // greedy unless asked
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.StringVar(&c.model, "model", "", "model: GGUF file, Hugging Face folder, llama2.c .bin or converted folder")
	fs.StringVar(&c.tokenizer, "tokenizer", "", "tokenizer override: tokenizer.json, folder, GGUF, or llama2.c tokenizer.bin")
	fs.StringVar(&c.prompt, "prompt", "", "prompt text (BOS added when the model's tokenizer says so)")
	fs.BoolVar(&c.parseSpecial, "parse-special", true, "special tokens written in -prompt (\"<s>\") are the special tokens; false: plain text, as SentencePiece reads them")
	fs.StringVar(&c.chat, "chat", "", "a user message, rendered with the model's chat template")
	fs.StringVar(&c.tokens, "tokens", "", "prompt as comma-separated token ids, used as given (no BOS)")
	fs.IntVar(&c.n, "n", 16, "new tokens to generate (0: evaluate the prompt only)")
	fs.StringVar(&c.logits, "logits", "", `write {"tokens":[...],"logits":[[...],...]} for every prompt position to FILE`)
	fs.BoolVar(&c.json, "json", false, `print one JSON object per token: {"id":..,"text":..}`)
	fs.StringVar(&c.backend, "backend", "cpu", "cpu or webgpu (headless Chromium)")
	fs.IntVar(&c.ctx, "ctx", 0, "context length (KV cache capacity); 0: the model's, at most 4096")
	fs.IntVar(&c.threads, "threads", 0, "CPU threads (0: all)")
	kv := fs.String("kv-dtype", "", "KV cache type: f32, f16 (half the memory) or q8 (8-bit with a scale per 32 values: 28% of f32's bytes for heads of 128); default f16 on webgpu, f32 on cpu")
	c.params.BindFlags(fs)
	c.structure.bind(fs)
	kwargs := fs.String("chat-template-kwargs", "", `-chat's template variables as a JSON object (chat_template_kwargs), e.g. {"enable_thinking":false}`)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *kwargs != "" {
		var kw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(*kwargs), &kw); err != nil {
			return nil, fmt.Errorf("-chat-template-kwargs: want a JSON object: %v", err)
		}
		c.chatKwargs = map[string]any{}
		for k, v := range kw {
			c.chatKwargs[k] = v
		}
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "n" {
			c.nSet = true
		}
	})
	if c.model == "" {
		return nil, errors.New("-model is required")
	}
	switch *kv {
	case "":
		c.kvDType = loader.F32
		if c.backend == "webgpu" {
			c.kvDType = loader.F16
		}
	default:
		var ok bool
		if c.kvDType, ok = model.ParseKVDType(*kv); !ok {
			return nil, fmt.Errorf("-kv-dtype %q: want f32, f16 or q8", *kv)
		}
	}
	set := 0
	for _, s := range []string{c.prompt, c.tokens, c.chat} {
		if s != "" {
			set++
		}
	}
	if set > 1 {
		return nil, errors.New("give only one of -prompt, -tokens and -chat")
	}
	if c.n < 0 {
		return nil, errors.New("-n must be >= 0")
	}
	if c.nSet || c.params.MaxTokens == sampler.DefaultParams().MaxTokens {
		c.params.MaxTokens = c.n
	}
	fields, err := c.structure.fields(c.chat != "")
	if err != nil {
		return nil, err
	}
	c.shape = &api.Request{Kind: api.KindCompletion}
	if c.chat != "" {
		c.shape.Kind = api.KindChat
	}
	if err := c.shape.ParseStructure(fields); err != nil {
		return nil, flagError(err)
	}
	// A bad schema, regex or grammar is a flag error, before any model loads.
	if err := c.shape.CompileConstraint(context.Background()); err != nil {
		return nil, flagError(err)
	}
	return c, nil
}

func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("-tokens: %q is not a token id", f)
		}
		ids = append(ids, int32(v))
	}
	if len(ids) == 0 {
		return nil, errors.New("-tokens: no ids")
	}
	return ids, nil
}

// run loads the model on the chosen backend and generates.
func run(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	if ran, err := runElsewhere(ctx, c, stdout, stderr); ran {
		return err
	}
	b, closeB, err := newBackend(ctx, c)
	if err != nil {
		return err
	}
	defer closeB()
	e, err := engine.Load(c.model, b, engine.LoadOptions{Tokenizer: c.tokenizer, Options: engine.Options{Context: c.ctx, KVDType: c.kvDType}})
	if err != nil {
		return err
	}
	if got := e.KVDType(); got != c.kvDType {
		fmt.Fprintf(stderr, "note: the %s backend keeps the KV cache in %v, not %v\n", c.backend, got, c.kvDType)
	}
	shape := c.shape
	if shape == nil {
		shape = &api.Request{Kind: api.KindCompletion}
	}
	req := &shape.Engine
	req.Params = c.params
	switch {
	case c.tokens != "":
		if req.Tokens, err = parseIDs(c.tokens); err != nil {
			return err
		}
	case c.chat != "":
		req.Messages = []tokenizer.Message{{Role: "user", Content: c.chat}}
		req.Chat.Kwargs = c.chatKwargs
	default:
		req.Prompt, req.SpecialAsText = c.prompt, !c.parseSpecial
		if c.prompt == "" && e.Tok != nil && e.Tok.BOS() >= 0 {
			req.Tokens = []int32{e.Tok.BOS()}
		}
	}
	if err := api.Prepare(ctx, e, shape); err != nil {
		return flagError(err)
	}
	format := shape.ToolFormat()
	if c.logits != "" {
		ids := req.Tokens
		if ids == nil {
			if ids, err = e.PromptIDs(req); err != nil {
				return err
			}
		}
		if err := writeLogits(e, ids, c.logits); err != nil {
			return err
		}
	}
	if c.n == 0 {
		return nil
	}
	enc := json.NewEncoder(stdout)
	var text strings.Builder // the reply, when it is read for tool calls
	res, err := e.Generate(ctx, req, func(t engine.Token) error {
		text.WriteString(t.Text)
		if !c.json {
			if format != toolcall.None {
				return nil // printed once its calls are read
			}
			_, err := io.WriteString(stdout, t.Text)
			return err
		}
		out := tokenJSON{ID: t.ID, Text: t.Text}
		if t.HasLogprobs {
			lp := t.Logprob
			out.Logprob = &lp
			out.TopLogprobs = t.TopLogprobs
			if out.TopLogprobs == nil {
				out.TopLogprobs = []sampler.TokenLogprob{}
			}
		}
		return enc.Encode(out)
	})
	if res != nil {
		if format != toolcall.None {
			content, calls := api.ToolCalls(format, text.String(), api.Cut(res.Finish))
			if !c.json && content != nil {
				io.WriteString(stdout, *content)
			}
			if len(calls) > 0 {
				if !c.json {
					fmt.Fprintln(stdout)
				}
				if err := enc.Encode(toolCallsJSON{Content: content, ToolCalls: calls}); err != nil {
					return err
				}
			} else if !c.json {
				fmt.Fprintln(stdout)
			}
		} else if !c.json {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stderr, "%d prompt tokens in %v, %d tokens in %v (%.1f tok/s), finish %q\n",
			res.Usage.PromptTokens, res.PrefillTime.Round(1e5), len(res.Tokens), res.DecodeTime.Round(1e5),
			decodeRate(res), res.Finish.Reason)
	}
	return err
}

type tokenJSON struct {
	ID          int32                  `json:"id"`
	Text        string                 `json:"text"`
	Logprob     *float32               `json:"logprob,omitempty"`
	TopLogprobs []sampler.TokenLogprob `json:"top_logprobs,omitempty"`
}

// writeLogits evaluates ids in one batch on a fresh cache and writes the
// logits of every position.
func writeLogits(e *engine.Engine, ids []int32, path string) error {
	m := e.Model
	cache, err := m.NewCacheOf(e.KVDType(), len(ids))
	if err != nil {
		return err
	}
	t, err := m.Forward(cache, ids, 0, true)
	if err != nil {
		return err
	}
	V := m.Config.Vocab
	flat := make([]float32, len(ids)*V)
	if err := m.Backend().ReadF32(t, flat); err != nil {
		return err
	}
	rows := make([][]float32, len(ids))
	for i := range rows {
		rows[i] = flat[i*V : (i+1)*V]
	}
	data, err := json.Marshal(struct {
		Tokens []int32     `json:"tokens"`
		Logits [][]float32 `json:"logits"`
	}{ids, rows})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// decodeRate is the decode loop's tokens per second: the first token comes
// with the prefill (PrefillTime runs up to it), so it is not counted.
func decodeRate(res *engine.Result) float64 {
	if n := len(res.Tokens) - 1; n > 0 && res.DecodeTime > 0 {
		return float64(n) / res.DecodeTime.Seconds()
	}
	return 0
}
