package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Tool is one function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object, or nil.
	Parameters json.RawMessage
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ParseTools reads OpenAI's tools array: each entry
// {"type": "function", "function": {"name", "description", "parameters"}}.
// Names must match ^[a-zA-Z0-9_-]{1,64}$ and be distinct; parameters, if
// present and not null, must be a JSON object. A missing or null array is
// no tools; an empty one is refused, as OpenAI does. Errors are *Error.
func ParseTools(raw json.RawMessage) ([]Tool, error) {
	if isNull(raw) {
		return nil, nil
	}
	var entries []json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return nil, errorf("tools", "must be an array of tools")
	}
	if len(entries) == 0 {
		return nil, errorf("tools", "must not be empty; leave it out for no tools")
	}
	tools := make([]Tool, 0, len(entries))
	seen := map[string]bool{}
	for i, e := range entries {
		param := fmt.Sprintf("tools[%d]", i)
		var entry struct {
			Type     *string         `json:"type"`
			Function json.RawMessage `json:"function"`
		}
		if !isObject(e) || json.Unmarshal(e, &entry) != nil {
			return nil, errorf(param, "must be an object")
		}
		if entry.Type == nil || *entry.Type != "function" {
			return nil, errorf(param+".type", `must be "function"`)
		}
		var fn struct {
			Name        *string         `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if !isObject(entry.Function) {
			return nil, errorf(param+".function", "must be an object")
		}
		if err := json.Unmarshal(entry.Function, &fn); err != nil {
			return nil, errorf(param+".function", "invalid: "+err.Error())
		}
		if fn.Name == nil {
			return nil, errorf(param+".function.name", "is required")
		}
		if !toolName.MatchString(*fn.Name) {
			return nil, errorf(param+".function.name", fmt.Sprintf("%q must be 1 to 64 letters, digits, '_' or '-'", *fn.Name))
		}
		if seen[*fn.Name] {
			return nil, errorf(param+".function.name", fmt.Sprintf("duplicate function name %q", *fn.Name))
		}
		seen[*fn.Name] = true
		t := Tool{Name: *fn.Name}
		if fn.Description != nil {
			t.Description = *fn.Description
		}
		if !isNull(fn.Parameters) {
			if !isObject(fn.Parameters) {
				return nil, errorf(param+".function.parameters", "must be a JSON Schema object")
			}
			t.Parameters = append(json.RawMessage(nil), fn.Parameters...)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// Mode is what tool_choice asks for.
type Mode int

const (
	// ChoiceNone: the model must not call tools; the reply is all content.
	ChoiceNone Mode = iota
	// ChoiceAuto: the model decides; parse its reply with Parse or a
	// StreamParser.
	ChoiceAuto
	// ChoiceRequired: the model must call one or more tools (Grammar).
	ChoiceRequired
	// ChoiceFunction: the model must call the function Choice.Name
	// (Grammar).
	ChoiceFunction
)

// Choice is a parsed tool_choice.
type Choice struct {
	Mode Mode
	// Name is the function of ChoiceFunction.
	Name string
	// Single limits ChoiceRequired to one call, for
	// parallel_tool_calls: false. ParseChoice leaves it false (OpenAI's
	// default allows parallel calls).
	Single bool
}

// ParseChoice reads tool_choice: "none", "auto", "required", or
// {"type": "function", "function": {"name": NAME}} naming one of tools.
// Left out (nil or null) it is "auto" if there are tools and "none" if
// not, as in OpenAI's API; anything but "none" needs tools. Errors are
// *Error.
func ParseChoice(raw json.RawMessage, tools []Tool) (Choice, error) {
	if isNull(raw) {
		if len(tools) > 0 {
			return Choice{Mode: ChoiceAuto}, nil
		}
		return Choice{Mode: ChoiceNone}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		var c Choice
		switch s {
		case "none":
			return Choice{Mode: ChoiceNone}, nil
		case "auto":
			c.Mode = ChoiceAuto
		case "required":
			c.Mode = ChoiceRequired
		default:
			return Choice{}, errorf("tool_choice", fmt.Sprintf(`%q is not one of "none", "auto", "required" or a function`, s))
		}
		if len(tools) == 0 {
			return Choice{}, errorf("tool_choice", fmt.Sprintf("%q needs tools", s))
		}
		return c, nil
	}
	var obj struct {
		Type     *string         `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	if !isObject(raw) || json.Unmarshal(raw, &obj) != nil {
		return Choice{}, errorf("tool_choice", `must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}`)
	}
	if obj.Type == nil || *obj.Type != "function" {
		return Choice{}, errorf("tool_choice.type", `must be "function"`)
	}
	var fn struct {
		Name *string `json:"name"`
	}
	if !isObject(obj.Function) || json.Unmarshal(obj.Function, &fn) != nil {
		return Choice{}, errorf("tool_choice.function", `must be an object {"name": ...}`)
	}
	if fn.Name == nil {
		return Choice{}, errorf("tool_choice.function.name", "is required")
	}
	for _, t := range tools {
		if t.Name == *fn.Name {
			return Choice{Mode: ChoiceFunction, Name: t.Name}, nil
		}
	}
	return Choice{}, errorf("tool_choice.function.name", fmt.Sprintf("%q is not one of the tools", *fn.Name))
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}
