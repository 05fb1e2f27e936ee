package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"wasmllm/tokenizer"
)

// TemplateMessages prepares OpenAI-shaped history for a chat template the
// way vLLM does before Hugging Face's apply_chat_template: in each
// assistant message with tool_calls, every function.arguments that is a
// JSON string is decoded into the JSON value it holds (an empty string
// becomes {}), and a null or missing content becomes "". Templates written
// for Hugging Face (Qwen's, Llama 3's) expect this: Llama 3's applies
// tojson to the arguments, and Qwen3's prints a string as it is but a
// mapping through tojson, the form its model was trained on. Other
// messages are unchanged, and msgs is not modified.
//
// DeepSeek-R1's template instead concatenates the arguments as a string
// and renders the calls only when content is null; use TemplateMessagesFor,
// which knows that. Errors are *Error naming the message's field.
func TemplateMessages(msgs []tokenizer.Message) ([]tokenizer.Message, error) {
	return rewriteToolCallMessages(msgs, func(ms []member, param string) ([]member, error) {
		ms = setContent(ms, `""`, func(v json.RawMessage) bool { return isNull(v) })
		for k := range ms {
			if ms[k].key != "tool_calls" {
				continue
			}
			v, err := decodeArguments(ms[k].value, param+".tool_calls")
			if err != nil {
				return nil, err
			}
			ms[k].value = v
		}
		return ms, nil
	})
}

// TemplateMessagesFor prepares history for a template of format f: for
// DeepSeekR1 it keeps the arguments as JSON strings and makes the content
// of an assistant message with tool_calls null when it is empty or
// missing (the template renders the calls only then); for Phi4Mini it
// writes the calls into the content as functools[...] (its template
// renders no tool_calls); for the other formats it is TemplateMessages.
func TemplateMessagesFor(f Format, msgs []tokenizer.Message) ([]tokenizer.Message, error) {
	if f == Phi4Mini {
		return phiHistory(msgs)
	}
	if f != DeepSeekR1 {
		return TemplateMessages(msgs)
	}
	return rewriteToolCallMessages(msgs, func(ms []member, _ string) ([]member, error) {
		return setContent(ms, "null", func(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == `""` }), nil
	})
}

// rewriteToolCallMessages copies msgs, passing each assistant message
// with tool_calls through fix as its ordered JSON members.
func rewriteToolCallMessages(msgs []tokenizer.Message, fix func(ms []member, param string) ([]member, error)) ([]tokenizer.Message, error) {
	out := make([]tokenizer.Message, len(msgs))
	copy(out, msgs)
	for i, m := range msgs {
		if m.Role != "assistant" || isNull(extraField(m, "tool_calls")) {
			continue
		}
		param := fmt.Sprintf("messages[%d]", i)
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, errorf(param, err.Error())
		}
		ms, err := objectMembers(raw)
		if err != nil {
			return nil, errorf(param, err.Error())
		}
		if ms, err = fix(ms, param); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(objectJSON(ms), &out[i]); err != nil {
			return nil, errorf(param, err.Error())
		}
	}
	return out, nil
}

func extraField(m tokenizer.Message, key string) json.RawMessage {
	for _, f := range m.Extra {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// setContent sets content to v where it is missing (adding it after role)
// or when replace says so.
func setContent(ms []member, v string, replace func(json.RawMessage) bool) []member {
	for k := range ms {
		if ms[k].key == "content" {
			if replace(ms[k].value) {
				ms[k].value = json.RawMessage(v)
			}
			return ms
		}
	}
	at := 0
	for k := range ms {
		if ms[k].key == "role" {
			at = k + 1
		}
	}
	return append(ms[:at], append([]member{{"content", json.RawMessage(v)}}, ms[at:]...)...)
}

// decodeArguments rewrites a tool_calls array, replacing each
// function.arguments string by the JSON it holds.
func decodeArguments(raw json.RawMessage, param string) (json.RawMessage, error) {
	var calls []json.RawMessage
	if json.Unmarshal(raw, &calls) != nil {
		return nil, errorf(param, "must be an array")
	}
	for j, c := range calls {
		cp := fmt.Sprintf("%s[%d]", param, j)
		call, err := objectMembers(c)
		if err != nil {
			return nil, errorf(cp, "must be an object")
		}
		for k := range call {
			if call[k].key != "function" {
				continue
			}
			fn, err := objectMembers(call[k].value)
			if err != nil {
				return nil, errorf(cp+".function", "must be an object")
			}
			for a := range fn {
				if fn[a].key != "arguments" || !bytes.HasPrefix(bytes.TrimSpace(fn[a].value), []byte(`"`)) {
					continue
				}
				var s string
				if json.Unmarshal(fn[a].value, &s) != nil {
					return nil, errorf(cp+".function.arguments", "must be a string")
				}
				switch {
				case strings.TrimSpace(s) == "":
					fn[a].value = json.RawMessage("{}")
				case json.Valid([]byte(s)):
					fn[a].value = json.RawMessage(s)
				default:
					return nil, errorf(cp+".function.arguments", "is not valid JSON")
				}
			}
			call[k].value = objectJSON(fn)
		}
		calls[j] = objectJSON(call)
	}
	return arrayJSON(calls), nil
}

// member is one key of a JSON object, in document order.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members, in order.
func objectMembers(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{kt.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return ms, nil
}

// arrayJSON joins values into a JSON array.
func arrayJSON(vs []json.RawMessage) json.RawMessage {
	b := []byte{'['}
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, v...)
	}
	return append(b, ']')
}

// objectJSON joins members into a JSON object.
func objectJSON(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
