package grammar

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// JSONValueRules are GBNF rules for any JSON value, to embed in other
// grammars: json-value (any value), json-object, json-array, json-string,
// json-number, each followed by optional whitespace (json-space: nothing,
// a space, or a newline and up to 20 spaces or tabs), so that generation
// cannot run away on whitespace. Strings allow every JSON escape;
// \uXXXX surrogates only as pairs.
const JSONValueRules = `json-value ::= json-object | json-array | json-string | json-number | ("true" | "false" | "null") json-space
json-object ::= "{" json-space ( json-string ":" json-space json-value ( "," json-space json-string ":" json-space json-value )* )? "}" json-space
json-array ::= "[" json-space ( json-value ( "," json-space json-value )* )? "]" json-space
json-string ::= "\"" json-char* "\"" json-space
json-char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" json-hex4 )
json-hex4 ::= [0-9a-cA-CeEfF] json-hex json-hex json-hex | [dD] [0-7] json-hex json-hex | [dD] [89abAB] json-hex json-hex "\\u" [dD] [c-fC-F] json-hex json-hex
json-hex ::= [0-9a-fA-F]
json-number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? json-space
json-space ::= "" | " " | "\n" [ \t]{0,20}
`

// JSONGBNF is a grammar for OpenAI's json_object response format: one JSON
// object (whose values are any JSON).
const JSONGBNF = "root ::= json-object\n" + JSONValueRules

// JSONValueGBNF is a grammar for any one JSON value.
const JSONValueGBNF = "root ::= json-value\n" + JSONValueRules

// ChoiceGBNF is a grammar whose sentences are exactly the given strings
// (vLLM's guided_choice). It fails on an empty list or invalid UTF-8.
func ChoiceGBNF(choices []string) (string, error) {
	if len(choices) == 0 {
		return "", errors.New("grammar: no choices")
	}
	alts := make([]string, 0, len(choices))
	seen := map[string]bool{}
	for _, c := range choices {
		if !utf8.ValidString(c) {
			return "", errors.New("grammar: a choice is not valid UTF-8")
		}
		if !seen[c] {
			seen[c] = true
			alts = append(alts, gbnfQuote(c))
		}
	}
	return "root ::= " + strings.Join(alts, " | ") + "\n", nil
}
