package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"wasmllm/grammar"
)

// Kinds of structured-output constraint.
const (
	ConstraintJSONObject = "json_object" // any JSON object
	ConstraintJSONSchema = "json_schema" // JSON valid for a JSON Schema
	ConstraintRegex      = "regex"       // text a regular expression fully matches
	ConstraintChoice     = "choice"      // exactly one of some strings
	ConstraintGrammar    = "grammar"     // a sentence of a GBNF grammar
)

// Constraint is a request's structured-output constraint: OpenAI's and
// WebLLM's response_format, or vLLM's guided_* and structured_outputs.
//
// Parsing checks its fields' shapes and sizes (MaxConstraintBytes), which
// is cheap; the compile (the front end, then the grammar) can take up to
// a fraction of a second and tens of megabytes, so it waits until the
// request is admitted to run: Request.CompileConstraint, which Prepare
// calls, under the request's context, through a cache keyed by the
// source's hash.
type Constraint struct {
	// Param is the request field it came from, as errors name it:
	// "response_format", "guided_json", "structured_outputs.regex"...
	Param string
	// Kind is one of the Constraint* kinds.
	Kind string
	// GBNF is the grammar's text, Grammar the grammar compiled from it;
	// both are set by CompileConstraint.
	GBNF    string
	Grammar *grammar.Grammar

	// source is the schema (JSON text), pattern, choices (JSON) or GBNF.
	source string
}

// MaxConstraintBytes bounds the source of a request's constraint: a JSON
// Schema's text (as grammar.MaxSchemaBytes), the choices of guided_choice
// together, a GBNF grammar. A regular expression has the smaller
// grammar.MaxRegexBytes. Bigger ones are refused when the request is
// parsed, before any is compiled.
const MaxConstraintBytes = 1 << 20

// constraintKeys are the request keys read by parseConstraint, and
// fit_max_tokens (engine.Request.FitGrammar: a constrained reply ends
// within max_tokens), read by common.
var constraintKeys = []string{"response_format", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided_decoding_backend", "structured_outputs", "fit_max_tokens"}

// constraintSource is one field of a request that asks for a constraint.
type constraintSource struct {
	param, kind string
	value       json.RawMessage // the schema, pattern, choices or grammar
}

// parseConstraint reads a request's constraint fields: at most one may
// ask for a constraint (two are refused naming both), and what it asks
// for is checked, not compiled (see Constraint). It returns nil when none
// does.
func parseConstraint(raw map[string]json.RawMessage) (*Constraint, error) {
	var found []constraintSource
	if v, ok := raw["response_format"]; ok && !isNull(v) {
		src, err := responseFormat(v)
		if err != nil {
			return nil, err
		}
		if src != nil {
			found = append(found, *src)
		}
	}
	for _, f := range []struct{ key, kind string }{
		{"guided_json", ConstraintJSONSchema}, {"guided_regex", ConstraintRegex},
		{"guided_choice", ConstraintChoice}, {"guided_grammar", ConstraintGrammar},
	} {
		if v, ok := raw[f.key]; ok && !isNull(v) {
			found = append(found, constraintSource{param: f.key, kind: f.kind, value: v})
		}
	}
	if v, ok := raw["guided_decoding_backend"]; ok && !isNull(v) {
		// vLLM's choice of library: there is one here. Accepted so that
		// vLLM clients work unchanged.
		var s string
		if err := decode(v, "guided_decoding_backend", &s); err != nil {
			return nil, err
		}
	}
	if v, ok := raw["structured_outputs"]; ok && !isNull(v) {
		srcs, err := structuredOutputs(v)
		if err != nil {
			return nil, err
		}
		found = append(found, srcs...)
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
	default:
		e := badParam(found[0].param, fmt.Sprintf("and %s both constrain the reply: give only one", found[1].param))
		e.Details["params"] = []string{found[0].param, found[1].param}
		return nil, e
	}
	return checkConstraint(found[0])
}

// responseFormat reads response_format: OpenAI's {type: "text"},
// {type: "json_object"} and {type: "json_schema", json_schema: {name,
// description, schema, strict}}, and WebLLM's {type: "json_object",
// schema: "JSON Schema text"} and {type: "grammar", grammar: "GBNF"}.
func responseFormat(v json.RawMessage) (*constraintSource, error) {
	var rf struct {
		Type       *string         `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
		Schema     json.RawMessage `json:"schema"`
		Grammar    json.RawMessage `json:"grammar"`
	}
	if err := decode(v, "response_format", &rf); err != nil {
		return nil, err
	}
	if rf.Type == nil {
		return nil, badParam("response_format.type", "is required")
	}
	switch *rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		if !isNull(rf.Schema) && len(rf.Schema) > 0 {
			return &constraintSource{param: "response_format.schema", kind: ConstraintJSONSchema, value: rf.Schema}, nil
		}
		return &constraintSource{param: "response_format", kind: ConstraintJSONObject}, nil
	case "json_schema":
		if len(rf.JSONSchema) == 0 || isNull(rf.JSONSchema) {
			return nil, badParam("response_format.json_schema", "is required with type \"json_schema\"")
		}
		var js struct {
			Name        *string         `json:"name"`
			Description *string         `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		}
		if t := bytes.TrimSpace(rf.JSONSchema); t[0] != '{' {
			return nil, badParam("response_format.json_schema", "must be an object")
		}
		if err := decode(rf.JSONSchema, "response_format.json_schema", &js); err != nil {
			return nil, err
		}
		if len(js.Schema) == 0 || isNull(js.Schema) {
			// OpenAI's schema is optional: without one the reply is any
			// JSON object.
			return &constraintSource{param: "response_format.json_schema", kind: ConstraintJSONObject}, nil
		}
		return &constraintSource{param: "response_format.json_schema.schema", kind: ConstraintJSONSchema, value: js.Schema}, nil
	case "grammar":
		if len(rf.Grammar) == 0 || isNull(rf.Grammar) {
			return nil, badParam("response_format.grammar", "is required with type \"grammar\"")
		}
		return &constraintSource{param: "response_format.grammar", kind: ConstraintGrammar, value: rf.Grammar}, nil
	}
	return nil, badParam("response_format.type", fmt.Sprintf(`%q is not supported: want "text", "json_object", "json_schema" or "grammar"`, clip(*rf.Type)))
}

