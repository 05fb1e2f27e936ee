package api

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"wasmllm/embed"
	"wasmllm/model"
)

// MaxEmbeddingInputs bounds the inputs of one embeddings request (OpenAI's
// limit).
const MaxEmbeddingInputs = 2048

// EmbeddingRequest is a parsed /v1/embeddings (engine.embeddings.create)
// request: OpenAI's CreateEmbeddingRequest, with vLLM's
// truncate_prompt_tokens.
type EmbeddingRequest struct {
	Model  string
	Inputs []embed.Input
	// Base64: encoding_format "base64" (the little-endian float32 array),
	// else "float".
	Base64 bool
	// Dimensions: the first N values renormalised; 0 for all.
	Dimensions int
	// Truncate: cut inputs over the model's length (or TruncateTo)
	// instead of refusing them.
	Truncate   bool
	TruncateTo int
}

func embedParam(param, format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Message: param + ": " + fmt.Sprintf(format, args...), Details: map[string]any{"param": param}}
}

// ParseEmbeddings parses an embeddings request body. Errors are *Error
// with CodeBadRequest naming the parameter.
func ParseEmbeddings(body []byte) (*EmbeddingRequest, error) {
	var raw struct {
		Model          *string         `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat *string         `json:"encoding_format"`
		Dimensions     *int            `json:"dimensions"`
		User           *string         `json:"user"`
		Truncate       *int            `json:"truncate_prompt_tokens"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, &Error{Code: CodeBadRequest, Message: "the request body is not a JSON object of an embeddings request: " + clip(err.Error()), Err: err}
	}
	r := &EmbeddingRequest{}
	if raw.Model != nil {
		r.Model = *raw.Model
	}
	if raw.EncodingFormat != nil {
		switch *raw.EncodingFormat {
		case "float":
		case "base64":
			r.Base64 = true
		default:
			return nil, embedParam("encoding_format", "%q: want \"float\" or \"base64\"", clip(*raw.EncodingFormat))
		}
	}
	if raw.Dimensions != nil {
		if *raw.Dimensions < 1 {
			return nil, embedParam("dimensions", "%d: want at least 1", *raw.Dimensions)
		}
		r.Dimensions = *raw.Dimensions
	}
	if raw.Truncate != nil {
		switch t := *raw.Truncate; {
		case t == -1:
			r.Truncate = true
		case t >= 1:
			r.Truncate, r.TruncateTo = true, t
		default:
			return nil, embedParam("truncate_prompt_tokens", "%d: want -1 (the model's length) or at least 1", t)
		}
	}
	in, err := parseEmbeddingInput(raw.Input)
	if err != nil {
		return nil, err
	}
	r.Inputs = in
	return r, nil
}

// parseEmbeddingInput reads input: a string, an array of strings, an array
// of token ids, or an array of arrays of token ids.
func parseEmbeddingInput(raw json.RawMessage) ([]embed.Input, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, embedParam("input", "required: a string, an array of strings, an array of token ids or an array of arrays of token ids")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []embed.Input{embed.Text(s)}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, embedParam("input", "want a string, an array of strings, an array of token ids or an array of arrays of token ids")
	}
	if len(items) == 0 {
		return nil, embedParam("input", "an empty array")
	}
	if len(items) > MaxEmbeddingInputs {
		return nil, embedParam("input", "%d inputs: at most %d", len(items), MaxEmbeddingInputs)
	}
	tokenID := func(m json.RawMessage) (int32, bool) {
		var f float64
		if json.Unmarshal(m, &f) != nil || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			return 0, false
		}
		return int32(f), true
	}
	// An array of token ids is one input.
	if _, ok := tokenID(items[0]); ok {
		ids := make([]int32, len(items))
		for i, m := range items {
			id, ok := tokenID(m)
			if !ok {
				return nil, embedParam("input", "item %d of an array of token ids is not a token id", i)
			}
			ids[i] = id
		}
		return []embed.Input{embed.Tokens(ids)}, nil
	}
	out := make([]embed.Input, len(items))
	for i, m := range items {
		var s string
		if json.Unmarshal(m, &s) == nil {
			out[i] = embed.Text(s)
			continue
		}
		var ids []json.RawMessage
		if json.Unmarshal(m, &ids) != nil {
			return nil, embedParam("input", "item %d is neither a string nor an array of token ids", i)
		}
		if len(ids) == 0 {
			return nil, embedParam("input", "item %d is an empty array of token ids", i)
		}
		v := make([]int32, len(ids))
		for j, x := range ids {
			id, ok := tokenID(x)
			if !ok {
				return nil, embedParam("input", "item %d: value %d is not a token id", i, j)
			}
			v[j] = id
		}
		out[i] = embed.Tokens(v)
	}
	return out, nil
}

// Embedding is one item of an embeddings response: Embedding is a
// []float32, or the base64 of its little-endian float32 bytes.
type Embedding struct {
	Object         string `json:"object"`
	Index          int    `json:"index"`
	Embedding      any    `json:"embedding"`
	EncodingFormat string `json:"encoding_format,omitempty"`
}

// EmbeddingUsage is an embeddings response's usage.
type EmbeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// EmbeddingResponse is OpenAI's CreateEmbeddingResponse.
type EmbeddingResponse struct {
	Object string         `json:"object"`
	Data   []Embedding    `json:"data"`
	Model  string         `json:"model"`
	Usage  EmbeddingUsage `json:"usage"`
}

// NewEmbeddingResponse shapes the results of r (in r's order): each
// normalised vector, as floats or base64.
func NewEmbeddingResponse(r *EmbeddingRequest, model string, res []embed.Result) *EmbeddingResponse {
	out := &EmbeddingResponse{Object: "list", Model: model, Data: make([]Embedding, len(res))}
	for i, x := range res {
		e := Embedding{Object: "embedding", Index: i, Embedding: x.Normalized}
		if r.Base64 {
			b := make([]byte, 4*len(x.Normalized))
			for j, v := range x.Normalized {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(v))
			}
			e.Embedding, e.EncodingFormat = base64.StdEncoding.EncodeToString(b), "base64"
		}
		out.Data[i] = e
		out.Usage.PromptTokens += x.Tokens
	}
	out.Usage.TotalTokens = out.Usage.PromptTokens
	return out
}

// EmbedOptions are embed's options for r.
func (r *EmbeddingRequest) EmbedOptions() embed.Options {
	return embed.Options{Truncate: r.Truncate, TruncateTo: r.TruncateTo, Dimensions: r.Dimensions}
}

// EmbedError is Classify for embed's errors: an input the model cannot
// take (empty, too long, a token outside the vocabulary) or dimensions
// past the model's are bad requests naming "input" or "dimensions".
func EmbedError(err error) *Error {
	var ie *model.InputError
	var de *embed.DimensionsError
	switch {
	case errors.As(err, &ie):
		e := &Error{Code: CodeBadRequest, Message: strings.TrimPrefix(ie.Error(), "model: "), Details: map[string]any{"param": "input", "index": ie.Index}, Err: err}
		if errors.Is(err, model.ErrInputTooLong) {
			e.Message = fmt.Sprintf("input %d has %d tokens, over the model's maximum of %d tokens: shorten it, or ask for truncation with truncate_prompt_tokens", ie.Index, ie.Tokens, ie.Max)
			e.Details["tokens"], e.Details["max_tokens"] = ie.Tokens, ie.Max
		}
		return e
	case errors.As(err, &de):
		return &Error{Code: CodeBadRequest, Message: strings.TrimPrefix(de.Error(), "embed: "), Details: map[string]any{"param": "dimensions"}, Err: err}
	}
	return Classify(err)
}
