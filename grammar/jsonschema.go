package grammar

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// SchemaError reports a JSON Schema that JSONSchemaGBNF cannot convert
// exactly: a keyword outside the supported subset, a malformed keyword
// value, or a limit. Pointer is the JSON pointer of the offending keyword
// in the schema document ("/properties/a/multipleOf"; "" for the whole
// schema), Keyword the keyword ("" when the error is not about one).
type SchemaError struct {
	Pointer string
	Keyword string
	Msg     string
}

func (e *SchemaError) Error() string {
	if e.Keyword == "" {
		return fmt.Sprintf("grammar: JSON Schema at #%s: %s", clipPointer(e.Pointer), e.Msg)
	}
	return fmt.Sprintf("grammar: JSON Schema keyword %q at #%s: %s", clip(e.Keyword), clipPointer(e.Pointer), e.Msg)
}

// clipPointer is a JSON pointer for a message, each token clipped (its
// depth is bounded by MaxSchemaDepth).
func clipPointer(ptr string) string {
	if len(ptr) <= maxEcho {
		return ptr
	}
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = clip(t)
	}
	return strings.Join(toks, "/")
}

// Limits of the JSON Schema front end.
const (
	// MaxSchemaDepth bounds the nesting of subschemas, and of $ref and
	// allOf expansion.
	MaxSchemaDepth = 64
	// MaxSchemaGrammar bounds the GBNF text a schema produces.
	MaxSchemaGrammar = frontLimit
	// MaxSchemaBytes bounds the schema's JSON text.
	MaxSchemaBytes = 1 << 20
)

// JSONSchemaGBNF converts a JSON Schema to a GBNF grammar (start rule
// root) whose sentences are JSON documents that validate against it.
//
// Every keyword it accepts is enforced; any other is refused with a
// *SchemaError naming it. Supported (drafts 4 to 2020-12; the draft in
// $schema decides whether $ref's siblings apply):
//
//   - type, with unions; a schema without type admits every type, and the
//     type-specific keywords constrain only their own type, as in JSON
//     Schema.
//   - enum and const, of any JSON values, alone or with type, the length,
//     range and count keywords, pattern and format (values the other
//     keywords reject are dropped).
//   - objects: properties, required, additionalProperties (false, true or a
//     schema; absent means any). Properties come in the order the schema
//     lists them, then required names it does not list, then additional
//     properties, whose names cannot repeat a declared one; optional
//     properties may be left out.
//   - arrays: items, prefixItems (and the older items array with
//     additionalItems), minItems, maxItems.
//   - strings: minLength and maxLength (in characters; an escape is one),
//     pattern (see RegexGBNF for the dialect; unanchored sides match any
//     text, as JSON Schema's pattern searches), format date, time,
//     date-time, uuid and email. Length limits combine with a pattern or
//     format only when one part of it varies in length.
//   - integers: minimum, maximum, exclusiveMinimum, exclusiveMaximum, any
//     bounds (big, negative, one-sided, fractional), exactly.
//   - numbers: the same bounds, exactly, for any decimal bounds; a bounded
//     number is written without an exponent.
//   - anyOf; allOf (merged: properties, required, additionalProperties,
//     items and the bounds intersect); oneOf when its branches are provably
//     disjoint (by type, by enum/const values, or by a required property
//     whose schemas are disjoint), else refused.
//   - $ref to "#", "#/$defs/...", "#/definitions/..." or any local JSON
//     pointer, recursion included.
//   - annotations, ignored: title, description, $schema, $id (at the root),
//     default, examples, $comment, deprecated, readOnly, writeOnly.
//
// The grammar writes each value one way where JSON allows several: object
// properties in the order above, numbers as the schema or the JSON number
// grammar writes them (no "-0" for a bounded zero), and in strings under a
// pattern or format, in property names checked against declared ones, and
// in enum values, each character in its canonical form (\uXXXX escapes only
// for control characters). Optional whitespace between tokens is bounded:
// nothing, a space, or a newline and up to 20 spaces or tabs. The format
// grammars are a strict subset of what validators accept: time and
// date-time without leap seconds and with at most 9 fraction digits, and
// email as dot-atoms of printable ASCII at a host name with at least one
// dot.
//
// A conversion's work is bounded (a few hundred milliseconds at most):
// a schema that needs more, or is over MaxSchemaBytes, or gives a grammar
// over MaxSchemaGrammar, is refused with a *SchemaError.
func JSONSchemaGBNF(schema []byte) (string, error) {
	return JSONSchemaGBNFContext(context.Background(), schema)
}

// JSONSchemaGBNFContext is JSONSchemaGBNF, stopped with ctx's error once
// ctx is done.
func JSONSchemaGBNFContext(ctx context.Context, schema []byte) (string, error) {
	rules, root, err := jsonSchemaRules(ctx, schema, "")
	if err != nil {
		return "", err
	}
	if root != "root" {
		rules = "root ::= " + root + "\n" + rules
	}
	return rules, nil
}

// JSONSchemaRules is JSONSchemaGBNF's rules with every rule name prefixed
// by prefix (of [a-zA-Z0-9-]), so that a larger grammar can embed several
// schemas, and the name of the rule that matches a document (prefix +
// "root").
func JSONSchemaRules(schema []byte, prefix string) (rules, root string, err error) {
	return jsonSchemaRules(context.Background(), schema, prefix)
}

func jsonSchemaRules(ctx context.Context, schema []byte, prefix string) (rules, root string, err error) {
	if !validRulePrefix(prefix) {
		return "", "", &SchemaError{Msg: fmt.Sprintf("rule prefix %q is not of [a-zA-Z0-9-]", clip(prefix))}
	}
	if len(schema) > MaxSchemaBytes {
		return "", "", &SchemaError{Msg: fmt.Sprintf("the schema is %d bytes, over the limit of %d", len(schema), MaxSchemaBytes)}
	}
	doc, err := decodeOrdered(schema)
	if err != nil {
		return "", "", &SchemaError{Msg: "the schema is not valid JSON: " + err.Error()}
	}
	c := newJSCompiler(ctx, doc, prefix)
	root = c.w.fresh("root")
	top, err := c.parse(doc, "", 0)
	if err != nil {
		return "", "", err
	}
	expr, never, err := c.gen(top, 0)
	if err != nil {
		return "", "", err
	}
	if never {
		return "", "", &SchemaError{Msg: "the schema admits no JSON value"}
	}
	c.w.define(root, expr)
	if c.err != nil {
		return "", "", c.err
	}
	if c.w.err != nil {
		msg := c.w.err.Error()
		if errors.Is(c.w.err, errFrontTooBig) {
			msg = fmt.Sprintf("the grammar would exceed %d bytes", MaxSchemaGrammar)
		}
		return "", "", &SchemaError{Msg: msg}
	}
	if bad := c.w.unproductive(); len(bad) > 0 {
		ptrOf := map[string]string{}
		for ptr, name := range c.refRules {
			ptrOf[name] = ptr
		}
		for _, name := range bad {
			if ptr, ok := ptrOf[name]; ok {
				return "", "", jsErr(ptr, "", "the recursive schema admits no finite value")
			}
		}
		return "", "", &SchemaError{Msg: "the schema admits no finite value (a recursion without a way out)"}
	}
	return c.w.text(), root, nil
}
