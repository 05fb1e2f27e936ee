package toolcall

import (
	"encoding/json"
	"errors"
	"testing"
)

const weatherTools = `[
 {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
 {"type": "function", "function": {"name": "now"}}
]`

func TestParseTools(t *testing.T) {
	tools, err := ParseTools(json.RawMessage(weatherTools))
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 {
		t.Fatalf("%d tools", len(tools))
	}
	if tools[0].Name != "get_weather" || tools[0].Description != "Weather in a city" {
		t.Errorf("tool 0: %+v", tools[0])
	}
	var schema map[string]any
	if json.Unmarshal(tools[0].Parameters, &schema) != nil || schema["type"] != "object" {
		t.Errorf("tool 0 parameters %s", tools[0].Parameters)
	}
	if tools[1].Name != "now" || tools[1].Description != "" || tools[1].Parameters != nil {
		t.Errorf("tool 1: %+v", tools[1])
	}
	for _, raw := range []string{"", "null"} {
		if tools, err := ParseTools(json.RawMessage(raw)); tools != nil || err != nil {
			t.Errorf("%q: %v %v", raw, tools, err)
		}
	}
}

func TestParseToolsErrors(t *testing.T) {
	fn := func(body string) string { return `{"type": "function", "function": ` + body + `}` }
	ok := fn(`{"name": "a"}`)
	for _, c := range []struct{ raw, param string }{
		{`{}`, "tools"},
		{`[]`, "tools"},
		{`[` + ok + `, 3]`, "tools[1]"},
		{`[{"type": "code", "function": {"name": "a"}}]`, "tools[0].type"},
		{`[{"function": {"name": "a"}}]`, "tools[0].type"},
		{`[{"type": "function"}]`, "tools[0].function"},
		{`[` + fn(`{"description": "x"}`) + `]`, "tools[0].function.name"},
		{`[` + ok + `, ` + ok + `, ` + fn(`{"name": "bad name"}`) + `]`, "tools[1].function.name"},
		{`[` + ok + `, ` + fn(`{"name": "b"}`) + `, ` + fn(`{"name": "bad.name"}`) + `]`, "tools[2].function.name"},
		{`[` + fn(`{"name": "a234567890123456789012345678901234567890123456789012345678901234x"}`) + `]`, "tools[0].function.name"},
		{`[` + fn(`{"name": ""}`) + `]`, "tools[0].function.name"},
		{`[` + fn(`{"name": "a", "parameters": [1]}`) + `]`, "tools[0].function.parameters"},
		{`[` + fn(`{"name": 5}`) + `]`, "tools[0].function"},
	} {
		_, err := ParseTools(json.RawMessage(c.raw))
		var e *Error
		if !errors.As(err, &e) || e.Param != c.param {
			t.Errorf("%s: error %v, want one about %s", c.raw, err, c.param)
		}
	}
}

func TestParseChoice(t *testing.T) {
	tools, err := ParseTools(json.RawMessage(weatherTools))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		raw   string
		tools []Tool
		want  Choice
	}{
		{``, tools, Choice{Mode: ChoiceAuto}},
		{`null`, nil, Choice{Mode: ChoiceNone}},
		{`"none"`, nil, Choice{Mode: ChoiceNone}},
		{`"none"`, tools, Choice{Mode: ChoiceNone}},
		{`"auto"`, tools, Choice{Mode: ChoiceAuto}},
		{`"required"`, tools, Choice{Mode: ChoiceRequired}},
		{`{"type": "function", "function": {"name": "now"}}`, tools, Choice{Mode: ChoiceFunction, Name: "now"}},
	} {
		got, err := ParseChoice(json.RawMessage(c.raw), c.tools)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.raw, got, err, c.want)
		}
	}
	for _, c := range []struct {
		raw   string
		tools []Tool
		param string
	}{
		{`"always"`, tools, "tool_choice"},
		{`"auto"`, nil, "tool_choice"},
		{`"required"`, nil, "tool_choice"},
		{`3`, tools, "tool_choice"},
		{`{"type": "fn", "function": {"name": "now"}}`, tools, "tool_choice.type"},
		{`{"type": "function"}`, tools, "tool_choice.function"},
		{`{"type": "function", "function": {}}`, tools, "tool_choice.function.name"},
		{`{"type": "function", "function": {"name": "later"}}`, tools, "tool_choice.function.name"},
	} {
		_, err := ParseChoice(json.RawMessage(c.raw), c.tools)
		var e *Error
		if !errors.As(err, &e) || e.Param != c.param {
			t.Errorf("%s: error %v, want one about %s", c.raw, err, c.param)
		}
	}
	if e := (&Error{Param: "tools", Msg: "bad"}); e.Error() != "tools: bad" {
		t.Errorf("Error() = %q", e.Error())
	}
}
