package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"wasmllm/api"
	"wasmllm/engine"
)

// ErrorBody is the body of every error answer, as vLLM writes it (OpenAI's
// shape, with the HTTP status as code):
//
//	{"error": {"message": "...", "type": "NotFoundError", "param": "model", "code": 404}}
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo is ErrorBody.Error.
type ErrorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// Error is an answer that is an error: an HTTP status, vLLM's error type
// for it, a message and the parameter at fault ("" for none).
type Error struct {
	Status  int
	Type    string // "" takes errorType(Status)
	Message string
	Param   string
}

func (e *Error) Error() string { return e.Message }

// Body returns the error's JSON body.
func (e *Error) Body() ErrorBody {
	info := ErrorInfo{Message: e.Message, Type: e.Type, Code: e.Status}
	if info.Type == "" {
		info.Type = errorType(e.Status)
	}
	if e.Param != "" {
		p := e.Param
		info.Param = &p
	}
	return ErrorBody{Error: info}
}

func errorf(status int, param, format string, args ...any) *Error {
	return &Error{Status: status, Param: param, Message: fmt.Sprintf(format, args...)}
}

// errorType is the error type vLLM (and the OpenAI clients' error classes)
// name for an HTTP status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusUnauthorized:
		return "AuthenticationError"
	case http.StatusForbidden:
		return "PermissionDeniedError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowedError"
	case http.StatusRequestTimeout:
		return "RequestTimeoutError"
	case http.StatusRequestEntityTooLarge:
		return "RequestTooLargeError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusNotImplemented:
		return "NotImplementedError"
	case http.StatusBadGateway:
		return "BadGatewayError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	case http.StatusGatewayTimeout:
		return "GatewayTimeoutError"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return "BadRequestError"
}

// WriteError answers e as JSON with its status. Too-many-requests and
// service-unavailable answers ask the client to retry after a second.
func WriteError(w http.ResponseWriter, e *Error) {
	body, _ := json.Marshal(e.Body())
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("Cache-Control", "no-store")
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(e.Status)
	w.Write(append(body, '\n'))
}

// fromAPI maps an error of the shared request and engine code
// (api's codes) to an HTTP error, as vLLM answers the same request:
// a bad request, a prompt past the context and a chat for a model without
// a template are 400 (vLLM's context-length message, param input_tokens);
// anything else is the server's fault, 500.
func fromAPI(err error) *Error {
	var he *Error
	if errors.As(err, &he) {
		return he
	}
	e := api.Classify(err)
	param, _ := e.Details["param"].(string)
	switch e.Code {
	case api.CodeBadRequest, api.CodeNoChatTemplate, api.CodeNoTokenizer:
		return &Error{Status: http.StatusBadRequest, Message: e.Message, Param: param}
	case api.CodeContextOverflow:
		var ce *engine.ContextError
		if errors.As(err, &ce) {
			return contextError(ce.PromptTokens, ce.Context)
		}
		return &Error{Status: http.StatusBadRequest, Message: e.Message, Param: "input_tokens"}
	}
	return &Error{Status: http.StatusInternalServerError, Message: e.Message}
}

// contextError is vLLM's answer to a prompt that leaves no room to generate.
func contextError(prompt, context int) *Error {
	return errorf(http.StatusBadRequest, "input_tokens",
		"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
		context, prompt)
}

// maxTokensError is vLLM's answer to max_tokens past what the context
// leaves after the prompt.
func maxTokensError(maxTokens, prompt, context int) *Error {
	return errorf(http.StatusBadRequest, "max_tokens",
		"'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d).",
		maxTokens, context, prompt, maxTokens, context, prompt)
}
