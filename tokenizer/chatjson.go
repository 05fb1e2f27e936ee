package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"wasmllm/errcode"
	"wasmllm/tokenizer/internal/jinja"
)

const maxJSONDepth = 256

// ErrJSONTooDeep is the error for a value of the conversation (a message
// field, the tools, a chat_template_kwargs entry) nested deeper than the
// template may be given: the request's fault (bad_request), wrapped with
// where it was.
var ErrJSONTooDeep = errcode.New(errcode.BadRequest, fmt.Sprintf("JSON nested deeper than %d", maxJSONDepth))

// jsonValue converts a JSON document to a template value, keeping object
// keys in document order (Python's json.loads does; tojson then prints them
// in the same order) and integers distinct from floats.
func jsonValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeJSONValue(dec, 0)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > maxJSONDepth {
		return jinja.Undefined(), ErrJSONTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch x := tok.(type) {
	case json.Delim:
		switch x {
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				k, _ := kt.(string)
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k, v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		}
		return jinja.Undefined(), fmt.Errorf("unexpected %v", x)
	case json.Number, string, bool, nil:
		return jinja.FromGoValue(x), nil
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}
