package api

import (
	"errors"
	"testing"

	"wasmllm/engine"
)

// TestSpeculativeParam: the "speculative" object reaches the engine's
// request; a malformed one is a bad request naming it; the engine's usage
// counts go into usage.
func TestSpeculativeParam(t *testing.T) {
	r, err := ParseCompletion([]byte(`{"prompt":"x","speculative":{"method":"mtp","num_tokens":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	if sp := r.Engine.Speculative; sp == nil || sp.Method != "mtp" || sp.NumTokens != 3 {
		t.Fatalf("speculative %+v", sp)
	}
	if r, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"x"}]}`)); err != nil || r.Engine.Speculative != nil {
		t.Fatalf("no speculative key: %+v, %v", r.Engine.Speculative, err)
	}
	_, err = ParseCompletion([]byte(`{"prompt":"x","speculative":{"num_tokens":"3"}}`))
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != CodeBadRequest || ae.Details["param"] != "speculative" {
		t.Errorf("malformed speculative: %v", err)
	}
	u := UsageOf(engine.Usage{CompletionTokens: 9, DraftedTokens: 8, AcceptedTokens: 5})
	if u.DraftedTokens != 8 || u.AcceptedTokens != 5 {
		t.Errorf("usage %+v", u)
	}
}
