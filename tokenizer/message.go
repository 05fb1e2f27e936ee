package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"wasmllm/tokenizer/internal/jinja"
)

// Message is one chat message. Role and Content are the common fields;
// Extra holds any other keys (tool_calls, tool_call_id, name,
// reasoning_content...) as JSON values. A Message decoded from JSON keeps
// its keys in their order, and a content that is not a string (null, or a
// list of parts) as it was.
type Message struct {
	Role    string
	Content string
	Extra   []Field

	keys       []string        // key order when decoded from JSON
	rawContent json.RawMessage // content that is not a string
}

// Field is one extra message key with its JSON value.
type Field struct {
	Key   string
	Value json.RawMessage
}

// UnmarshalJSON decodes a message object, keeping its key order.
func (m *Message) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("message is not a JSON object")
	}
	*m = Message{keys: []string{}}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		m.keys = append(m.keys, k)
		switch k {
		case "role":
			if err := json.Unmarshal(raw, &m.Role); err != nil {
				return fmt.Errorf("message role: %w", err)
			}
		case "content":
			if raw[0] == '"' {
				if err := json.Unmarshal(raw, &m.Content); err != nil {
					return err
				}
			} else {
				m.rawContent = raw
			}
		default:
			m.Extra = append(m.Extra, Field{k, raw})
		}
	}
	return nil
}

// MarshalJSON encodes the message with its keys in order.
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.order() {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		v, err := m.rawField(k)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (m *Message) order() []string {
	if m.keys != nil {
		return m.keys
	}
	keys := []string{"role", "content"}
	for _, f := range m.Extra {
		keys = append(keys, f.Key)
	}
	return keys
}

func (m *Message) rawField(k string) (json.RawMessage, error) {
	switch k {
	case "role":
		return json.Marshal(m.Role)
	case "content":
		if m.rawContent != nil {
			return m.rawContent, nil
		}
		return json.Marshal(m.Content)
	}
	for _, f := range m.Extra {
		if f.Key == k {
			return f.Value, nil
		}
	}
	return nil, fmt.Errorf("message has no field %q", k)
}

func (m *Message) value() (jinja.Value, error) {
	d := jinja.NewDict()
	for _, k := range m.order() {
		var v jinja.Value
		switch {
		case k == "role":
			v = jinja.NewString(m.Role)
		case k == "content" && m.rawContent == nil:
			v = jinja.NewString(m.Content)
		default:
			raw, err := m.rawField(k)
			if err != nil {
				return v, err
			}
			if v, err = jsonValue(raw); err != nil {
				return v, fmt.Errorf("message field %s: %w", k, err)
			}
		}
		d.AsDict().Set(k, v)
	}
	return d, nil
}