// structuredOutputs reads vLLM's structured_outputs object: json (a
// schema, as an object or JSON text), regex, choice, grammar, and
// json_object (true for any object). Null members are unset.
func structuredOutputs(v json.RawMessage) ([]constraintSource, error) {
	if t := bytes.TrimSpace(v); len(t) == 0 || t[0] != '{' {
		return nil, badParam("structured_outputs", "must be an object")
	}
	var so map[string]json.RawMessage
	if err := decode(v, "structured_outputs", &so); err != nil {
		return nil, err
	}
	kinds := map[string]string{"json": ConstraintJSONSchema, "regex": ConstraintRegex, "choice": ConstraintChoice, "grammar": ConstraintGrammar}
	var out []constraintSource
	// In a fixed order, so that an error names the same fields every time.
	for _, k := range []string{"json", "regex", "choice", "grammar", "json_object"} {
		x, ok := so[k]
		if !ok || isNull(x) {
			continue
		}
		param := "structured_outputs." + k
		if k == "json_object" {
			var b bool
			if err := decode(x, param, &b); err != nil {
				return nil, err
			}
			if b {
				out = append(out, constraintSource{param: param, kind: ConstraintJSONObject})
			}
			continue
		}
		out = append(out, constraintSource{param: param, kind: kinds[k], value: x})
	}
	for k, x := range so {
		switch k {
		case "json", "regex", "choice", "grammar", "json_object":
		default:
			if !isNull(x) {
				return nil, badParam("structured_outputs."+clip(k), "is not supported: use json, regex, choice, grammar or json_object")
			}
		}
	}
	return out, nil
}

