package tokenizer

// splitter is one pre-tokenization step: it cuts s into pieces, in order,
// that together cover s exactly (unless the rule removes matches).
type splitter interface {
	split(s string, emit func(string)) error
}

// The split patterns the hand-written splitters implement, as they appear in
// tokenizer.json files.
const (
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patternGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// patternQwen35 is Qwen2's with combining marks joining letters
	// (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN35).
	patternQwen35 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// patternKind names a hand-written splitter.
type patternKind uint8

const (
	kindLlama3 patternKind = iota // patternLlama3
	kindQwen2                     // patternQwen2
	kindGPT2                      // patternGPT2
	kindQwen35                    // patternQwen35
	kindO200k                     // patternO200k
)

// patternSplitter implements one of the known patterns with the Isolated
// behaviour, matching the regex engine's leftmost-first alternation and
// backtracking exactly. Go's regexp has no lookahead, hence by hand.
type patternSplitter struct{ kind patternKind }

func (p patternSplitter) split(s string, emit func(string)) error {
	for i := 0; i < len(s); {
		var j int
		switch p.kind {
		case kindLlama3:
			j = nextLlama3(s, i, 3)
		case kindQwen2:
			j = nextLlama3(s, i, 1)
		case kindQwen35:
			j = nextLlama3Of(s, i, 1, classOfMarks)
		case kindO200k:
			j = nextO200k(s, i)
		default:
			j = nextGPT2(s, i)
		}
		if j <= i { // cannot happen; never loop forever
			_, w := runeAt(s, i)
			j = i + w
		}
		emit(s[i:j])
		i = j
	}
	return nil
}

// knownPattern maps a pattern string to its hand-written splitter.
func knownPattern(pat string) (patternSplitter, bool) {
	switch pat {
	case patternLlama3:
		return patternSplitter{kindLlama3}, true
	case patternQwen2:
		return patternSplitter{kindQwen2}, true
	case patternGPT2:
		return patternSplitter{kindGPT2}, true
	case patternQwen35:
		return patternSplitter{kindQwen35}, true
	case patternO200k:
		return patternSplitter{kindO200k}, true
	}
	return patternSplitter{}, false
}

// nextLlama3 returns the end of the piece that starts at s[i] under
// patternLlama3 (maxDigits 3) or patternQwen2 (maxDigits 1).
func nextLlama3(s string, i, maxDigits int) int { return nextLlama3Of(s, i, maxDigits, classOf) }

// nextLlama3Of is nextLlama3 with the character classes of classOf: with
// classOfMarks, combining marks count as letters, which is patternQwen35
// (a mark joins the letter runs, [\p{L}\p{M}]+, and leaves the other
// runs, [^\s\p{L}\p{M}\p{N}]; as the optional first character of a letter
// run it ends where the run would).
func nextLlama3Of(s string, i, maxDigits int, classOf func(rune) uint8) int {
	scanClass := func(s string, i int, c uint8) int { return scanClassOf(s, i, c, classOf) }
	r, w := runeAt(s, i)
	c := classOf(r)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if r == '\'' {
		if n := contraction(s[i+1:], true); n > 0 {
			return i + 1 + n
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c == clsLetter {
		return scanClass(s, i+w, clsLetter)
	}
	if r != '\r' && r != '\n' && c != clsNumber && i+w < len(s) {
		if r2, w2 := runeAt(s, i+w); classOf(r2) == clsLetter {
			return scanClass(s, i+w+w2, clsLetter)
		}
	}
	// \p{N}{1,maxDigits}
	if c == clsNumber {
		j := i + w
		for k := 1; k < maxDigits && j < len(s); k++ {
			r2, w2 := runeAt(s, j)
			if classOf(r2) != clsNumber {
				break
			}
			j += w2
		}
		return j
	}
	//  ?[^\s\p{L}\p{N}]+[\r\n]*
	j := i
	if r == ' ' {
		j++
	}
	if j < len(s) {
		if r2, w2 := runeAt(s, j); classOf(r2) == clsOther {
			j = scanClass(s, j+w2, clsOther)
			for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
				j++
			}
			return j
		}
	}
	// Only whitespace is left: \s*[\r\n]+|\s+(?!\S)|\s+
	return nextSpace(s, i, true)
}

// nextGPT2 returns the end of the piece that starts at s[i] under
// patternGPT2.
func nextGPT2(s string, i int) int {
	r, w := runeAt(s, i)
	if r == '\'' {
		if n := contraction(s[i+1:], false); n > 0 {
			return i + 1 + n
		}
	}
	//  ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+
	if r == ' ' && i+1 < len(s) {
		if r2, w2 := runeAt(s, i+1); classOf(r2) != clsSpace {
			return scanClass(s, i+1+w2, classOf(r2))
		}
	}
	if c := classOf(r); c != clsSpace {
		return scanClass(s, i+w, c)
	}
	return nextSpace(s, i, false)
}

// nextSpace matches the whitespace alternatives at s[i], which must be
// whitespace. With crlf it first tries \s*[\r\n]+ (the run up to its last
// CR or LF); then \s+(?!\S) (the run, less its last rune when a non-space
// follows) and finally \s+.
func nextSpace(s string, i int, crlf bool) int {
	e, last, lastStart, n := i, -1, i, 0
	for e < len(s) {
		r, w := runeAt(s, e)
		if classOf(r) != clsSpace {
			break
		}
		if r == '\r' || r == '\n' {
			last = e
		}
		lastStart = e
		e += w
		n++
	}
	if crlf && last >= 0 {
		return last + 1
	}
	if e == len(s) || n == 1 {
		return e
	}
	return lastStart
}

// contraction returns the length of the contraction suffix ('s, 't, 're,
// 've, 'm, 'll, 'd) at the start of s, which follows an apostrophe, or 0.
// With fold the match is case-insensitive under Unicode simple case folding.
func contraction(s string, fold bool) int {
	if len(s) == 0 {
		return 0
	}
	lower := func(b byte) byte {
		if fold && 'A' <= b && b <= 'Z' {
			return b + 'a' - 'A'
		}
		return b
	}
	switch lower(s[0]) {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if len(s) > 1 && lower(s[1]) == 'e' {
			return 2
		}
	case 'l':
		if len(s) > 1 && lower(s[1]) == 'l' {
			return 2
		}
	}
	// U+017F LATIN SMALL LETTER LONG S folds to 's'.
	if fold && len(s) >= 2 && s[0] == 0xC5 && s[1] == 0xBF {
		return 2
	}
	return 0
}
