package toolcall

// replyCase is a reply and what Parse must make of it.
type replyCase struct {
	name    string
	f       Format
	text    string
	content string
	calls   []Call // IDs are not compared
}

func call(name, args string) Call { return Call{Name: name, Arguments: args} }

const (
	dsBegin = "<｜tool▁calls▁begin｜>"
	dsEnd   = "<｜tool▁calls▁end｜>"
	dsCall  = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>"
	dsCEnd  = "<｜tool▁call▁end｜>"
)

var replyCases = []replyCase{
	// Hermes
	{"hermes/text", Hermes, "Hello there.", "Hello there.", nil},
	{"hermes/text with spaces", Hermes, "  Hi <b>x</b> a<tool_c \n", "  Hi <b>x</b> a<tool_c \n", nil},
	{"hermes/one call", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
		"", []Call{call("get_weather", `{"city": "Paris"}`)}},
	{"hermes/text and two calls", Hermes, "Let me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, 2.5e3, -0, true, null]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>\nDone.\n",
		"Let me check.\n\n\nDone.", []Call{call("a", `{"x": [1, 2.5e3, -0, true, null]}`), call("b", `{}`)}},
	{"hermes/unclosed at end", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"a<b>{}\\\"\\u00e9\"}}\n",
		"", []Call{call("f", `{"q": "a<b>{}\"\u00e9"}`)}},
	{"hermes/parameters key", Hermes, "<tool_call>{\"name\":\"f\",\"parameters\":{\"k\":\"v\"}}</tool_call>", "", []Call{call("f", `{"k":"v"}`)}},
	{"hermes/no arguments", Hermes, "<tool_call>\n{\"name\": \"now\"}\n</tool_call>", "", []Call{call("now", `{}`)}},
	{"hermes/extra member", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": [1]}\n</tool_call>", "", []Call{call("f", `{"a": 1}`)}},
	{"hermes/unicode", Hermes, "Voilà ✓ <tool_call>\n{\"name\": \"f\", \"arguments\": {\"ville\": \"Zürich 東京\"}}\n</tool_call>", "Voilà ✓", []Call{call("f", `{"ville": "Zürich 東京"}`)}},
	{"hermes/thinking first", Hermes, "<think>\nThe user wants weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": \"P\"}}\n</tool_call>",
		"<think>\nThe user wants weather.\n</think>", []Call{call("w", `{"c": "P"}`)}},
	{"hermes/bad json", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>",
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }}\n</tool_call>", nil},
	{"hermes/bad then good", Hermes, "<tool_call>\nnot json\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>",
		"<tool_call>\nnot json\n</tool_call>", []Call{call("g", `{}`)}},
	{"hermes/good then bad", Hermes, "<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"\", \"arguments\": {}}\n</tool_call>",
		"<tool_call>\n{\"name\": \"\", \"arguments\": {}}\n</tool_call>", []Call{call("g", `{}`)}},
	{"hermes/string arguments", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{}\"}\n</tool_call>", "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{}\"}\n</tool_call>", nil},
	{"hermes/junk after object", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}} x\n</tool_call>", "<tool_call>\n{\"name\": \"f\", \"arguments\": {}} x\n</tool_call>", nil},
	{"hermes/arguments first", Hermes, "<tool_call>\n{\"arguments\": {}, \"name\": \"f\"}\n</tool_call>", "<tool_call>\n{\"arguments\": {}, \"name\": \"f\"}\n</tool_call>", nil},
	{"hermes/truncated", Hermes, "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"b", "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"b", nil},
	{"hermes/marker alone", Hermes, "x <tool_call>", "x <tool_call>", nil},
	{"hermes/close marker in string", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": \"</tool_call>\"}}\n</tool_call>",
		"", []Call{call("f", `{"s": "</tool_call>"}`)}},
	{"hermes/close marker in strings", Hermes, "a<tool_call>\n{\"name\": \"f\", \"arguments\": {\"ok</tool_call>\": [\"\\\"</tool_call>tail\"]}, \"x\": \"</tool_call>\"}\n</tool_call>b",
		"ab", []Call{call("f", `{"ok</tool_call>": ["\"</tool_call>tail"]}`)}},
	{"hermes/close marker after nesting", Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [[[{\"b\": [[]]}]]], \"s\": \"</tool_call>\"}}</tool_call>",
		"", []Call{call("f", `{"a": [[[{"b": [[]]}]]], "s": "</tool_call>"}`)}},
	{"hermes/cut in close marker", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool", "", []Call{call("f", `{"a": 1}`)}},
	{"deepseek/cut in call end", DeepSeekR1, dsBegin + dsCall + "f\n```json\n{}\n```" + dsCEnd[:5], "", []Call{call("f", `{}`)}},
	{"hermes/close marker in bad json", Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": x\"</tool_call>\"}}\n</tool_call><tool_call>{\"name\": \"g\"}</tool_call>",
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"s\": x\"</tool_call>\"}}\n</tool_call>", []Call{call("g", `{}`)}},
	{"hermes/close marker in not json", Hermes, "<tool_call>\"</tool_call>\"", "<tool_call>\"</tool_call>\"", nil},
	{"hermes/nested open", Hermes, "<tool_call><tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "<tool_call><tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", nil},
	{"hermes/stray close", Hermes, "a </tool_call> b", "a </tool_call> b", nil},
	{"hermes/leading space then call", Hermes, " \n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call> \n", "", []Call{call("f", `{}`)}},
	{"hermes/escaped name", Hermes, "<tool_call>{\"name\": \"a\\u005fb\", \"arguments\": {\"n\": 1e-2}}</tool_call>", "", []Call{call("a_b", `{"n": 1e-2}`)}},

	// Llama 3
	{"llama/call", Llama3JSON, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", []Call{call("get_weather", `{"city": "Paris"}`)}},
	{"llama/python tag", Llama3JSON, "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"a\": {\"b\": []}}}", "", []Call{call("f", `{"a": {"b": []}}`)}},
	{"llama/leading space", Llama3JSON, "\n {\"name\": \"f\", \"parameters\": {}} \n", "", []Call{call("f", `{}`)}},
	{"llama/two calls", Llama3JSON, "{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": {\"y\": 2}}",
		"", []Call{call("a", `{"x": 1}`), call("b", `{"y": 2}`)}},
	{"llama/call then text", Llama3JSON, "{\"name\": \"a\", \"parameters\": {}}\nThat is all.", "That is all.", []Call{call("a", `{}`)}},
	{"llama/type first", Llama3JSON, "{\"type\": \"function\", \"name\": \"f\", \"parameters\": {\"a\": 1}}", "", []Call{call("f", `{"a": 1}`)}},
	{"llama/other type", Llama3JSON, "{\"type\": \"object\", \"name\": \"f\", \"parameters\": {}}", "{\"type\": \"object\", \"name\": \"f\", \"parameters\": {}}", nil},
	{"hermes/type first", Hermes, "<tool_call>\n{\"type\":\"function\",\"name\":\"f\",\"arguments\":{}}\n</tool_call>", "", []Call{call("f", `{}`)}},
	{"llama/no arguments", Llama3JSON, "{\"name\": \"a\"}", "", []Call{call("a", `{}`)}},
	{"llama/text", Llama3JSON, "The answer is {\"name\": \"x\"}.", "The answer is {\"name\": \"x\"}.", nil},
	{"llama/json answer", Llama3JSON, "{\"city\": \"Paris\", \"name\": \"f\"}", "{\"city\": \"Paris\", \"name\": \"f\"}", nil},
	{"llama/name but not a call", Llama3JSON, "{\"name\": \"Bob\", \"age\": 3}", "{\"name\": \"Bob\", \"age\": 3}", nil},
	{"llama/truncated", Llama3JSON, "{\"name\": \"f\", \"parameters\": {\"a\": 1", "{\"name\": \"f\", \"parameters\": {\"a\": 1", nil},
	{"llama/python code", Llama3JSON, "<|python_tag|>print(1)", "<|python_tag|>print(1)", nil},
	{"llama/bad second call", Llama3JSON, "{\"name\": \"a\", \"parameters\": {}}; {oops", "; {oops", []Call{call("a", `{}`)}},
	{"llama/semicolon text", Llama3JSON, "{\"name\": \"a\", \"parameters\": {}};", ";", []Call{call("a", `{}`)}},
	{"llama/brace only", Llama3JSON, "{", "{", nil},
	{"llama/partial tag", Llama3JSON, "<|pyt", "<|pyt", nil},

	// DeepSeek
	{"deepseek/call", DeepSeekR1, dsBegin + dsCall + "get_weather\n```json\n{\"city\": \"Paris\"}\n```" + dsCEnd + dsEnd,
		"", []Call{call("get_weather", `{"city": "Paris"}`)}},
	{"deepseek/two calls", DeepSeekR1, "Checking." + dsBegin + dsCall + "a\n```json\n{\"x\": 1}\n```" + dsCEnd + "\n" + dsCall + "b\n```json\n{\n  \"y\": [2]\n}\n```" + dsCEnd + dsEnd,
		"Checking.", []Call{call("a", `{"x": 1}`), call("b", "{\n  \"y\": [2]\n}")}},
	{"deepseek/no section end", DeepSeekR1, dsBegin + dsCall + "f\n```json\n{}\n```" + dsCEnd, "", []Call{call("f", `{}`)}},
	{"deepseek/no call end", DeepSeekR1, dsBegin + dsCall + "f\n```json\n{}\n```", "", []Call{call("f", `{}`)}},
	{"deepseek/section end closes call", DeepSeekR1, dsBegin + dsCall + "f\n```json\n{}\n```" + dsEnd, "", []Call{call("f", `{}`)}},
	{"deepseek/no section", DeepSeekR1, "</think>\n\n" + dsCall + "f\n```\n{\"a\": \"b\"}\n```" + dsCEnd, "</think>", []Call{call("f", `{"a": "b"}`)}},
	{"deepseek/text", DeepSeekR1, "Plain <｜tool answer.", "Plain <｜tool answer.", nil},
	{"deepseek/end markers in string", DeepSeekR1, dsBegin + dsCall + "f\n```json\n{\"a\": \"" + dsCEnd + dsEnd + "\"}\n```" + dsCEnd + dsEnd,
		"", []Call{call("f", `{"a": "`+dsCEnd+dsEnd+`"}`)}},
	{"deepseek/bad json", DeepSeekR1, dsBegin + dsCall + "f\n```json\n{\"a\": nul}\n```" + dsCEnd + dsEnd,
		dsBegin + dsCall + "f\n```json\n{\"a\": nul}\n```" + dsCEnd + dsEnd, nil},
	{"deepseek/junk section", DeepSeekR1, dsBegin + "garbage" + dsEnd, dsBegin + "garbage" + dsEnd, nil},
	{"deepseek/empty section", DeepSeekR1, "x" + dsBegin + "\n" + dsEnd, "x" + dsBegin + "\n" + dsEnd, nil},
	{"deepseek/no fence end", DeepSeekR1, dsBegin + dsCall + "f\n```json\n{}\n" + dsCEnd + dsEnd, dsBegin + dsCall + "f\n```json\n{}\n" + dsCEnd + dsEnd, nil},
	{"deepseek/bad then good", DeepSeekR1, dsBegin + dsCall + "f\nnope" + dsCEnd + "\n" + dsCall + "g\n```json\n{}\n```" + dsCEnd + dsEnd,
		dsBegin + dsCall + "f\nnope" + dsCEnd, []Call{call("g", `{}`)}},

	// None
	{"none/markers", None, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", nil},
}

// lateFailures are the replies whose one malformed call goes wrong only
// after its name and the start of its arguments: streamed in pieces, the
// call has been announced by then (see StreamParser), so only Parse's
// result is checked for them, and the stream's deltas for their shape.
var lateFailures = map[string]bool{
	"hermes/bad json":                 true,
	"hermes/junk after object":        true,
	"hermes/truncated":                true,
	"hermes/close marker in bad json": true,
	"llama/truncated":                 true,
	"deepseek/bad json":               true,
	"deepseek/no fence end":           true,
}
