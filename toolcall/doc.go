// Package toolcall implements OpenAI-style function calling for models
// whose chat templates teach them a tool-call syntax: it detects the syntax
// from the template (Detect), reads tool calls out of a finished reply
// (Parse) or out of a reply as it streams (StreamParser, which yields
// OpenAI's delta.content and delta.tool_calls pieces), builds the GBNF
// grammar that forces a call when tool_choice is "required" or names a
// function (Grammar), validates the request's tools and tool_choice
// (ParseTools, ParseChoice), and prepares OpenAI-shaped history messages
// for the templates the way vLLM and Hugging Face do (TemplateMessages).
//
// The formats are the ones vLLM's tool parsers read: Hermes (Qwen2.5,
// Qwen3, Hermes: <tool_call> blocks of JSON), Llama3JSON (Llama 3.1-3.3:
// a bare {"name": ..., "parameters": ...} object, maybe after
// <|python_tag|>), DeepSeekR1 (DeepSeek-V3/R1 and the R1 distills:
// <｜tool▁call▁begin｜> blocks with a fenced JSON argument object) and
// Phi4Mini (Phi-4-mini, vLLM's phi4_mini_json: a functools[...] list of
// call objects; its template reads the tools from the system message,
// PhiSystemTools, and renders no tool_calls, so history's calls become
// that text).
//
// Parse and StreamParser share one scanner, so for any reply whose calls
// are well formed the streamed pieces, however the text is split, add up to
// exactly what Parse returns. A call block that is not well formed stays
// content, as in vLLM; when streaming, that can only be decided once the
// call's name and the start of its arguments have been seen, so a call
// that goes wrong after that point has already been announced (see
// StreamParser). A reply cut short (max_tokens, a stop string) is read by
// ParseCut as its stream reported it: a call cut inside its arguments is a
// call with the arguments so far.
//
// A block's end marker ends it only outside the block's JSON: the JSON
// scanner that checks the arguments also tells which bytes are inside a
// string, where "</tool_call>" is text of an argument (one a forced call's
// schema may require), as a JSON parser reads it.
package toolcall
