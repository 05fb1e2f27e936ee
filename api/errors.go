package api

import (
	"context"
	"errors"
	"fmt"
	"wasmllm/cpu"

	"wasmllm/engine"
	"wasmllm/gpu"
	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/tokenizer"
)

// Error codes carried by *Error across the worker boundary. The JavaScript
// API exposes them as WasmLLMError.code.
const (
	CodeBadRequest      = "bad_request"      // a malformed or out-of-range request
	CodeBadModel        = "bad_model"        // a manifest, tensor or tokenizer that does not parse
	CodeModelTooLarge   = "model_too_large"  // a tensor, the KV cache or the whole model exceeds the device
	CodeQuotaExceeded   = "quota_exceeded"   // the model does not fit the origin's storage quota
	CodeIntegrity       = "integrity"        // a shard whose sha256 or size does not match the manifest
	CodeNetwork         = "network"          // a fetch that failed after its retries
	CodeContextOverflow = "context_overflow" // a prompt that does not fit the context
	CodeAborted         = "aborted"          // a load stopped by abort()
	CodeNoChatTemplate  = "no_chat_template" // a chat request for a model without a template
	CodeNoTokenizer     = "no_tokenizer"     // a text request for a model without a tokenizer
	CodeDeviceLost      = "device_lost"      // the GPU device was lost; reload
	CodeRankFailed      = "cpu_rank_failed"  // a rank of the CPU engine (a Web Worker) died or stopped answering; reload
	CodeNoWebGPU        = "no_webgpu"        // backend "webgpu" was asked for but is not available
	CodeNotLoaded       = "not_loaded"       // a request before load or after unload
	CodeInternal        = "internal"         // anything else: a bug, or a backend failure
)

// Error is an error with a stable code, a message for people, and details
// for programs. It is what the worker posts to the page.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
	Err     error          `json:"-"`
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Classify maps any error from loading or generation to an *Error with the
// most specific code that applies.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if e := classifyLoading(err); e != nil {
		return e
	}
	if e := classifyStructured(err); e != nil {
		return e
	}
	out := &Error{Code: CodeInternal, Message: err.Error(), Err: err}
	var (
		ce  *engine.ContextError
		mce *model.ContextError
		pe  *sampler.ParamError
		te  *tokenizer.TemplateError
		fe  *loader.FormatError
		dl  *webgpu.DeviceLostError
		le  *webgpu.LimitError
		kv  *gpu.KVCacheError
		ge  *webgpu.GPUError
		re  *cpu.RankError
	)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		out.Code = CodeAborted
	case errors.As(err, &ce):
		out.Code = CodeContextOverflow
		out.Details = map[string]any{"prompt_tokens": ce.PromptTokens, "max_tokens": ce.MaxTokens, "context_length": ce.Context}
	case errors.As(err, &mce):
		out.Code = CodeContextOverflow
		out.Details = map[string]any{"position": mce.Pos, "tokens": mce.Tokens, "context_length": mce.Capacity}
	case errors.Is(err, model.ErrContextFull):
		out.Code = CodeContextOverflow
	case errors.As(err, &pe):
		out.Code = CodeBadRequest
		out.Details = map[string]any{"param": pe.Param}
	case errors.Is(err, tokenizer.ErrNoChatTemplate):
		out.Code = CodeNoChatTemplate
	case errors.Is(err, engine.ErrNoTokenizer):
		out.Code = CodeNoTokenizer
	case errors.As(err, &te):
		// A template's raise_exception rejects the conversation itself; a
		// template that does not compile or runs past a limit is the
		// model's fault.
		out.Code = CodeBadRequest
		if te.Stage == "compile" || te.Limit != "" {
			out.Code = CodeBadModel
		}
		out.Details = map[string]any{"stage": te.Stage, "template": te.Template, "limit": te.Limit}
	case errors.Is(err, sampler.ErrAllMasked):
		out.Code = CodeBadRequest
	case errors.As(err, &re):
		out.Code = CodeRankFailed
		out.Details = map[string]any{"rank": re.Rank, "op": re.Op, "reason": re.Reason}
	case errors.As(err, &dl):
		out.Code = CodeDeviceLost
		out.Details = map[string]any{"reason": dl.Reason, "message": dl.Message}
	case errors.As(err, &le):
		out.Code = CodeModelTooLarge
		out.Details = map[string]any{"limit": le.Limit, "need": le.Need, "have": le.Have, "object": le.Label}
	case errors.As(err, &kv) && kv.Limit != "out-of-memory":
		out.Code = CodeModelTooLarge
		out.Details = map[string]any{"what": "KV cache", "limit": kv.Limit, "need": kv.Need, "have": kv.Have,
			"over": int64(kv.Need) - int64(kv.Have), "max_context": kv.MaxCapacity}
	case errors.As(err, &kv) || errors.As(err, &ge) && ge.Kind == "out-of-memory":
		out.Code = CodeModelTooLarge
		out.Message = "the GPU ran out of memory: " + err.Error()
	case errors.Is(err, gpu.ErrNoWebGPU):
		out.Code = CodeNoWebGPU
	case errors.Is(err, manifest.ErrChecksum):
		out.Code = CodeIntegrity
	case errors.As(err, &fe):
		out.Code = CodeBadModel
		out.Details = map[string]any{"file": fe.File, "field": fe.Field, "offset": fe.Offset}
	}
	return out
}
