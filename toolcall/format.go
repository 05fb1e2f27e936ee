package toolcall

import (
	"strconv"
	"strings"
)

// Format is a model family's tool-call syntax.
type Format int

const (
	// None: the chat template teaches no tool-call syntax. Replies are
	// all content, and a call cannot be forced.
	None Format = iota
	// Hermes is the syntax of Hermes, Qwen2.5 and Qwen3: one or more
	//	<tool_call>
	//	{"name": "NAME", "arguments": {...}}
	//	</tool_call>
	// blocks, possibly with text around them.
	Hermes
	// Llama3JSON is the syntax of Llama 3.1, 3.2 and 3.3: the reply is
	// one JSON object {"name": "NAME", "parameters": {...}} ("arguments"
	// is accepted too, and a leading "type": "function"), optionally
	// after <|python_tag|>; further calls may follow it separated by ';',
	// as vLLM accepts. Only a reply that starts so is a call.
	Llama3JSON
	// DeepSeekR1 is the syntax of DeepSeek-V3, -R1 and the R1 distills:
	//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
	//	```json
	//	{...}
	//	```<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
	DeepSeekR1
	// Phi4Mini is Phi-4-mini's (vLLM's phi4_mini_json): one
	//	functools[{"name": "NAME", "arguments": {...}}, ...]
	// list of call objects ("parameters" is accepted too), possibly after
	// text. Its template takes the tools as a JSON string in the system
	// message's "tools" (PhiSystemTools).
	Phi4Mini
)

// lastFormat is the last Format.
const lastFormat = Phi4Mini

// bare reports whether f's call objects end by their own syntax, with no
// end marker (Llama 3's, Phi-4-mini's in their list).
func (f Format) bare() bool { return f == Llama3JSON || f == Phi4Mini }

// The markers of each format. The DeepSeek ones are single tokens whose
// text uses U+FF5C (｜) and U+2581 (▁).
const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"

	pythonTag = "<|python_tag|>"

	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsSep        = "<｜tool▁sep｜>"

	phiOpen = "functools["
	phiTool = "<|tool|>" // Phi-4-mini's template: the tools' JSON between these
	phiEnd  = "<|/tool|>"
)

// String returns the format's name.
func (f Format) String() string {
	switch f {
	case None:
		return "none"
	case Hermes:
		return "hermes"
	case Llama3JSON:
		return "llama3_json"
	case DeepSeekR1:
		return "deepseek_r1"
	case Phi4Mini:
		return "phi4_mini_json"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// Detect returns the tool-call format a chat template teaches, from the
// markers in its text: DeepSeek's <｜tool▁calls▁begin｜> with its fenced
// ```json arguments, Hermes' <tool_call>, or Llama 3.1's instruction to
// answer with {"name": function name, "parameters": ...} (or its
// <|python_tag|> in a Llama-3 header template), or Phi-4-mini's system
// message tools between <|tool|> and <|/tool|>. Look-alikes this package
// cannot read are None: Qwen3-Coder's XML calls (<tool_call> with
// <function=...>) and DeepSeek-V3.1's (no fence). Anything else is None.
func Detect(chatTemplate string) Format {
	has := func(s string) bool { return strings.Contains(chatTemplate, s) }
	switch {
	case has(dsCallsBegin):
		if has("```json") {
			return DeepSeekR1
		}
		return None
	case has(hermesOpen):
		if has("<function=") {
			return None
		}
		return Hermes
	case has(`"parameters": dictionary of argument name`), has(pythonTag) && has("<|start_header_id|>"):
		return Llama3JSON
	case has(phiTool) && has(phiEnd):
		return Phi4Mini
	}
	return None
}
