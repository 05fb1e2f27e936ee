package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
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

// ChatOptions are the variables a chat template sees besides messages.
type ChatOptions struct {
	// AddGenerationPrompt asks the template to open the assistant's turn.
	AddGenerationPrompt bool
	// Tools is a JSON array of tool definitions, or nil for none.
	Tools json.RawMessage
	// Kwargs are extra template variables such as Qwen3's enable_thinking.
	// Values may be json.RawMessage (decoded keeping key order), a
	// jinja.Value, or plain Go values (bool, string, numbers, nil, []any,
	// map[string]any). They override the variables above, as in Hugging
	// Face's apply_chat_template(**kwargs).
	Kwargs map[string]any
	// Now is the clock of strftime_now; nil means time.Now.
	Now func() time.Time
}

// RenderChat renders a Jinja chat template with messages, the way Hugging
// Face's apply_chat_template does (tokenize=False). The template sees
// messages, tools (none unless set), add_generation_prompt, the Kwargs,
// raise_exception and strftime_now. Set bos_token and eos_token through
// Kwargs, or use (*Tokenizer).RenderChat which does.
func RenderChat(tmpl string, messages []Message, opts ChatOptions) (out string, err error) {
	if tmpl == "" {
		return "", ErrNoChatTemplate
	}
	// The template comes from the model file: a panic in the engine on a
	// strange template is reported as an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			out, err = "", &TemplateError{Stage: "render", Err: fmt.Errorf("template engine panic: %v", r)}
		}
	}()
	t, err := jinja.Compile(normalizeTemplate(tmpl))
	if err != nil {
		return "", &TemplateError{Stage: "compile", Err: err}
	}
	vars := map[string]jinja.Value{
		"add_generation_prompt": jinja.NewBool(opts.AddGenerationPrompt),
		"tools":                 jinja.None(),
		"documents":             jinja.None(),
		"strftime_now":          strftimeNow(opts.Now),
	}
	msgs := make([]jinja.Value, len(messages))
	for i := range messages {
		if msgs[i], err = messages[i].value(); err != nil {
			return "", fmt.Errorf("message %d: %w", i, err)
		}
	}
	vars["messages"] = jinja.NewList(msgs)
	if opts.Tools != nil {
		v, err := jsonValue(opts.Tools)
		if err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
		vars["tools"] = v
	}
	for k, x := range opts.Kwargs {
		v, err := kwargValue(x)
		if err != nil {
			return "", fmt.Errorf("kwarg %s: %w", k, err)
		}
		vars[k] = v
	}
	if out, err = t.RenderValues(vars); err != nil {
		return "", &TemplateError{Stage: "render", Err: err}
	}
	return out, nil
}

func kwargValue(x any) (jinja.Value, error) {
	switch v := x.(type) {
	case json.RawMessage:
		return jsonValue(v)
	case jinja.Value:
		return v, nil
	case int32:
		return jinja.NewInt(int64(v)), nil
	case float32:
		return jinja.NewFloat(float64(v)), nil
	}
	v := jinja.FromGoValue(x)
	if v.IsUndefined() {
		return v, fmt.Errorf("unsupported type %T", x)
	}
	return v, nil
}

// RenderChat renders the model's chat template with bos_token and
// eos_token set from the tokenizer. It returns ErrNoChatTemplate if the
// model has none.
func (t *Tokenizer) RenderChat(messages []Message, opts ChatOptions) (string, error) {
	if t.chatTemplate == "" {
		return "", ErrNoChatTemplate
	}
	kw := make(map[string]any, len(opts.Kwargs)+2)
	if t.hasBOSToken {
		kw["bos_token"] = t.bosToken
	}
	if t.hasEOSToken {
		kw["eos_token"] = t.eosToken
	}
	for k, v := range opts.Kwargs {
		kw[k] = v
	}
	opts.Kwargs = kw
	return RenderChat(t.chatTemplate, messages, opts)
}

