package api

import (
	"testing"

	"wasmllm/tokenizer"
)

// TestClassifyTemplateErrors: a template's raise_exception is the request's
// fault (bad_request); a template that does not compile or that runs past
// a render limit is the model's (bad_model), with the limit named.
func TestClassifyTemplateErrors(t *testing.T) {
	msgs := []tokenizer.Message{{Role: "user", Content: "hi"}}
	for _, c := range []struct {
		tmpl, code, limit string
	}{
		{`{{ raise_exception("no system role") }}`, CodeBadRequest, ""},
		{`{% for %}`, CodeBadModel, ""},
		{`{% macro f(n) %}{{ f(n+1) }}{% endmacro %}{{ f(0) }}`, CodeBadModel, "max_depth"},
		{`{% for i in range(10**9) %}x{% endfor %}`, CodeBadModel, "max_range"},
	} {
		_, err := tokenizer.RenderChat(c.tmpl, msgs, tokenizer.ChatOptions{})
		e := Classify(err)
		if e.Code != c.code || e.Details["limit"] != c.limit {
			t.Errorf("%s: %s %v (%v), want %s limit %q", c.tmpl, e.Code, e.Details, err, c.code, c.limit)
		}
	}
}
