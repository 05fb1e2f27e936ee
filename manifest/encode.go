package manifest

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Encode returns m as manifest.json text: one top-level field per line, the
// config indented, and one line per shard and per tensor, so the file reads
// and greps well. It decodes to the same Manifest as json.Marshal's output.
func (m *Manifest) Encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n")
	fields := []struct {
		key    string
		v      any
		indent bool
		omit   bool
	}{
		{"format_version", m.FormatVersion, false, false},
		{"name", m.Name, false, false},
		{"arch", m.Arch, false, false},
		{"quant", m.Quant, false, m.Quant == ""},
		{"config", m.Config, true, false},
		{"tokenizer", m.Tokenizer, false, len(m.Tokenizer) == 0},
		{"chat_template", m.ChatTemplate, false, m.ChatTemplate == ""},
	}
	for _, f := range fields {
		if f.omit {
			continue
		}
		v, err := marshal(f.v, f.indent)
		if err != nil {
			return nil, err
		}
		b.WriteString("  " + strconv.Quote(f.key) + ": ")
		b.Write(v)
		b.WriteString(",\n")
	}
	if err := encodeList(&b, "shards", m.Shards, false); err != nil {
		return nil, err
	}
	if err := encodeList(&b, "tensors", m.Tensors, true); err != nil {
		return nil, err
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

func encodeList[T any](b *bytes.Buffer, key string, items []T, last bool) error {
	b.WriteString("  " + strconv.Quote(key) + ": [")
	for i := range items {
		v, err := marshal(&items[i], false)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(v)
	}
	if len(items) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]")
	if !last {
		b.WriteByte(',')
	}
	b.WriteByte('\n')
	return nil
}

// marshal is json.Marshal without HTML escaping (chat templates are full of
// '<' and '>').
func marshal(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("  ", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