// normalizeTemplate prepares template source for the engine: CRLF becomes
// LF, one trailing newline is dropped (Jinja2's keep_trailing_newline=False),
// and the '-' of a tag that directly follows another tag is removed. There
// is no text between the two for it to trim, so this changes nothing in
// Jinja2, but ardanlabs/jinja v1.12.0 would strip the whitespace before the
// preceding {{ }} instead.
func normalizeTemplate(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.TrimSuffix(src, "\n")
	return dropAdjacentTrim(src)
}

// dropAdjacentTrim removes the left-trim marker of every tag that starts
// exactly where the previous tag ended. It skips string literals inside
// tags and the body of {% raw %} blocks.
func dropAdjacentTrim(src string) string {
	var b strings.Builder
	prevEnd := -1
	i := 0
	for i < len(src) {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			break
		}
		p := i + j
		kind := src[p+1]
		if kind != '{' && kind != '%' && kind != '#' {
			b.WriteString(src[i : p+1])
			i = p + 1
			continue
		}
		end := tagEnd(src, p, kind)
		if end < 0 {
			break
		}
		tag := src[p:end]
		if p == prevEnd && len(tag) > 2 && tag[2] == '-' {
			tag = tag[:2] + tag[3:]
		}
		raw := kind == '%' && isRawTag(tag)
		// Jinja2 does not apply trim_blocks to the newline after {% raw %};
		// ardanlabs/jinja does, unless told not to by '+'.
		if n := len(tag); raw && tag[n-3] != '-' && tag[n-3] != '+' {
			tag = tag[:n-2] + "+%}"
		}
		b.WriteString(src[i:p])
		b.WriteString(tag)
		i, prevEnd = end, end
		if raw {
			k := rawBlockEnd(src, end)
			b.WriteString(src[end:k])
			i, prevEnd = k, -1
		}
	}
	b.WriteString(src[i:])
	return b.String()
}

// tagEnd returns the offset just past the tag opened at src[p] ("{{", "{%"
// or "{#"), or -1 if it is not closed.
func tagEnd(src string, p int, kind byte) int {
	closeCh := kind
	if kind == '{' {
		closeCh = '}'
	}
	var quote byte
	for k := p + 2; k+1 < len(src); k++ {
		c := src[k]
		switch {
		case quote != 0:
			if c == '\\' {
				k++
			} else if c == quote {
				quote = 0
			}
		case kind != '#' && (c == '\'' || c == '"'):
			quote = c
		case c == closeCh && src[k+1] == '}':
			return k + 2
		}
	}
	return -1
}

func isRawTag(tag string) bool {
	inner := strings.Trim(tag[2:len(tag)-2], "-+ \t\n")
	return inner == "raw"
}

// rawBlockEnd returns the offset of the {% endraw %} tag that closes a raw
// block whose body starts at i, or len(src).
func rawBlockEnd(src string, i int) int {
	for {
		j := strings.Index(src[i:], "{%")
		if j < 0 {
			return len(src)
		}
		p := i + j
		e := tagEnd(src, p, '%')
		if e < 0 {
			return len(src) // no closed tag is left
		}
		if strings.Trim(src[p+2:e-2], "-+ \t\n") == "endraw" {
			return p
		}
		i = p + 2
	}
}

// strftimeNow is the strftime_now(format) global of Hugging Face chat
// templates, on the given clock.
func strftimeNow(now func() time.Time) jinja.Value {
	if now == nil {
		now = time.Now
	}
	return jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		return jinja.NewString(strftime(args[0].AsString(), now())), nil
	})
}

// strftime formats t with the C/Python directives chat templates use.
func strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case '-':
			// %-d and %-m (glibc): no padding.
			if i+1 < len(format) {
				i++
				switch format[i] {
				case 'd':
					fmt.Fprintf(&b, "%d", t.Day())
				case 'm':
					fmt.Fprintf(&b, "%d", int(t.Month()))
				case 'H':
					fmt.Fprintf(&b, "%d", t.Hour())
				default:
					b.WriteString("%-" + string(format[i]))
				}
			}
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
