// Package api is the OpenAI protocol layer the browser worker (wasm/),
// the server's -api engine (server/openai) and cmd/generate share: the
// chat.completions and completions requests with vLLM's parameter names
// (ParseChat, ParseCompletion), their structured-output constraints and
// tools, checked when the request is parsed and compiled once it is
// admitted to run (Constraint, Tools; compiled grammars cached, bounded by
// GrammarCacheSize and GrammarCacheBytes), the preparation that depends on
// the model (Prepare: the constraint's compile, the template's history,
// the grammar that forces a tool call, the reasoning mode), the Runner that answers a request with one
// engine, whole or as a stream of OpenAI-shaped chunks (delta.content,
// delta.reasoning_content, delta.tool_calls, the usage chunk), and the
// errors: *Error, a stable code, a message and details, which the worker
// posts to the page as a WasmLLMError and server/openai turns into vLLM's
// error bodies. Classify maps any error from loading or generation to the
// most specific code: an error that carries its own (errcode.Coded: the
// backends', the loading plan's) gives it, so this package imports no
// backend; the rest it knows by type.
//
// Stream shaping lives here too: the reasoning splitter (stream_reasoning.go)
// sends a chat model's thinking block as reasoning_content and the rest as
// content, reading the prompt's reasoning mode as the engine detected it
// (engine.ReasoningMode: none, optional as Qwen3's, opened as
// DeepSeek-R1's), and the tool-call parser (stream_chat.go, package
// toolcall) then sees only the answer, as a client's JSON.parse does.
package api
