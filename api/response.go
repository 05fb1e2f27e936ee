package api

import (
	"wasmllm/engine"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

// Object types, as OpenAI names them.
const (
	ObjectChatCompletion      = "chat.completion"
	ObjectChatCompletionChunk = "chat.completion.chunk"
	ObjectTextCompletion      = "text_completion"
)

// FinishAbort is the finish_reason of a request stopped by abort(), as
// WebLLM reports it; OpenAI's own values are "stop" and "length".
const FinishAbort = "abort"

// Usage is OpenAI's usage block. CachedTokens counts prompt tokens reused
// from the KV cache of the previous request (not prefilled again).
type Usage struct {
	PromptTokens        int                 `json:"prompt_tokens"`
	CompletionTokens    int                 `json:"completion_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	PromptTokensDetails PromptTokensDetails `json:"prompt_tokens_details"`
	// DraftedTokens and AcceptedTokens are a speculative request's drafts
	// and those accepted (a wasmllm extension; absent without speculation).
	DraftedTokens  int `json:"drafted_tokens,omitempty"`
	AcceptedTokens int `json:"accepted_tokens,omitempty"`
}

// PromptTokensDetails is usage.prompt_tokens_details.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// Timings are a request's speeds, a wasmllm extension of the response.
type Timings struct {
	PrefillTokens    int     `json:"prefill_tokens"` // prompt tokens actually run (not cached)
	PrefillMS        float64 `json:"prefill_ms"`
	PrefillPerSecond float64 `json:"prefill_tokens_per_s"`
	DecodeTokens     int     `json:"decode_tokens"`
	DecodeMS         float64 `json:"decode_ms"`
	DecodePerSecond  float64 `json:"decode_tokens_per_s"`
	// DecodeStepsAhead counts the decode steps submitted before the
	// previous token was read back (engine: pipelined decode).
	DecodeStepsAhead int `json:"decode_steps_ahead"`
}

// ChatCompletion is a chat.completion or chat.completion.chunk object.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
	Timings *Timings     `json:"timings,omitempty"`
}

// ChatChoice is one choice: Message in a completion, Delta in a chunk.
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      *ChatMessage  `json:"message,omitempty"`
	Delta        *ChatDelta    `json:"delta,omitempty"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
}

// ChatMessage is the assistant message of a completion. Content is null
// when the reply is only tool calls, as OpenAI sends it.
type ChatMessage struct {
	Role string `json:"role"`
	// ReasoningContent is the thinking of a model with a thinking block
	// (Qwen3, DeepSeek-R1), without its <think> markers, as vLLM sends it.
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	Content          *string    `json:"content"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ChatDelta is a chunk's delta: the role in the first chunk, then content
// text or pieces of tool calls.
type ChatDelta struct {
	Role             string     `json:"role,omitempty"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	Content          *string    `json:"content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one tool call of a message, or a piece of one in a delta:
// a stream sends a call's index, id, type, name and empty arguments
// first, then {index, function: {arguments: fragment}} pieces, which add
// up to the arguments' JSON text (OpenAI's and vLLM's stream shape).
type ToolCall struct {
	Index    *int             `json:"index,omitempty"` // in deltas only
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"` // "function"
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction is a tool call's function: its name and its arguments
// as JSON text.
type ToolCallFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// FinishToolCalls is the finish_reason of a reply that ends with tool
// calls (where it would be "stop").
const FinishToolCalls = "tool_calls"

// ChatLogprobs is choices[].logprobs of a chat response.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is one token's entry in ChatLogprobs.Content.
type TokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is an alternative in TokenLogprob.TopLogprobs.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// TextCompletion is a text_completion object (response or stream chunk).
type TextCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []TextChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
	Timings *Timings     `json:"timings,omitempty"`
}

// TextChoice is one choice of a text_completion.
type TextChoice struct {
	Index        int           `json:"index"`
	Text         string        `json:"text"`
	FinishReason *string       `json:"finish_reason"`
	Logprobs     *TextLogprobs `json:"logprobs"`
}

// TextLogprobs is the legacy completions logprobs block.
type TextLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// UsageOf converts the engine's usage.
func UsageOf(u engine.Usage) *Usage {
	return &Usage{
		PromptTokens:        u.PromptTokens,
		CompletionTokens:    u.CompletionTokens,
		TotalTokens:         u.TotalTokens,
		PromptTokensDetails: PromptTokensDetails{CachedTokens: u.CachedTokens},
		DraftedTokens:       u.DraftedTokens,
		AcceptedTokens:      u.AcceptedTokens,
	}
}

// TimingsOf computes a result's speeds.
func TimingsOf(res *engine.Result) *Timings {
	t := &Timings{
		PrefillTokens:    res.Usage.PromptTokens - res.Usage.CachedTokens,
		PrefillMS:        float64(res.PrefillTime.Microseconds()) / 1000,
		DecodeTokens:     res.Usage.CompletionTokens,
		DecodeMS:         float64(res.DecodeTime.Microseconds()) / 1000,
		DecodeStepsAhead: res.StepsAhead,
	}
	if t.PrefillMS > 0 {
		t.PrefillPerSecond = float64(t.PrefillTokens) / t.PrefillMS * 1000
	}
	// The first completion token comes from the prefill's logits; decode
	// speed counts the forward passes of the decode loop.
	if n := t.DecodeTokens - 1; n > 0 && t.DecodeMS > 0 {
		t.DecodePerSecond = float64(n) / t.DecodeMS * 1000
	}
	return t
}

// finishReason is the OpenAI finish_reason of a result.
func finishReason(res *engine.Result, aborted bool) string {
	switch {
	case aborted:
		return FinishAbort
	case res.Finish.Reason == "":
		return string(sampler.FinishLength)
	}
	return string(res.Finish.Reason)
}

// tokenString is one token's text for logprobs: its decoded text, with
// special tokens spelled as in the vocabulary.
func tokenString(tok *tokenizer.Tokenizer, id int32) string {
	if tok == nil {
		return ""
	}
	return tok.Decode([]int32{id})
}

func utf8Bytes(s string) []int {
	b := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		b[i] = int(s[i])
	}
	return b
}

func chatLogprob(tok *tokenizer.Tokenizer, t *engine.Token) TokenLogprob {
	s := tokenString(tok, t.ID)
	e := TokenLogprob{Token: s, Logprob: t.Logprob, Bytes: utf8Bytes(s), TopLogprobs: []TopLogprob{}}
	for _, alt := range t.TopLogprobs {
		as := tokenString(tok, alt.ID)
		e.TopLogprobs = append(e.TopLogprobs, TopLogprob{Token: as, Logprob: alt.Logprob, Bytes: utf8Bytes(as)})
	}
	return e
}

func strp(s string) *string { return &s }
