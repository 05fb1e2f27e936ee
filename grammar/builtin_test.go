package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestJSONGBNF checks the json_object grammar: random sentences are JSON
// objects, and hand-picked texts are accepted or rejected as JSON decides.
func TestJSONGBNF(t *testing.T) {
	g, err := Compile(JSONGBNF)
	if err != nil {
		t.Fatal(err)
	}
	anyValue, err := Compile(JSONValueGBNF)
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{`{}`, `{"a":1}`, "{\n  \"a\": [1, 2.5e-3, true, null, {\"b\": \"\\u00e9\\ud83d\\ude00\\n\"}],\n  \"c\": \"日本\"\n}", `{"":-0}`} {
		if off := acceptWhole(g, ok); off >= 0 {
			t.Errorf("%s rejected at %d: %s", ok, off, near(ok, off))
		}
	}
	for _, bad := range []string{`[]`, `1`, `"x"`, `{"a":}`, `{"a":1,}`, `{a:1}`, `{"a":01}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":"\ud800"}`, `{"a":1} {}`, `{"a":.5}`} {
		if acceptWhole(g, bad) < 0 {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, v := range []string{`1`, `"x"`, `[]`, `null`, `-0.5E+3`} {
		if acceptWhole(anyValue, v) >= 0 {
			t.Errorf("any value: %s rejected", v)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; {
		doc, long, err := randomSentence(g, rng, jsonWalk)
		if err != nil {
			t.Fatal(err)
		}
		if long {
			continue
		}
		n++
		var v any
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil || !json.Valid([]byte(doc)) {
			t.Fatalf("generated %q: %v", doc, err)
		}
		if _, ok := v.(map[string]any); !ok {
			t.Fatalf("generated %q, not an object", doc)
		}
	}
	// The rules embed under other names.
	if _, err := Compile("root ::= \"<\" json-value \">\"\n" + JSONValueRules); err != nil {
		t.Fatal(err)
	}
}

// TestChoiceGBNF checks that exactly the choices are sentences.
func TestChoiceGBNF(t *testing.T) {
	choices := []string{"yes", "no", "yes!", "", "maybe \"so\"\n", "日本", "a\\b"}
	src, err := ChoiceGBNF(choices)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Compile(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	for _, c := range choices {
		if off := acceptWhole(g, c); off >= 0 {
			t.Errorf("%q rejected at %d", c, off)
		}
	}
	for _, c := range []string{"ye", "yes!!", "No", "日", "a\\\\b", "maybe \"so\""} {
		if acceptWhole(g, c) < 0 {
			t.Errorf("%q accepted", c)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100; i++ {
		s, _, err := randomSentence(g, rng, textWalk)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range choices {
			found = found || c == s
		}
		if !found {
			t.Fatalf("generated %q, not a choice", s)
		}
	}
	if _, err := ChoiceGBNF(nil); err == nil {
		t.Error("empty list accepted")
	}
	if _, err := ChoiceGBNF([]string{"\xff"}); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}
