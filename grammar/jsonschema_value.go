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

// Numbers are compared and bounded as exact rationals: 1e1000000 takes
// 0.1 s and 400 KB to make one, so a number's digits and exponent are
// bounded (1e1000 takes 0.1 ms).
const (
	maxNumberBytes    = 1000
	maxNumberExponent = 1000
)

// checkNumber refuses a number too large to work with exactly.
func checkNumber(n json.Number) error {
	s := string(n)
	if len(s) > maxNumberBytes {
		return fmt.Errorf("a number of %d characters (over %d)", len(s), maxNumberBytes)
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp := strings.TrimLeft(s[i+1:], "+-")
		exp = strings.TrimLeft(exp, "0")
		if len(exp) > 4 || len(exp) == 4 && exp > "1000" {
			return fmt.Errorf("number %s has an exponent over %d", clip(s), maxNumberExponent)
		}
	}
	return nil
}

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
					return nil, fmt.Errorf("duplicate key %q", clip(k))
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
	case json.Number:
		if err := checkNumber(t); err != nil {
			return nil, err
		}
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
		if plainInt(x) && plainInt(y) {
			return x == y // one way to write each (no leading zeros), -0 aside
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

// plainInt reports a JSON number written as an integer, with no fraction
// or exponent, other than -0: two such are equal exactly when they are
// written the same, with no rational to make.
func plainInt(n json.Number) bool {
	return n != "-0" && !strings.ContainsAny(string(n), ".eE")
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
		if plainInt(x) {
			return jtInt
		}
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
