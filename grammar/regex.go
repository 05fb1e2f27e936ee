package grammar

import (
	"errors"
	"fmt"
)

// RegexError reports a regular expression that RegexGBNF cannot convert:
// bad syntax or a feature outside the supported subset, at a byte offset
// of the pattern.
type RegexError struct {
	Pattern string
	Offset  int
	Msg     string
}

func (e *RegexError) Error() string {
	return fmt.Sprintf("grammar: regex %q at offset %d: %s", e.Pattern, e.Offset, e.Msg)
}

// RegexGBNF converts a regular expression to a GBNF grammar (start rule
// root) whose language is the strings the pattern fully matches, as vLLM's
// guided_regex and outlines use it.
//
// Supported: literals; escapes \d \w \s \D \W \S, \n \r \t \f \v \0, \xHH,
// \uHHHH (surrogate pairs joined), \u{H...} and \x{H...}, \cX and escaped
// punctuation; classes [...] and [^...] with ranges and escapes; `.`;
// groups (...), (?:...), (?<name>...) and (?P<name>...); alternation |;
// quantifiers * + ? {m} {m,} {m,n} (counts up to MaxRepeat) and their lazy
// forms, which match the same strings; ^ at the start and $ at the end of
// the pattern or of a top-level alternative. The classes are Go's RE2
// ones: \d, \w and \s are ASCII, `.` is every character but \n. A `{` that
// does not start a count is a literal, as in RE2 and ECMAScript.
//
// Refused with a *RegexError: backreferences, lookahead and lookbehind,
// \b \B \A \z and other anchors, anchors inside the pattern, inline flags,
// Unicode property classes \p, POSIX classes, octal escapes, `[]...` and
// nested quantifiers.
func RegexGBNF(pattern string) (string, error) {
	rules, root, err := RegexRules(pattern, "")
	if err != nil {
		return "", err
	}
	return "root ::= " + root + "\n" + rules, nil
}

// RegexRules is RegexGBNF's rules with every name prefixed by prefix (of
// [a-zA-Z0-9-]), for embedding in a larger grammar, and the name of the
// rule that matches the pattern.
func RegexRules(pattern, prefix string) (rules, root string, err error) {
	if !validRulePrefix(prefix) {
		return "", "", &RegexError{Pattern: pattern, Msg: fmt.Sprintf("rule prefix %q is not of [a-zA-Z0-9-]", prefix)}
	}
	branches, err := parseRegex(pattern)
	if err != nil {
		return "", "", err
	}
	w := newGBNFWriter(prefix)
	e := &rxEmitter{w: w}
	root = w.fresh("regex")
	w.define(root, e.expr(rxWhole(branches)))
	if w.err != nil {
		msg := w.err.Error()
		if errors.Is(w.err, errFrontTooBig) {
			msg = fmt.Sprintf("the grammar exceeds %d bytes", frontLimit)
		}
		return "", "", &RegexError{Pattern: pattern, Msg: msg}
	}
	return w.text(), root, nil
}
