package api

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"wasmllm/embed"
)

// TestParseEmbeddings: the four input shapes, the options, and errors that
// name their parameter.
func TestParseEmbeddings(t *testing.T) {
	for _, c := range []struct {
		body  string
		n     int
		text  bool
		param string
	}{
		{`{"input":"a"}`, 1, true, ""},
		{`{"input":["a","b"]}`, 2, true, ""},
		{`{"input":[1,2,3]}`, 1, false, ""},
		{`{"input":[[1,2],[3]]}`, 2, false, ""},
		{`{"input":[[1,2],"x"]}`, 2, false, ""},
		{`{}`, 0, false, "input"},
		{`{"input":[]}`, 0, false, "input"},
		{`{"input":[1,"a"]}`, 0, false, "input"},
		{`{"input":[[1.5]]}`, 0, false, "input"},
		{`{"input":[[]]}`, 0, false, "input"},
		{`{"input":[-1]}`, 0, false, "input"},
		{`{"input":{"a":1}}`, 0, false, "input"},
		{`{"input":"a","encoding_format":"hex"}`, 0, false, "encoding_format"},
		{`{"input":"a","dimensions":0}`, 0, false, "dimensions"},
		{`{"input":"a","truncate_prompt_tokens":0}`, 0, false, "truncate_prompt_tokens"},
	} {
		r, err := ParseEmbeddings([]byte(c.body))
		if c.param != "" {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeBadRequest || e.Details["param"] != c.param {
				t.Errorf("%s: %v, want a bad request about %s", c.body, err, c.param)
			}
			continue
		}
		if err != nil || len(r.Inputs) != c.n || r.Inputs[0].IsText != c.text {
			t.Errorf("%s: %+v %v", c.body, r, err)
		}
	}
	r, err := ParseEmbeddings([]byte(`{"model":"m","input":"a","encoding_format":"base64","dimensions":8,"truncate_prompt_tokens":-1}`))
	if err != nil || r.Model != "m" || !r.Base64 || r.Dimensions != 8 || !r.Truncate || r.TruncateTo != 0 {
		t.Errorf("options: %+v %v", r, err)
	}
}

// TestEmbeddingResponse: base64 is the little-endian float32 bytes of the
// normalised vector; usage sums the tokens.
func TestEmbeddingResponse(t *testing.T) {
	res := []embed.Result{{Normalized: []float32{0.6, -0.8}, Tokens: 3}, {Normalized: []float32{1, 0}, Tokens: 2}}
	r := NewEmbeddingResponse(&EmbeddingRequest{Base64: true}, "m", res)
	if r.Object != "list" || r.Model != "m" || r.Usage.PromptTokens != 5 || r.Usage.TotalTokens != 5 || len(r.Data) != 2 {
		t.Fatalf("%+v", r)
	}
	b, err := base64.StdEncoding.DecodeString(r.Data[0].Embedding.(string))
	if err != nil || len(b) != 8 || math.Float32frombits(binary.LittleEndian.Uint32(b[4:])) != -0.8 || r.Data[0].EncodingFormat != "base64" {
		t.Errorf("base64: %v %v", b, err)
	}
	f := NewEmbeddingResponse(&EmbeddingRequest{}, "m", res)
	if v, ok := f.Data[1].Embedding.([]float32); !ok || v[0] != 1 || f.Data[1].Index != 1 {
		t.Errorf("float: %+v", f.Data[1])
	}
}
