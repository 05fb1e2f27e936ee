package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"wasmllm/api"
)

// structureFlags are the flags that shape the reply: structured output
// and tool calls. They stand for the fields of an OpenAI request body and
// are read by api as the browser's and the server's requests are.
type structureFlags struct {
	responseFormat, jsonSchema, grammar, regex, choice, tools, toolChoice string
	parallel, fit                                                         bool
}

func (s *structureFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&s.responseFormat, "response-format", "", `"json": the reply is a JSON object (response_format json_object)`)
	fs.StringVar(&s.jsonSchema, "json-schema", "", "the reply is JSON valid for the JSON Schema in FILE")
	fs.StringVar(&s.grammar, "grammar", "", "the reply is a sentence of the GBNF grammar in FILE (start rule root)")
	fs.StringVar(&s.regex, "regex", "", "the reply is text the regular expression PATTERN matches")
	fs.StringVar(&s.choice, "choice", "", "the reply is one of the comma-separated strings")
	fs.StringVar(&s.tools, "tools", "", "OpenAI tools (a JSON array) in FILE; needs -chat")
	fs.StringVar(&s.toolChoice, "tool-choice", "", `auto, required, none, or a function's NAME (default auto with -tools)`)
	fs.BoolVar(&s.parallel, "parallel-tool-calls", true, "-tool-choice required may make several calls (false: exactly one)")
	fs.BoolVar(&s.fit, "fit-max-tokens", false, "a constrained reply ends within -n tokens: strings and structures close early instead of being cut (fit_max_tokens)")
}

// files are the files the flags name, for the browser run's checks.
func (s *structureFlags) files() map[string]string {
	return map[string]string{"json-schema": s.jsonSchema, "grammar": s.grammar, "tools": s.tools}
}

// fields returns the request fields the flags stand for.
func (s *structureFlags) fields(chat bool) (map[string]json.RawMessage, error) {
	var given []string
	for _, f := range []struct{ name, v string }{{"-response-format", s.responseFormat}, {"-json-schema", s.jsonSchema},
		{"-grammar", s.grammar}, {"-regex", s.regex}, {"-choice", s.choice}} {
		if f.v != "" && f.v != "text" {
			given = append(given, f.name)
		}
	}
	if len(given) > 1 {
		return nil, fmt.Errorf("%s: give only one of them (each constrains the whole reply)", strings.Join(given, " and "))
	}
	out := map[string]json.RawMessage{}
	put := func(key string, v any) {
		b, _ := json.Marshal(v)
		out[key] = b
	}
	switch s.responseFormat {
	case "", "text":
	case "json", "json_object":
		put("response_format", map[string]string{"type": "json_object"})
	default:
		return nil, fmt.Errorf("-response-format %q: want json or text", s.responseFormat)
	}
	if s.jsonSchema != "" {
		b, err := os.ReadFile(s.jsonSchema)
		if err != nil {
			return nil, fmt.Errorf("-json-schema: %w", err)
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("-json-schema %s: not JSON", s.jsonSchema)
		}
		out["guided_json"] = b
	}
	if s.grammar != "" {
		b, err := os.ReadFile(s.grammar)
		if err != nil {
			return nil, fmt.Errorf("-grammar: %w", err)
		}
		put("guided_grammar", string(b))
	}
	if s.regex != "" {
		put("guided_regex", s.regex)
	}
	if s.choice != "" {
		put("guided_choice", strings.Split(s.choice, ","))
	}
	if (s.tools != "" || s.toolChoice != "") && !chat {
		return nil, errors.New("-tools and -tool-choice need -chat")
	}
	if s.tools != "" {
		b, err := os.ReadFile(s.tools)
		if err != nil {
			return nil, fmt.Errorf("-tools: %w", err)
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("-tools %s: not JSON", s.tools)
		}
		out["tools"] = b
		if !s.parallel {
			put("parallel_tool_calls", false)
		}
	}
	switch s.toolChoice {
	case "":
	case "auto", "required", "none":
		put("tool_choice", s.toolChoice)
	default:
		put("tool_choice", map[string]any{"type": "function", "function": map[string]string{"name": s.toolChoice}})
	}
	if s.fit {
		put("fit_max_tokens", true)
	}
	return out, nil
}

// flagNames are the flags that stand for request fields, for errors.
var flagNames = []struct{ field, flag string }{
	{"response_format", "-response-format"}, {"guided_json", "-json-schema"}, {"guided_grammar", "-grammar"},
	{"guided_regex", "-regex"}, {"guided_choice", "-choice"}, {"tools", "-tools"}, {"tool_choice", "-tool-choice"},
	{"fit_max_tokens", "-fit-max-tokens"},
}

// flagError names the flag behind a request error about a field.
func flagError(err error) error {
	var e *api.Error
	if !errors.As(err, &e) {
		return err
	}
	param, _ := e.Details["param"].(string)
	for _, f := range flagNames {
		if param == f.field || strings.HasPrefix(param, f.field+".") || strings.HasPrefix(param, f.field+"[") {
			return fmt.Errorf("%s: %s", f.flag, strings.TrimPrefix(e.Message, "request: "))
		}
	}
	return err
}

// toolCallsJSON is the line printed for a reply's tool calls.
type toolCallsJSON struct {
	Content   *string        `json:"content"`
	ToolCalls []api.ToolCall `json:"tool_calls"`
}
