package toolcall

import (
	"encoding/json"
	"strings"

	"wasmllm/tokenizer"
)

// Phi-4-mini's tools and calls in its chat template's terms: the template
// renders a system message's "tools" string between <|tool|> and
// <|/tool|>, and no tool_calls at all.

// PhiSystemTools gives the system message of msgs the request's tools
// (OpenAI's tools array, raw) as Phi-4-mini's template reads them: its
// "tools" key, a JSON string of the functions [{"name", "description",
// "parameters"}, ...], as Microsoft's examples pass them. Without a
// system message one with empty content is put first. msgs is not
// modified. Errors are *Error naming tools.
func PhiSystemTools(msgs []tokenizer.Message, tools json.RawMessage) ([]tokenizer.Message, error) {
	ts, err := ParseTools(tools)
	if err != nil || len(ts) == 0 {
		return msgs, err
	}
	type fn struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	fns := make([]fn, len(ts))
	for i, t := range ts {
		fns[i] = fn{t.Name, t.Description, t.Parameters}
	}
	var list, str strings.Builder
	enc := json.NewEncoder(&list)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fns); err != nil {
		return nil, errorf("tools", err.Error())
	}
	enc = json.NewEncoder(&str)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(strings.TrimSuffix(list.String(), "\n")); err != nil {
		return nil, errorf("tools", err.Error())
	}
	value := json.RawMessage(strings.TrimSuffix(str.String(), "\n"))
	out := make([]tokenizer.Message, 0, len(msgs)+1)
	if len(msgs) == 0 || msgs[0].Role != "system" {
		var sys tokenizer.Message
		if err := json.Unmarshal([]byte(`{"role": "system", "content": "", "tools": `+string(value)+`}`), &sys); err != nil {
			return nil, errorf("tools", err.Error())
		}
		return append(append(out, sys), msgs...), nil
	}
	raw, err := json.Marshal(msgs[0])
	if err != nil {
		return nil, errorf("messages[0]", err.Error())
	}
	ms, err := objectMembers(raw)
	if err != nil {
		return nil, errorf("messages[0]", err.Error())
	}
	replaced := false
	for i := range ms {
		if ms[i].key == "tools" {
			ms[i].value, replaced = value, true
		}
	}
	if !replaced {
		ms = append(ms, member{key: "tools", value: value})
	}
	var sys tokenizer.Message
	if err := json.Unmarshal(objectJSON(ms), &sys); err != nil {
		return nil, errorf("messages[0]", err.Error())
	}
	return append(append(out, sys), msgs[1:]...), nil
}

// phiHistory rewrites each assistant message with tool_calls for
// Phi-4-mini's template, which renders content only: the calls are
// appended to its content as the model writes them,
// functools[{"name": NAME, "arguments": ARGS}, ...].
func phiHistory(msgs []tokenizer.Message) ([]tokenizer.Message, error) {
	return rewriteToolCallMessages(msgs, func(ms []member, param string) ([]member, error) {
		var content string
		var calls json.RawMessage
		kept := ms[:0:0]
		for _, m := range ms {
			switch m.key {
			case "tool_calls":
				calls = m.value
				continue
			case "content":
				if !isNull(m.value) && json.Unmarshal(m.value, &content) != nil {
					return nil, errorf(param+".content", "must be a string with tool_calls")
				}
			}
			kept = append(kept, m)
		}
		text, err := phiCalls(calls, param+".tool_calls")
		if err != nil {
			return nil, err
		}
		if content != "" {
			text = content + " " + text
		}
		return setContent(kept, jsonString(text), func(json.RawMessage) bool { return true }), nil
	})
}

// phiCalls writes an OpenAI tool_calls array as Phi-4-mini writes calls.
func phiCalls(raw json.RawMessage, param string) (string, error) {
	decoded, err := decodeArguments(raw, param)
	if err != nil {
		return "", err
	}
	var calls []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(decoded, &calls); err != nil {
		return "", errorf(param, err.Error())
	}
	parts := make([]string, len(calls))
	for j, c := range calls {
		args := c.Function.Arguments
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		parts[j] = `{"name": ` + jsonString(c.Function.Name) + `, "arguments": ` + string(args) + `}`
	}
	return phiOpen + strings.Join(parts, ", ") + "]", nil
}

// jsonString is s as a JSON string, HTML characters unescaped.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
