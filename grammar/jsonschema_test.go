package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaCase is one file of testdata/schemas: a schema with documents it
// accepts and rejects. Documents in valid and invalid are JSON values
// (compacted, key order kept); the *_text lists are exact texts.
type schemaCase struct {
	Schema      json.RawMessage   `json:"schema"`
	Valid       []json.RawMessage `json:"valid"`
	ValidText   []string          `json:"valid_text"`
	Invalid     []json.RawMessage `json:"invalid"`
	InvalidText []string          `json:"invalid_text"`
	// Docs is how many random documents to draw (default 200).
	Docs int `json:"docs"`
	// NoSamples says why engine.TestSchemaSamples does not sample the
	// schema with a model (empty: it does).
	NoSamples string `json:"no_samples"`
}

// validator compiles schema with a real JSON Schema validator, formats
// asserted.
func validator(t *testing.T, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://wasmllm.test/schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("the validator rejects the schema: %v", err)
	}
	return sch
}

// validates reports whether text is one JSON document that sch accepts.
func validates(sch *jsonschema.Schema, text string) error {
	if !utf8.ValidString(text) {
		return errors.New("not UTF-8")
	}
	if !json.Valid([]byte(text)) {
		return errors.New("not JSON")
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

func compileSchema(t *testing.T, schema []byte) *Grammar {
	t.Helper()
	src, err := JSONSchemaGBNF(schema)
	if err != nil {
		t.Fatalf("JSONSchemaGBNF: %v", err)
	}
	g, err := Compile(src)
	if err != nil {
		t.Fatalf("Compile: %v\n%s", err, src)
	}
	return g
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestJSONSchemaSuite checks every schema of testdata/schemas: random
// documents drawn from its grammar all validate, its valid documents are
// accepted whole and its invalid ones rejected.
func TestJSONSchemaSuite(t *testing.T) {
	files, err := filepath.Glob("testdata/schemas/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("only %d schemas in testdata/schemas", len(files))
	}
	for i, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var tc schemaCase
			if err := json.Unmarshal(data, &tc); err != nil {
				t.Fatal(err)
			}
			sch := validator(t, tc.Schema)
			g := compileSchema(t, tc.Schema)
			schema := compact(t, tc.Schema)

			valid := append([]string(nil), tc.ValidText...)
			for _, v := range tc.Valid {
				valid = append(valid, compact(t, v))
			}
			invalid := append([]string(nil), tc.InvalidText...)
			for _, v := range tc.Invalid {
				invalid = append(invalid, compact(t, v))
			}
			if len(valid) == 0 || len(invalid) == 0 {
				t.Fatal("a case needs valid and invalid documents")
			}
			for _, doc := range valid {
				if err := validates(sch, doc); err != nil {
					t.Errorf("test data: %s is listed valid but the validator says: %v", doc, err)
					continue
				}
				if off := acceptWhole(g, doc); off >= 0 {
					t.Errorf("valid document rejected\nschema: %s\ndocument: %s\nstopped at offset %d: %s", schema, doc, off, near(doc, off))
				}
			}
			for _, doc := range invalid {
				if validates(sch, doc) == nil {
					t.Errorf("test data: %s is listed invalid but the validator accepts it", doc)
					continue
				}
				if acceptWhole(g, doc) < 0 {
					t.Errorf("invalid document accepted\nschema: %s\ndocument: %s", schema, doc)
				}
			}

			n := tc.Docs
			if n == 0 {
				n = 200
			}
			rng := rand.New(rand.NewPCG(uint64(i+1), 0x5eed))
			got, long := 0, 0
			distinct := map[string]bool{}
			for got < n {
				doc, tooLong, err := randomSentence(g, rng, jsonWalk)
				if err != nil {
					t.Fatalf("schema: %s\n%v", schema, err)
				}
				if tooLong {
					if long++; long > n {
						t.Fatalf("%d random walks did not end\nschema: %s\nlast: %.300s", long, schema, doc)
					}
					continue
				}
				got++
				distinct[doc] = true
				if err := validates(sch, doc); err != nil {
					t.Fatalf("generated document does not validate\nschema: %s\ndocument: %s\nvalidator: %v", schema, doc, err)
				}
			}
			t.Logf("%d documents (%d distinct), %d walks abandoned", got, len(distinct), long)
		})
	}
}

