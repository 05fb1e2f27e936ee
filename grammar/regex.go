package grammar

import (
	"errors"
	"fmt"
)

// RegexError reports a regular expression that RegexGBNF cannot convert:
// bad syntax, a feature outside the supported subset or a limit, at a
// byte offset of the pattern. Its message quotes at most the pattern's
// first 64 bytes.
type RegexError struct {
	Pattern string
	Offset  int
	Msg     string
}

func (e *RegexError) Error() string {
	return fmt.Sprintf("grammar: regex %q %s", clip(e.Pattern), e.msg())
}

// msg is the error without the pattern.
func (e *RegexError) msg() string { return fmt.Sprintf("at offset %d: %s", e.Offset, e.Msg) }

// Limits of the regular expression front end.
const (
	// MaxRegexBytes bounds a pattern (RegexGBNF's, and JSON Schema's
	// pattern keyword).
	MaxRegexBytes = 64 << 10
	// maxRegexNesting bounds nested groups, so that the GBNF written for
	// them stays within what Compile parses.
	maxRegexNesting = 64
)

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
// Unicode property classes \p, POSIX classes, octal escapes, `[]...`,
// nested quantifiers (a** or a{2}{3}), a count over 16 of something that
// can match the empty text ((a{0,9}){0,99}: its ways of matching multiply),
// groups nested deeper than 64 and patterns over MaxRegexBytes.
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
