package toolcall

import (
	"fmt"
	"strconv"
	"strings"

	"wasmllm/grammar"
)

// Grammar returns the GBNF grammar (for grammar.Compile) that forces a
// reply to be tool calls in format f, for tool_choice "required" (any of
// tools; one call or more, exactly one if choice.Single) or a named
// function (exactly one call of it). Its sentences are exactly the
// family's call syntax, as its chat template renders calls, with the
// arguments valid for the tool's parameters schema (a tool without one
// takes any object):
//
//	Hermes:     <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>, joined by "\n"
//	Llama3JSON: {"name": "NAME", "parameters": ARGS} (one call: the template renders one)
//	Phi4Mini:   functools[{"name": "NAME", "arguments": ARGS}(, {...})*]
//	DeepSeekR1: <｜tool▁calls▁begin｜>CALL(\nCALL)*<｜tool▁calls▁end｜>, with
//	            CALL = <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
//
// Every sentence parses (Parse) into the calls it spells. For ChoiceNone
// and ChoiceAuto it returns "" and no error: nothing is forced. A
// thinking block before the calls is grammar.WithReasoning's business.
// Errors are *Error: format None (the template has no tool-call
// syntax), a named function not in tools, or a schema that cannot be
// compiled (naming tools[i].function.parameters).
func Grammar(f Format, tools []Tool, choice Choice) (string, error) {
	var allowed []int
	switch choice.Mode {
	case ChoiceNone, ChoiceAuto:
		return "", nil
	case ChoiceRequired:
		if len(tools) == 0 {
			return "", errorf("tool_choice", `"required" needs tools`)
		}
		for i := range tools {
			allowed = append(allowed, i)
		}
	case ChoiceFunction:
		for i, t := range tools {
			if t.Name == choice.Name {
				allowed = append(allowed, i)
			}
		}
		if len(allowed) == 0 {
			return "", errorf("tool_choice.function.name", fmt.Sprintf("%q is not one of the tools", choice.Name))
		}
	default:
		return "", errorf("tool_choice", "unknown mode "+strconv.Itoa(int(choice.Mode)))
	}
	if f == None || f > lastFormat {
		return "", errorf("tool_choice", "the model's chat template has no tool-call format, so a tool call cannot be forced")
	}
	var b strings.Builder
	var calls []string
	for _, i := range allowed {
		t := tools[i]
		schema := []byte(t.Parameters)
		if len(schema) == 0 {
			schema = []byte(`{"type": "object"}`)
		}
		rules, root, err := grammar.JSONSchemaRules(schema, "t"+strconv.Itoa(i)+"-")
		if err != nil {
			return "", errorf(fmt.Sprintf("tools[%d].function.parameters", i), "cannot be used to force a call: "+err.Error())
		}
		b.WriteString(rules)
		if !strings.HasSuffix(rules, "\n") {
			b.WriteByte('\n')
		}
		name := "call-" + strconv.Itoa(i)
		calls = append(calls, name)
		fmt.Fprintf(&b, "%s ::= %s %s %s\n", name, grammar.Quote(callPrefix(f, t.Name)), root, grammar.Quote(callSuffix(f)))
	}
	one := strings.Join(calls, " | ")
	many := choice.Mode == ChoiceRequired && !choice.Single && f != Llama3JSON
	switch f {
	case Hermes:
		fmt.Fprintf(&b, "call ::= %s %s %s\n", grammar.Quote(hermesOpen+"\n"), group(one), grammar.Quote("\n"+hermesClose))
		if many {
			fmt.Fprintf(&b, "root ::= call (%s call)*\n", grammar.Quote("\n"))
		} else {
			b.WriteString("root ::= call\n")
		}
	case Llama3JSON:
		fmt.Fprintf(&b, "root ::= %s\n", one)
	case Phi4Mini:
		rep := ""
		if many {
			rep = fmt.Sprintf(" (%s %s)*", grammar.Quote(", "), group(one))
		}
		fmt.Fprintf(&b, "root ::= %s %s%s %s\n", grammar.Quote(phiOpen), group(one), rep, grammar.Quote("]"))
	case DeepSeekR1:
		fmt.Fprintf(&b, "call ::= %s %s\n", grammar.Quote(dsCallBegin+"function"+dsSep), group(one))
		rep := ""
		if many {
			rep = fmt.Sprintf(" (%s call)*", grammar.Quote("\n"))
		}
		fmt.Fprintf(&b, "root ::= %s call%s %s\n", grammar.Quote(dsCallsBegin), rep, grammar.Quote(dsCallsEnd))
	}
	return b.String(), nil
}

// callPrefix is a call's text up to its arguments.
func callPrefix(f Format, name string) string {
	switch f {
	case Hermes, Phi4Mini:
		return `{"name": "` + name + `", "arguments": `
	case Llama3JSON:
		return `{"name": "` + name + `", "parameters": `
	}
	return name + "\n```json\n"
}

// callSuffix is a call's text after its arguments.
func callSuffix(f Format) string {
	if f == DeepSeekR1 {
		return "\n```" + dsCallEnd
	}
	return "}"
}

func group(alts string) string {
	if strings.Contains(alts, "|") {
		return "(" + alts + ")"
	}
	return alts
}