// checkConstraint reads a constraint field's source and checks its type
// and size.
func checkConstraint(src constraintSource) (*Constraint, error) {
	c := &Constraint{Param: src.param, Kind: src.kind}
	limit := MaxConstraintBytes
	switch src.kind {
	case ConstraintJSONObject:
		return c, nil
	case ConstraintJSONSchema:
		schema := bytes.TrimSpace(src.value)
		if len(schema) > 0 && schema[0] == '"' {
			// vLLM's guided_json and WebLLM's schema may be JSON text.
			var s string
			if err := decode(src.value, src.param, &s); err != nil {
				return nil, err
			}
			schema = bytes.TrimSpace([]byte(s))
			if !json.Valid(schema) {
				return nil, badParam(src.param, "is not JSON: want a JSON Schema (an object, or its JSON text)")
			}
		}
		c.source = string(schema)
	case ConstraintRegex:
		if err := decode(src.value, src.param, &c.source); err != nil {
			return nil, err
		}
		limit = grammar.MaxRegexBytes
	case ConstraintChoice:
		var choices []string
		if err := decode(src.value, src.param, &choices); err != nil {
			return nil, err
		}
		if len(choices) == 0 {
			return nil, badParam(src.param, "must not be empty")
		}
		c.source = string(bytes.TrimSpace(src.value))
	case ConstraintGrammar:
		if err := decode(src.value, src.param, &c.source); err != nil {
			return nil, err
		}
		if strings.TrimSpace(c.source) == "" {
			return nil, badParam(src.param, "must not be empty")
		}
	}
	if len(c.source) > limit {
		e := badParam(src.param, fmt.Sprintf("is %d bytes, over the limit of %d", len(c.source), limit))
		e.Details["limit"] = limit
		return nil, e
	}
	return c, nil
}

// CompileConstraint compiles r's constraint, if it has one not compiled
// yet: its front end (JSON Schema, regex, choices) and its grammar, under
// ctx (a request whose client leaves stops compiling) and within the front
// ends' and the matcher's bounds, through the cache of compiled grammars
// (keyed by the hash of the kind and source, so that a schema that comes
// again costs nothing). Errors are bad_request naming the field; a ctx
// that ends gives aborted. Prepare calls it.
func (r *Request) CompileConstraint(ctx context.Context) error {
	c := r.Constraint
	if c == nil || c.Grammar != nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return Classify(err)
	}
	e, err := grammars.get(cacheKey(c.Kind, c.source), func() (string, error) {
		return c.frontEnd(ctx)
	})
	if err != nil {
		if ctx.Err() != nil {
			return Classify(ctx.Err())
		}
		return paramError(c.Param, err)
	}
	c.GBNF, c.Grammar = e.gbnf, e.g
	return nil
}

// frontEnd turns the constraint's source into GBNF text.
func (c *Constraint) frontEnd(ctx context.Context) (string, error) {
	switch c.Kind {
	case ConstraintJSONObject:
		return grammar.JSONGBNF, nil
	case ConstraintJSONSchema:
		return grammar.JSONSchemaGBNFContext(ctx, []byte(c.source))
	case ConstraintRegex:
		return grammar.RegexGBNF(c.source)
	case ConstraintChoice:
		var choices []string
		if err := json.Unmarshal([]byte(c.source), &choices); err != nil {
			return "", err
		}
		return grammar.ChoiceGBNF(choices)
	}
	return c.source, nil
}

// paramError is Classify's error for err (a schema, regex, grammar,
// grammar limit or tool error), reported as a bad request about param: the
// message starts with it and details.param names it.
func paramError(param string, err error) *Error {
	c := Classify(err)
	details := map[string]any{}
	for k, v := range c.Details {
		details[k] = v
	}
	details["param"] = param
	msg := c.Message
	if !strings.HasPrefix(msg, param) {
		msg = param + ": " + msg
	}
	return &Error{Code: CodeBadRequest, Message: "request: " + msg, Details: details, Err: err}
}

// ParseStructure reads the fields that shape the reply from a request's
// top-level fields onto r, as ParseChat and ParseCompletion do: the
// structured-output constraint (response_format, guided_json,
// guided_regex, guided_choice, guided_grammar, guided_decoding_backend,
// structured_outputs) and, for a chat, tools, tool_choice and
// parallel_tool_calls. At most one of them may constrain the reply; it is
// compiled by CompileConstraint. Callers that build requests otherwise
// (cmd/generate) use it to read the same fields the same way.
func (r *Request) ParseStructure(fields map[string]json.RawMessage) error {
	var err error
	if r.Constraint, err = parseConstraint(fields); err != nil {
		return err
	}
	if r.Kind != KindChat {
		return nil
	}
	if r.Tools, err = parseTools(fields); err != nil {
		return err
	}
	// With tool_choice "none" the template does not see the tools (as
	// vLLM does), and the reply is all content.
	if r.Tools.Enabled() {
		r.Engine.Chat.Tools = fields["tools"]
	}
	if r.Tools.Forced() && r.Constraint != nil {
		e := badParam("tool_choice", fmt.Sprintf("and %s both constrain the reply: give only one", r.Constraint.Param))
		e.Details["params"] = []string{"tool_choice", r.Constraint.Param}
		return e
	}
	return nil
}
