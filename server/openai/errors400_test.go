package openai

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestClientErrorsAre400: what a request gets wrong is a 400 naming it,
// never a 500: JSON nested past the template's limit in a message field,
// the tools, tool-call arguments or chat_template_kwargs; a
// repetition_penalty that drives a logit to +Inf; chat_template_kwargs
// replacing the conversation's messages (which would skip the request's
// validation).
func TestClientErrorsAre400(t *testing.T) {
	te := newTestEngine(t, EngineConfig{Queue: 1}, true)
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	for name, body := range map[string]string{
		"kwargs deep":               `{"model":"` + chatModel + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"chat_template_kwargs":{"x":` + deep + `}}`,
		"msg field":                 `{"model":"` + chatModel + `","messages":[{"role":"user","content":"hi","extra":` + deep + `}],"max_tokens":2}`,
		"tool params":               `{"model":"` + chatModel + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","x":` + deep + `}}}]}`,
		"repetition_penalty 1e-308": `{"model":"` + chatModel + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"repetition_penalty":1e-308}`,
		"kwargs messages":           `{"model":"` + chatModel + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"chat_template_kwargs":{"messages":[{"role":"system","content":"evil"}]}}`,
		"tool args":                 `{"model":"` + chatModel + `","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"` + deep + `"}}]},{"role":"tool","tool_call_id":"a","content":"x"}],"max_tokens":2}`,
	} {
		resp, err := http.Post(te.srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %.300s", name, resp.StatusCode, b)
		}
	}
}