// TestJSONSchemaErrors checks that unsupported keywords and limits are
// refused with a SchemaError naming the keyword and its pointer.
func TestJSONSchemaErrors(t *testing.T) {
	deep := `{"type":"string"}`
	for i := 0; i < MaxSchemaDepth+2; i++ {
		deep = `{"type":"array","items":` + deep + `}`
	}
	for _, tc := range []struct {
		schema, keyword, pointer string
	}{
		{`{"type":"integer","multipleOf":3}`, "multipleOf", "/multipleOf"},
		{`{"properties":{"a":{"type":"number","multipleOf":2}}}`, "multipleOf", "/properties/a/multipleOf"},
		{`{"type":"array","uniqueItems":true}`, "uniqueItems", "/uniqueItems"},
		{`{"patternProperties":{"^x":{}}}`, "patternProperties", "/patternProperties"},
		{`{"if":{"type":"string"},"then":{"minLength":1}}`, "if", "/if"},
		{`{"not":{"type":"null"}}`, "not", "/not"},
		{`{"type":"object","minProperties":1}`, "minProperties", "/minProperties"},
		{`{"type":"object","maxProperties":1}`, "maxProperties", "/maxProperties"},
		{`{"dependentRequired":{"a":["b"]}}`, "dependentRequired", "/dependentRequired"},
		{`{"dependentSchemas":{"a":{}}}`, "dependentSchemas", "/dependentSchemas"},
		{`{"type":"array","contains":{"type":"integer"}}`, "contains", "/contains"},
		{`{"propertyNames":{"maxLength":3}}`, "propertyNames", "/propertyNames"},
		{`{"unevaluatedProperties":false}`, "unevaluatedProperties", "/unevaluatedProperties"},
		{`{"$ref":"https://example.com/other.json"}`, "$ref", "/$ref"},
		{`{"$ref":"other.json#/a"}`, "$ref", "/$ref"},
		{`{"$ref":"#/$defs/missing"}`, "$ref", "/$ref"},
		{`{"$ref":"#anchor"}`, "$ref", "/$ref"},
		{`{"$dynamicRef":"#node"}`, "$dynamicRef", "/$dynamicRef"},
		{`{"items":{"properties":{"x":{"$id":"https://x/"}}}}`, "$id", "/items/properties/x/$id"},
		{`{"type":"string","format":"hostname"}`, "format", "/format"},
		{`{"type":"string","contentEncoding":"base64"}`, "contentEncoding", "/contentEncoding"},
		{`{"type":"strin"}`, "type", "/type"},
		{`{"type":"string","minLength":-1}`, "minLength", "/minLength"},
		{`{"type":"string","maxLength":1.5}`, "maxLength", "/maxLength"},
		{`{"type":"string","pattern":"(?=a)b"}`, "pattern", "/pattern"},
		{`{"type":"string","pattern":"(a)\\1"}`, "pattern", "/pattern"},
		{`{"oneOf":[{"type":"string"},{"type":"string","minLength":2}]}`, "oneOf", "/oneOf"},
		{`{"properties":{"a":{"oneOf":[{"type":"number"},{"type":"integer"}]}}}`, "oneOf", "/properties/a/oneOf"},
		{`{"allOf":[{"pattern":"a"},{"pattern":"b"}]}`, "pattern", "/allOf/1/pattern"},
		{`{"type":"string","format":"date","pattern":"^2"}`, "format", "/format"},
		{`{"type":"string","pattern":"a","maxLength":5}`, "maxLength", "/maxLength"},
		{`{"enum":[{"a":1}],"properties":{"a":{"type":"integer"}}}`, "enum", "/enum"},
		{`{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`, "", "/$defs/a"},
		{`{"$defs":{"n":{"type":"object","properties":{"n":{"$ref":"#/$defs/n"}},"required":["n"]}},"$ref":"#/$defs/n"}`, "", "/$defs/n"},
		{deep, "", strings.Repeat("/items", MaxSchemaDepth+1)},
		{`{"type":"string","maxLength":1000000000}`, "maxLength", "/maxLength"},
		{`false`, "", ""},
		{`{"type":"integer","minimum":5,"maximum":4}`, "", ""},
		{`{"strict":true}`, "strict", "/strict"},
	} {
		_, err := JSONSchemaGBNF([]byte(tc.schema))
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want a *SchemaError", tc.schema, err)
			continue
		}
		if se.Keyword != tc.keyword || se.Pointer != tc.pointer {
			t.Errorf("%s: got keyword %q at %q (%v), want %q at %q", tc.schema, se.Keyword, se.Pointer, err, tc.keyword, tc.pointer)
		}
		if tc.keyword != "" && !strings.Contains(se.Error(), tc.keyword) || !strings.Contains(se.Error(), "#"+tc.pointer) {
			t.Errorf("%s: message %q names neither the keyword nor the pointer", tc.schema, se.Error())
		}
	}
	// A schema whose grammar would pass the size limit.
	var props []string
	for i := 0; i < 4000; i++ {
		props = append(props, `"`+strings.Repeat("p", 100)+strconv.Itoa(i)+`":{"type":"integer","minimum":-123456789,"maximum":987654321}`)
	}
	_, err := JSONSchemaGBNF([]byte(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`))
	var se *SchemaError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "exceed") {
		t.Errorf("huge schema: got %v, want a size SchemaError", err)
	}
	if _, err := JSONSchemaGBNF([]byte(`{"type":`)); !errors.As(err, &se) {
		t.Errorf("broken JSON: got %v, want a SchemaError", err)
	}
}

// TestJSONSchemaRulesEmbed embeds two schemas under different prefixes in
// one grammar, the way a tool-call grammar does.
func TestJSONSchemaRulesEmbed(t *testing.T) {
	a, rootA, err := JSONSchemaRules([]byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`), "get-weather-")
	if err != nil {
		t.Fatal(err)
	}
	b, rootB, err := JSONSchemaRules([]byte(`{"type":"array","items":{"type":"integer","minimum":0,"maximum":9},"maxItems":2}`), "sum-")
	if err != nil {
		t.Fatal(err)
	}
	if rootA != "get-weather-root" || rootB != "sum-root" {
		t.Fatalf("roots %q, %q", rootA, rootB)
	}
	for _, rules := range []string{a, b} {
		for _, line := range strings.Split(strings.TrimSpace(rules), "\n") {
			if !strings.HasPrefix(line, "get-weather-") && !strings.HasPrefix(line, "sum-") {
				t.Errorf("rule without its prefix: %s", line)
			}
		}
	}
	src := `root ::= "weather " ` + rootA + ` | "sum " ` + rootB + "\n" + a + b
	g, err := Compile(src)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	for _, ok := range []string{`weather {"city":"Oslo"}`, `sum [1, 9]`, `sum []`} {
		if off := acceptWhole(g, ok); off >= 0 {
			t.Errorf("%s rejected at %d", ok, off)
		}
	}
	for _, bad := range []string{`weather {"city":1}`, `sum [10]`, `sum [1,2,3]`, `weather [1]`} {
		if acceptWhole(g, bad) < 0 {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, _, err := JSONSchemaRules([]byte(`{}`), "bad prefix"); err == nil {
		t.Error("a prefix with a space was accepted")
	}
}

// TestJSONSchemaIntegerRanges checks integer ranges exhaustively around
// their bounds, for many bound pairs.
func TestJSONSchemaIntegerRanges(t *testing.T) {
	bounds := []string{"", "-1000", "-123", "-100", "-99", "-10", "-7", "-1", "0", "1", "9", "10", "99", "100", "123", "999", "1000", "2147483647"}
	for _, lo := range bounds {
		for _, hi := range bounds {
			for _, excl := range []bool{false, true} {
				minKw, maxKw := "minimum", "maximum"
				if excl {
					minKw, maxKw = "exclusiveMinimum", "exclusiveMaximum"
				}
				var kws []string
				if lo != "" {
					kws = append(kws, `"`+minKw+`":`+lo)
				}
				if hi != "" {
					kws = append(kws, `"`+maxKw+`":`+hi)
				}
				schema := `{"type":"integer"` + strings.Join(append([]string{""}, kws...), ",") + `}`
				src, err := JSONSchemaGBNF([]byte(schema))
				if err != nil {
					var se *SchemaError
					if errors.As(err, &se) && strings.Contains(se.Msg, "no JSON value") {
						continue
					}
					t.Fatalf("%s: %v", schema, err)
				}
				g, err := Compile(src)
				if err != nil {
					t.Fatalf("%s: %v", schema, err)
				}
				sch := validator(t, []byte(schema))
				var probes []int64
				for _, b := range bounds {
					if b == "" {
						continue
					}
					var v int64
					json.Unmarshal([]byte(b), &v)
					for d := int64(-2); d <= 2; d++ {
						probes = append(probes, v+d)
					}
				}
				for _, v := range probes {
					doc, _ := json.Marshal(v)
					want := validates(sch, string(doc)) == nil
					if got := acceptWhole(g, string(doc)) < 0; got != want {
						t.Errorf("%s: %d accepted=%v, validator=%v", schema, v, got, want)
					}
				}
			}
		}
	}
}

// TestJSONSchemaDecimalRanges checks number ranges with decimal bounds on
// probes around them.
func TestJSONSchemaDecimalRanges(t *testing.T) {
	bounds := []string{"", "-10.5", "-1", "-0.25", "0", "0.5", "0.05", "1", "2.75", "10", "12.125"}
	probes := []string{"-11", "-10.6", "-10.5", "-10.50", "-10.4", "-10", "-1.01", "-1", "-1.0", "-0.99", "-0.3", "-0.25", "-0.250",
		"-0.2", "-0.01", "0", "0.0", "0.00", "0.01", "0.04", "0.05", "0.0500", "0.051", "0.49", "0.5", "0.50", "0.51", "0.9",
		"1", "1.0", "1.00001", "2", "2.7", "2.75", "2.750", "2.751", "3", "9.99", "10", "10.0", "10.000", "10.001", "11",
		"12", "12.12", "12.125", "12.1250", "12.1251", "13", "100"}
	for _, lo := range bounds {
		for _, hi := range bounds {
			for _, mode := range []int{0, 1, 2, 3} {
				minKw, maxKw := "minimum", "maximum"
				if mode&1 != 0 {
					minKw = "exclusiveMinimum"
				}
				if mode&2 != 0 {
					maxKw = "exclusiveMaximum"
				}
				kws := []string{`"type":"number"`}
				if lo != "" {
					kws = append(kws, `"`+minKw+`":`+lo)
				}
				if hi != "" {
					kws = append(kws, `"`+maxKw+`":`+hi)
				}
				schema := "{" + strings.Join(kws, ",") + "}"
				src, err := JSONSchemaGBNF([]byte(schema))
				if err != nil {
					var se *SchemaError
					if errors.As(err, &se) && strings.Contains(se.Msg, "no JSON value") {
						continue
					}
					t.Fatalf("%s: %v", schema, err)
				}
				g, err := Compile(src)
				if err != nil {
					t.Fatalf("%s: %v", schema, err)
				}
				sch := validator(t, []byte(schema))
				for _, p := range probes {
					want := validates(sch, p) == nil
					if got := acceptWhole(g, p) < 0; got != want {
						t.Errorf("%s: %s accepted=%v, validator=%v", schema, p, got, want)
					}
				}
			}
		}
	}
}
