package sampler

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Logprobs modes (vLLM's --logprobs-mode).
const (
	// RawLogprobs: log-softmax of the model's logits, before any processor.
	RawLogprobs = "raw_logprobs"
	// ProcessedLogprobs: log-softmax of the logits the token was sampled
	// from, after processors, penalties, temperature, min_p, top_k and top_p
	// (masked tokens have -Inf and are left out of top lists). For greedy
	// requests it is the log-softmax after the penalties, without
	// temperature, as in vLLM.
	ProcessedLogprobs = "processed_logprobs"
)

// MaxVocab bounds the vocabulary size a Sampler accepts (its scratch is
// proportional to it).
const MaxVocab = 1 << 24

// MaxLogprobs is the largest top-n accepted for Params.Logprobs (vLLM's
// default max_logprobs).
const MaxLogprobs = 20

// Params are one request's sampling parameters, named as in vLLM and the
// OpenAI API. The zero value is not useful: start from DefaultParams (JSON
// decoding through UnmarshalJSON or ParseParams does).
type Params struct {
	Temperature       float64           `json:"temperature"`
	TopP              float64           `json:"top_p"`
	TopK              int               `json:"top_k"` // 0 or -1: off
	MinP              float64           `json:"min_p"`
	Seed              *int64            `json:"seed,omitempty"` // nil or -1: a fresh random seed
	RepetitionPenalty float64           `json:"repetition_penalty"`
	FrequencyPenalty  float64           `json:"frequency_penalty"`
	PresencePenalty   float64           `json:"presence_penalty"`
	LogitBias         map[int32]float64 `json:"logit_bias,omitempty"`
	AllowedTokenIDs   []int32           `json:"allowed_token_ids,omitempty"` // nil: off; empty: invalid
	BadWords          []string          `json:"bad_words,omitempty"`
	MinTokens         int               `json:"min_tokens"`
	Logprobs          *int              `json:"logprobs,omitempty"` // nil: off; n in [0, 20]
	LogprobsMode      string            `json:"logprobs_mode,omitempty"`
	Stop              StringList        `json:"stop,omitempty"`
	StopTokenIDs      []int32           `json:"stop_token_ids,omitempty"`
	IgnoreEOS         bool              `json:"ignore_eos"`
	MaxTokens         int               `json:"max_tokens,omitempty"` // 0: until the context is full
	IncludeStopStr    bool              `json:"include_stop_str_in_output,omitempty"`

	// BadWordIDs are the token sequences of BadWords, filled by the caller
	// with TokenizeBadWords (the sampler has no tokenizer).
	BadWordIDs [][]int32 `json:"-"`
	// Processors are custom logits processors, run after min_tokens and
	// before the penalties.
	Processors []LogitsProcessor `json:"-"`
}

// LogitsProcessor is a custom logits processor. Process may change any
// logit of the row in place; output holds the tokens generated so far. It
// runs after allowed_token_ids, bad_words, logit_bias and min_tokens and
// before the penalties, on the full row (a request with one never uses
// the candidate path).
type LogitsProcessor interface {
	Process(logits []float32, output []int32) error
}

// DefaultParams returns vLLM's defaults: temperature 1, top_p 1, top_k off,
// min_p 0, no penalties, raw logprobs mode, max_tokens 16.
func DefaultParams() Params {
	return Params{Temperature: 1, TopP: 1, RepetitionPenalty: 1, MaxTokens: 16}
}

// StringList is a list of strings that also decodes from a single JSON
// string, as OpenAI's "stop" does.
type StringList []string

// UnmarshalJSON accepts "s" or ["a", "b"].
func (l *StringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = StringList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*l = many
	return nil
}

type paramsJSON Params

// UnmarshalJSON decodes over DefaultParams, so absent fields keep vLLM's
// defaults.
func (p *Params) UnmarshalJSON(b []byte) error {
	q := paramsJSON(DefaultParams())
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = Params(q)
	return nil
}

// ParseParams decodes a JSON object of sampling parameters over
// DefaultParams and rejects unknown fields, so a misspelt parameter is an
// error rather than silently ignored. It does not validate ranges; call
// Validate.
func ParseParams(data []byte) (Params, error) {
	q := paramsJSON(DefaultParams())
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&q); err != nil {
		return Params{}, fmt.Errorf("sampler: parameters: %w", err)
	}
	if dec.More() {
		return Params{}, fmt.Errorf("sampler: parameters: trailing data after the object")
	}
	return Params(q), nil
}

// vLLM's thresholds: below samplingEps a temperature means greedy; a
// positive temperature below minTemperature is raised to it.
const (
	samplingEps    = 1e-5
	minTemperature = 1e-2
)

// Greedy reports whether the request takes the argmax (temperature 0).
func (p *Params) Greedy() bool { return p.Temperature < samplingEps }

// effectiveTemperature applies vLLM's clamp of tiny positive temperatures.
func (p *Params) effectiveTemperature() float64 {
	if t := p.Temperature; t > 0 && t < minTemperature {
		return minTemperature
	}
	return p.Temperature
}

