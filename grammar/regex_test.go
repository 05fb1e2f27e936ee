package grammar

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// regexCase is a pattern of RegexGBNF's dialect, goRE the same language in
// Go's syntax when the two differ, and strings it must accept and reject.
type regexCase struct {
	pattern, goRE string
	match, miss   []string
}

var regexCases = []regexCase{
	{pattern: `abc`, match: []string{"abc"}, miss: []string{"", "ab", "abcd", "xabc"}},
	{pattern: `^a[b-d]+\d{2,3}(x|yz)*$`, match: []string{"ab12", "addd999xyzx"}, miss: []string{"a12", "ab1", "ab1234", "ab12y"}},
	{pattern: `[^"\\]{1,3}`, match: []string{"a", "日本", "\n\t "}, miss: []string{"", `"`, `\`, "abcd"}},
	{pattern: `.?.`, match: []string{"a", "é😀", "\r\t"}, miss: []string{"", "\n", "a\n", "abc"}},
	{pattern: `\w+@\w+\.(com|org)`, match: []string{"a_1@b.com", "x@y.org"}, miss: []string{"a@b.net", "@b.com", "é@b.com"}},
	{pattern: `\s\S\d\D\W`, match: []string{" x1a!", "\té0 é"}, miss: []string{"xx1a!", " x1a_", " x1aa"}},
	{pattern: `(?:ab|cd){2}|x{3,}`, match: []string{"abcd", "cdcd", "xxx", "xxxxxx"}, miss: []string{"ab", "xx", "abx"}},
	{pattern: `a*?b+?c??`, match: []string{"b", "aabbc", "ab"}, miss: []string{"", "ac", "abcc"}},
	{pattern: `(?P<year>\d{4})-(?<month>0[1-9]|1[0-2])`, match: []string{"2024-01", "1999-12"}, miss: []string{"2024-13", "24-01"}},
	{pattern: `[\d.+-]+e[-+]?\d`, match: []string{"1.5e-3", "-+.e9"}, miss: []string{"e1", "1e", "1.5E3"}},
	{pattern: `\u00e9\x41\u{1F600}\t\/\.`, goRE: `\x{00e9}\x41\x{1F600}\t/\.`, match: []string{"éA😀\t/."}, miss: []string{"eA😀\t/.", "éA😀 /."}},
	{pattern: `\uD83D\uDE00+`, goRE: `\x{1F600}+`, match: []string{"😀", "😀😀"}, miss: []string{"", "\uFFFD"}},
	{pattern: `[a-c\]\-]{2}`, match: []string{"a]", "-c", "]-"}, miss: []string{"d]", "a", "a\\"}},
	{pattern: `a{,3}`, goRE: `a\{,3\}`, match: []string{"a{,3}"}, miss: []string{"a", "aaa"}},
	{pattern: `x{2}{`, goRE: `x{2}\{`, match: []string{"xx{"}, miss: []string{"xx", "x{"}},
	{pattern: `^(a|)$|^b*$`, match: []string{"", "a", "bbb"}, miss: []string{"ab", "aa"}},
	{pattern: `[^\s\d]\cJ`, goRE: `[^\s\d]\n`, match: []string{"a\n", "é\n"}, miss: []string{" \n", "1\n", "a"}},
	{pattern: `(ab){0}c`, match: []string{"c"}, miss: []string{"abc"}},
	{pattern: `\$\^\(\)\[\]\{\}\|\?\*\+`, match: []string{"$^()[]{}|?*+"}, miss: []string{"$"}},
	{pattern: `[a-z]{3,5}(-[a-z]{3,5}){0,2}`, match: []string{"abc", "abc-defgh-ijk"}, miss: []string{"ab", "abc-", "abc-def-ghi-jkl"}},
}

// TestRegexLanguage checks RegexGBNF against Go's regexp with full-match
// anchoring: random sentences of each grammar all match, and crafted
// strings are accepted or rejected as the regexp decides.
func TestRegexLanguage(t *testing.T) {
	for i, tc := range regexCases {
		src, err := RegexGBNF(tc.pattern)
		if err != nil {
			t.Errorf("%s: %v", tc.pattern, err)
			continue
		}
		g, err := Compile(src)
		if err != nil {
			t.Errorf("%s: Compile: %v\n%s", tc.pattern, err, src)
			continue
		}
		goRE := tc.goRE
		if goRE == "" {
			goRE = tc.pattern
		}
		re := regexp.MustCompile(`^(?:` + goRE + `)$`)
		for _, s := range tc.match {
			if !re.MatchString(s) {
				t.Fatalf("test data: %q does not match %s", s, goRE)
			}
			if off := acceptWhole(g, s); off >= 0 {
				t.Errorf("%s: %q rejected at offset %d: %s", tc.pattern, s, off, near(s, off))
			}
		}
		for _, s := range tc.miss {
			if re.MatchString(s) {
				t.Fatalf("test data: %q matches %s", s, goRE)
			}
			if acceptWhole(g, s) < 0 {
				t.Errorf("%s: %q accepted", tc.pattern, s)
			}
		}
		rng := rand.New(rand.NewPCG(uint64(i+1), 0x7e9))
		for n, long := 0, 0; n < 200; {
			s, tooLong, err := randomSentence(g, rng, textWalk)
			if err != nil {
				t.Fatalf("%s: %v", tc.pattern, err)
			}
			if tooLong {
				if long++; long > 200 {
					t.Fatalf("%s: random walks do not end", tc.pattern)
				}
				continue
			}
			n++
			if !re.MatchString(s) {
				t.Fatalf("%s: generated %q, which the regexp does not match", tc.pattern, s)
			}
		}
	}
}

// TestRegexErrors checks refused features and bad syntax: a *RegexError
// at the offending offset.
func TestRegexErrors(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		offset  int
		msg     string
	}{
		{`(a)\1`, 3, "backreference"},
		{`a(?=b)`, 1, "lookahead"},
		{`a(?!b)`, 1, "lookahead"},
		{`(?<=a)b`, 0, "lookbehind"},
		{`(?<!a)b`, 0, "lookbehind"},
		{`\bword`, 0, "word boundar"},
		{`a\Bb`, 1, "word boundar"},
		{`a^b`, 1, "^"},
		{`a$b`, 1, "$"},
		{`(a$)`, 2, "$"},
		{`(?i)abc`, 0, "flags"},
		{`\p{L}`, 0, "property"},
		{`[[:alpha:]]`, 1, "POSIX"},
		{`*a`, 0, "nothing to repeat"},
		{`a**`, 2, "nested quantifier"},
		{`a++`, 2, "nested quantifier"},
		{`a{2}{3}`, 4, "nested quantifier"},
		{`{2}`, 0, "nothing to repeat"},
		{`a{3,2}`, 1, "below its minimum"},
		{`a{10001}`, 1, "over"},
		{`(ab`, 0, "unclosed ("},
		{`ab)`, 2, "unmatched )"},
		{`[ab`, 0, "unclosed ["},
		{`[]a]`, 1, "ambiguous"},
		{`[z-a]`, 1, "reversed"},
		{`[\d-z]`, 4, "single characters"},
		{`a\`, 1, "trailing backslash"},
		{`\q`, 0, "unknown escape"},
		{`\x4`, 0, "hex"},
		{`\uD800`, 0, "surrogate"},
		{`\012`, 0, "octal"},
		{`\k<n>`, 0, "backreference"},
		{`[^\x00-\x{10FFFF}]`, 0, "matches nothing"},
	} {
		_, err := RegexGBNF(tc.pattern)
		var re *RegexError
		if !errors.As(err, &re) {
			t.Errorf("%s: got %v, want a *RegexError", tc.pattern, err)
			continue
		}
		if re.Offset != tc.offset || !strings.Contains(re.Msg, tc.msg) || re.Pattern != tc.pattern {
			t.Errorf("%s: got offset %d %q, want offset %d and %q", tc.pattern, re.Offset, re.Msg, tc.offset, tc.msg)
		}
	}
}

// TestRegexRulesPrefix embeds a pattern under a prefix.
func TestRegexRulesPrefix(t *testing.T) {
	rules, root, err := RegexRules(`[0-9]+(\.[0-9]+)?`, "num-")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Compile(`root ::= "x=" ` + root + " \";\"\n" + rules)
	if err != nil {
		t.Fatal(err)
	}
	if acceptWhole(g, "x=3.25;") >= 0 || acceptWhole(g, "x=3.;") < 0 {
		t.Error("embedded pattern matched wrongly")
	}
	if _, _, err := RegexRules("a", "no space"); err == nil {
		t.Error("bad prefix accepted")
	}
}
