package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"
)

// jsonObj is a decoded JSON object that keeps its key order. JSON values
// in the front end are nil, bool, json.Number, string, []any and *jsonObj.
type jsonObj struct {
	keys []string
	vals map[string]any
}

// maxValueDepth bounds the nesting of a decoded JSON document.
const maxValueDepth = 512

// decodeOrdered decodes one JSON document, objects as *jsonObj.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readJSON(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the document")
	}
	return v, nil
}

func readJSON(dec *json.Decoder, depth int) (any, error) {
	if depth > maxValueDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxValueDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &jsonObj{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; dup {
					return nil, fmt.Errorf("duplicate key %q", k)
				}
				o.keys = append(o.keys, k)
				o.vals[k] = v
			}
			_, err := dec.Token()
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := readJSON(dec, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}

// jsonNumRat is a JSON number as an exact rational.
func jsonNumRat(n json.Number) *big.Rat {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil
	}
	return r
}

// jsonEqual is JSON Schema's equality: numbers by value, objects
// regardless of key order.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		rx, ry := jsonNumRat(x), jsonNumRat(y)
		return rx != nil && ry != nil && rx.Cmp(ry) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case *jsonObj:
		y, ok := b.(*jsonObj)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		for _, k := range x.keys {
			yv, ok := y.vals[k]
			if !ok || !jsonEqual(x.vals[k], yv) {
				return false
			}
		}
		return true
	}
	return false
}

// jsonTypeOf is the type bit of a decoded value.
func jsonTypeOf(v any) jsTypes {
	switch x := v.(type) {
	case nil:
		return jtNull
	case bool:
		return jtBool
	case string:
		return jtString
	case json.Number:
		if r := jsonNumRat(x); r != nil && r.IsInt() {
			return jtInt
		}
		return jtFrac
	case []any:
		return jtArray
	case *jsonObj:
		return jtObject
	}
	return 0
}

// jsonStringContent is s as JSON string content, each character in its
// canonical form.
func jsonStringContent(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(jsonEscapeRune(r))
	}
	return b.String()
}

// ptrEscape escapes a JSON pointer token.
func ptrEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