// topK returns the active top-k, or 0 when it is off (0, -1 or >= vocab).
func (p *Params) topK(vocab int) int {
	if p.TopK <= 0 || p.TopK >= vocab {
		return 0
	}
	return p.TopK
}

func (p *Params) logprobsMode() string {
	if p.LogprobsMode == "" {
		return RawLogprobs
	}
	return p.LogprobsMode
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate checks every parameter against vocab, the model's vocabulary
// size, and returns a *ParamError naming the first bad one.
func (p *Params) Validate(vocab int) error {
	bad := func(param string, v any, reason string) error {
		return &ParamError{Param: param, Value: v, Reason: reason}
	}
	inVocab := func(id int32) bool { return id >= 0 && int(id) < vocab }
	if vocab <= 0 || vocab > MaxVocab {
		return bad("vocab", vocab, fmt.Sprintf("must be in [1, %d]", MaxVocab))
	}
	if !finite(p.Temperature) || p.Temperature < 0 || p.Temperature > 2 {
		return bad("temperature", p.Temperature, "must be in [0, 2]")
	}
	if !(p.TopP > 0 && p.TopP <= 1) {
		return bad("top_p", p.TopP, "must be in (0, 1]")
	}
	if p.TopK < -1 {
		return bad("top_k", p.TopK, "must be -1 or 0 (off) or at least 1")
	}
	if p.TopK > vocab {
		return bad("top_k", p.TopK, fmt.Sprintf("must not exceed the vocabulary size %d", vocab))
	}
	if !(p.MinP >= 0 && p.MinP <= 1) {
		return bad("min_p", p.MinP, "must be in [0, 1]")
	}
	if !finite(p.RepetitionPenalty) || p.RepetitionPenalty <= 0 {
		return bad("repetition_penalty", p.RepetitionPenalty, "must be a finite number above 0")
	}
	if !(p.FrequencyPenalty >= -2 && p.FrequencyPenalty <= 2) {
		return bad("frequency_penalty", p.FrequencyPenalty, "must be in [-2, 2]")
	}
	if !(p.PresencePenalty >= -2 && p.PresencePenalty <= 2) {
		return bad("presence_penalty", p.PresencePenalty, "must be in [-2, 2]")
	}
	for id, b := range p.LogitBias {
		if !inVocab(id) {
			return bad("logit_bias", id, fmt.Sprintf("token id outside the vocabulary [0, %d)", vocab))
		}
		if !(b >= -100 && b <= 100) {
			return bad("logit_bias", b, fmt.Sprintf("bias of token %d must be in [-100, 100]", id))
		}
	}
	if p.AllowedTokenIDs != nil && len(p.AllowedTokenIDs) == 0 {
		return bad("allowed_token_ids", "[]", "must not be empty when given")
	}
	for _, id := range p.AllowedTokenIDs {
		if !inVocab(id) {
			return bad("allowed_token_ids", id, fmt.Sprintf("token id outside the vocabulary [0, %d)", vocab))
		}
	}
	for _, w := range p.BadWords {
		if w == "" {
			return bad("bad_words", `""`, "must not contain an empty string")
		}
	}
	if len(p.BadWords) > 0 && p.BadWordIDs == nil {
		return bad("bad_words", p.BadWords, "not tokenized: set BadWordIDs with TokenizeBadWords")
	}
	for _, seq := range p.BadWordIDs {
		if len(seq) == 0 {
			return bad("bad_words", "[]", "a tokenized bad word is empty")
		}
		for _, id := range seq {
			if !inVocab(id) {
				return bad("bad_words", id, fmt.Sprintf("token id outside the vocabulary [0, %d)", vocab))
			}
		}
	}
	if p.MaxTokens < 0 {
		return bad("max_tokens", p.MaxTokens, "must be at least 1 (or 0 for no limit)")
	}
	if p.MinTokens < 0 {
		return bad("min_tokens", p.MinTokens, "must be at least 0")
	}
	if p.MaxTokens > 0 && p.MinTokens > p.MaxTokens {
		return bad("min_tokens", p.MinTokens, fmt.Sprintf("must not exceed max_tokens %d", p.MaxTokens))
	}
	if p.Logprobs != nil && (*p.Logprobs < 0 || *p.Logprobs > MaxLogprobs) {
		return bad("logprobs", *p.Logprobs, fmt.Sprintf("must be in [0, %d]", MaxLogprobs))
	}
	switch p.LogprobsMode {
	case "", RawLogprobs, ProcessedLogprobs:
	default:
		return bad("logprobs_mode", p.LogprobsMode, `must be "raw_logprobs" or "processed_logprobs"`)
	}
	for _, s := range p.Stop {
		if s == "" {
			return bad("stop", `""`, "must not contain an empty string")
		}
	}
	for _, id := range p.StopTokenIDs {
		if !inVocab(id) {
			return bad("stop_token_ids", id, fmt.Sprintf("token id outside the vocabulary [0, %d)", vocab))
		}
	}
	for i, lp := range p.Processors {
		if lp == nil {
			return bad("processors", i, "is nil")
		}
	}
	return nil
}
