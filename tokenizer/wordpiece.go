package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// wpmModel is WordPiece (BERT): a word is cut greedily into the longest
// vocabulary pieces from its start; a word with no complete cut, or longer
// than maxChars characters, is one unk.
type wpmModel struct {
	start map[string]int32 // pieces that may begin a word
	cont  map[string]int32 // pieces that continue one ("##x" in Hugging Face files, "x" in GGUF)
	toID  map[string]int32 // every vocabulary string, as TokenText spells it
	unk   int32
	// maxChars: longer words are unk (Hugging Face's
	// max_input_chars_per_word); 0 for no limit (llama.cpp).
	maxChars int
	// norm is the BertNormalizer's configuration.
	norm bertNorm
}

// bertNorm is Hugging Face's BertNormalizer, or llama.cpp's WPM
// preprocessing (gguf).
type bertNorm struct {
	cleanText, chinese, stripAccents, lowercase bool
	// gguf: llama.cpp's preprocessing: each code point is replaced by the
	// first code point of its NFD decomposition (so precomposed accents
	// are dropped, combining marks kept) and lowercased.
	gguf bool
}

// isBertControl is Hugging Face's is_control: tab, newline and carriage
// return are white space; the other Cc, Cf and Co characters are control.
func isBertControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co)
}

// isBertSpace is Hugging Face's is_whitespace (Unicode White_Space).
func isBertSpace(r rune) bool {
	return unicode.Is(unicode.White_Space, r)
}

// isCJK reports the CJK ideograph blocks BERT splits into single
// characters (Google's _is_chinese_char).
func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

// isBertPunct is BertPreTokenizer's punctuation: ASCII punctuation and
// symbols, and Unicode P*.
func isBertPunct(r rune) bool {
	if r < 0x80 {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	return unicode.IsPunct(r)
}

// normalize applies the normalizer to s.
func (n bertNorm) normalize(s string) string {
	if n.gguf {
		return n.normalizeGGUF(s)
	}
	b := make([]rune, 0, len(s))
	for _, r := range s {
		if n.cleanText {
			if r == 0 || r == utf8.RuneError || isBertControl(r) {
				continue
			}
			if isBertSpace(r) {
				r = ' '
			}
		}
		if n.chinese && isCJK(r) {
			b = append(b, ' ', r, ' ')
			continue
		}
		b = append(b, r)
	}
	out := string(b)
	if n.stripAccents {
		d := norm.NFD.String(out)
		b = b[:0]
		for _, r := range d {
			if !unicode.Is(unicode.Mn, r) {
				b = append(b, r)
			}
		}
		out = string(b)
	}
	if n.lowercase {
		b = b[:0]
		for _, r := range out {
			b = append(b, unicode.ToLower(r))
		}
		out = string(b)
	}
	return out
}

// normalizeGGUF is llama.cpp's WPM preprocessing up to the split: control
// characters, NUL and U+FFFD dropped, white space to ' ', CJK ideographs
// spaced out, the first code point of each NFD decomposition, lowercased.
func (n bertNorm) normalizeGGUF(s string) string {
	b := make([]rune, 0, len(s))
	var buf [utf8.UTFMax]byte
	for _, r := range s {
		k := utf8.EncodeRune(buf[:], r)
		if d := norm.NFD.Bytes(buf[:k]); len(d) > 0 {
			r, _ = utf8.DecodeRune(d)
		}
		switch {
		case isBertSpace(r):
			b = append(b, ' ')
		case r == 0 || r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf):
		case isCJK(r):
			b = append(b, ' ', r, ' ')
		default:
			b = append(b, unicode.ToLower(r))
		}
	}
	return string(b)
}

// bertSplit is BertPreTokenizer: words split at white space, each
// punctuation character a word of its own.
func bertSplit(s string, emit func(string)) {
	start := -1
	for i, r := range s {
		switch {
		case isBertSpace(r):
			if start >= 0 {
				emit(s[start:i])
				start = -1
			}
		case isBertPunct(r):
			if start >= 0 {
				emit(s[start:i])
				start = -1
			}
			emit(s[i : i+utf8.RuneLen(r)])
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		emit(s[start:])
	}
}

// encodeWord appends the pieces of one word.
func (m *wpmModel) encodeWord(w string, out []int32) []int32 {
	if m.maxChars > 0 && utf8.RuneCountInString(w) > m.maxChars {
		return append(out, m.unk)
	}
	n := len(out)
	for i := 0; i < len(w); {
		table := m.start
		if i > 0 {
			table = m.cont
		}
		found := false
		for j := len(w); j > i; {
			if id, ok := table[w[i:j]]; ok {
				out = append(out, id)
				i = j
				found = true
				break
			}
			// back off one whole character
			_, k := utf8.DecodeLastRuneInString(w[i:j])
			j -= k
		}
		if !found {
			return append(out[:n], m.unk)
		}
	}
	return out
}

// encodeWPM tokenizes text with WordPiece: added tokens matched in the raw
// text, then the normalizer, the BERT pre-tokenizer and WordPiece.
func (t *Tokenizer) encodeWPM(text string, specialAsText bool, out []int32) []int32 {
	t.added.split(text, false, specialAsText, func(seg string, id int32) {
		if id >= 0 {
			out = append(out, id)
			return
		}
		bertSplit(t.wpm.norm.normalize(seg), func(w string) {
			out = t.wpm.encodeWord(w, out)
		})
	})
	return out
}

// hfWordPiece is the part of a tokenizer.json's model and normalizer that
// WordPiece reads.
type hfWordPiece struct {
	MaxInputCharsPerWord *int `json:"max_input_chars_per_word"`
}

type hfBertNormalizer struct {
	Type               string `json:"type"`
	CleanText          *bool  `json:"clean_text"`
	HandleChineseChars *bool  `json:"handle_chinese_chars"`
	StripAccents       *bool  `json:"strip_accents"`
	Lowercase          *bool  `json:"lowercase"`
}

// fromHFWordPiece builds a WordPiece tokenizer.json: BertNormalizer (or
// none), BertPreTokenizer, WordPiece, a TemplateProcessing or BertProcessing
// post-processor and the WordPiece decoder.
func fromHFWordPiece(file string, f *hfFile, model []byte, cfgFile string, cfgData []byte) (*Tokenizer, error) {
	prefix := "##"
	if p := f.Model.ContinuingSubwordPrefix; p != nil {
		prefix = *p
	}
	if prefix == "" {
		return nil, formatErrf(file, "model.continuing_subword_prefix", "empty")
	}
	var wp hfWordPiece
	if err := json.Unmarshal(model, &wp); err != nil {
		return nil, formatErr(file, "model", err)
	}
	m := &wpmModel{start: make(map[string]int32, len(f.Model.Vocab)), cont: make(map[string]int32), toID: make(map[string]int32, len(f.Model.Vocab)), unk: -1, maxChars: 100}
	if wp.MaxInputCharsPerWord != nil {
		if *wp.MaxInputCharsPerWord < 1 {
			return nil, formatErrf(file, "model.max_input_chars_per_word", "%d", *wp.MaxInputCharsPerWord)
		}
		m.maxChars = *wp.MaxInputCharsPerWord
	}
	size := 0
	for s, id := range f.Model.Vocab {
		if id < 0 || id >= maxVocab {
			return nil, formatErrf(file, "model.vocab", "token %q has id %d out of range", s, id)
		}
		size = max(size, int(id)+1)
	}
	for i, a := range f.AddedTokens {
		if a.ID < 0 || a.ID >= maxVocab {
			return nil, formatErrf(file, fmt.Sprintf("added_tokens[%d].id", i), "id %d out of range", a.ID)
		}
		size = max(size, int(a.ID)+1)
	}
	if n := len(f.Model.Vocab) + len(f.AddedTokens); size > 2*n+256 {
		return nil, formatErrf(file, "model.vocab", "largest id %d is far beyond the %d tokens", size-1, n)
	}
	t := &Tokenizer{kind: modelWPM, wpm: m, bos: -1, stripSpace: true,
		texts: make([]string, size), pieces: make([]string, size), special: make([]bool, size)}
	for s, id := range f.Model.Vocab {
		t.texts[id] = s
		m.start[s] = int32(id)
		m.toID[s] = int32(id)
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			m.cont[rest] = int32(id)
		}
	}
	if u := f.Model.UnkToken; u != nil {
		id, ok := f.Model.Vocab[*u]
		if !ok {
			return nil, formatErrf(file, "model.unk_token", "%q is not in the vocabulary", *u)
		}
		m.unk = int32(id)
	} else {
		return nil, formatErrf(file, "model.unk_token", "missing")
	}
	var added []addedToken
	for _, a := range f.AddedTokens {
		t.texts[a.ID] = a.Content
		m.toID[a.Content] = int32(a.ID)
		t.special[a.ID] = a.Special
		added = append(added, addedToken{text: a.Content, id: int32(a.ID), special: a.Special, lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord, normalized: a.Normalized})
	}
	t.added = newAddedMatcher(added)
	if t.added.has[1] > 0 {
		return nil, formatErr(file, "added_tokens", fmt.Errorf("%w: normalized added tokens with WordPiece", ErrUnsupported))
	}
	if err := t.wpmNormalizer(file, f.Normalizer); err != nil {
		return nil, err
	}
	if !isNull(f.PreTokenizer) {
		var c hfComponent
		if err := json.Unmarshal(f.PreTokenizer, &c); err != nil {
			return nil, formatErr(file, "pre_tokenizer", err)
		}
		if c.Type != "BertPreTokenizer" {
			return nil, formatErr(file, "pre_tokenizer", fmt.Errorf("%w: %q with WordPiece", ErrUnsupported, c.Type))
		}
	}
	if !isNull(f.Decoder) {
		var c hfComponent
		if err := json.Unmarshal(f.Decoder, &c); err != nil {
			return nil, formatErr(file, "decoder", err)
		}
		if c.Type != "WordPiece" {
			return nil, formatErr(file, "decoder", fmt.Errorf("%w: %q with WordPiece", ErrUnsupported, c.Type))
		}
	}
	// The WordPiece decoder: "##" pieces glued, others after a space (the
	// first one's dropped: stripSpace); its cleanup drops the space before
	// . ? ! and , token by token.
	for id, s := range t.texts {
		switch {
		case strings.HasPrefix(s, prefix) && !t.special[id]:
			t.pieces[id] = s[len(prefix):]
		case s == "." || s == "?" || s == "!" || s == ",":
			t.pieces[id] = s
		default:
			t.pieces[id] = " " + s
		}
	}
	if err := t.hfPostProcessor(file, "post_processor", f.PostProcessor); err != nil {
		return nil, err
	}
	if cfgData != nil {
		if err := t.hfConfig(cfgFile, cfgData); err != nil {
			return nil, err
		}
	}
	if len(t.prefix) > 0 {
		t.bos = t.prefix[0]
	}
	t.eos = t.withEOGTokens(t.eos)
	return t, nil
}

// wpmNormalizer reads a BertNormalizer (null: none).
func (t *Tokenizer) wpmNormalizer(file string, raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c hfBertNormalizer
	if err := json.Unmarshal(raw, &c); err != nil {
		return formatErr(file, "normalizer", err)
	}
	if c.Type != "BertNormalizer" {
		return formatErr(file, "normalizer", fmt.Errorf("%w: %q with WordPiece", ErrUnsupported, c.Type))
	}
	on := func(p *bool) bool { return p == nil || *p }
	n := bertNorm{cleanText: on(c.CleanText), chinese: on(c.HandleChineseChars), lowercase: on(c.Lowercase)}
	// strip_accents null follows lowercase.
	n.stripAccents = n.lowercase
	if c.StripAccents != nil {
		n.stripAccents = *c.StripAccents
	}
	t.wpm.norm = n
	return nil
}

// ggufWPM sets up a GGUF "bert" vocabulary: llama.cpp's converter stores
// word-initial pieces as "▁w", continuations as "w" and control tokens as
// they are.
func (t *Tokenizer) ggufWPM(m *ggufMeta, types []int32) {
	t.kind = modelWPM
	t.stripSpace = true
	w := &wpmModel{start: make(map[string]int32), cont: make(map[string]int32), toID: make(map[string]int32, len(t.texts)),
		unk: m.id("tokenizer.ggml.unknown_token_id", len(t.texts)), norm: bertNorm{gguf: true}}
	t.wpm = w
	for i, s := range t.texts {
		id := int32(i)
		w.toID[s] = id
		switch types[i] {
		case ggufControl, ggufUnknown, ggufUserDefined:
			t.pieces[i] = s
			continue
		}
		if rest, ok := strings.CutPrefix(s, "▁"); ok {
			w.start[rest] = id
			t.pieces[i] = " " + rest
		} else {
			w.cont[s] = id
			t.pieces[i] = s
		}
	}
	if w.unk < 0 {
		if id, ok := w.toID["[UNK]"]; ok {
			w.unk = id
		} else {
			w.unk = 100
		}
	}
}

// ggufWPMSpecials sets what AddSpecial adds for a GGUF bert vocabulary:
// bos ([CLS], 101 by default) first and the separator ([SEP], 102) last, as
// llama.cpp's WPM does.
func (t *Tokenizer) ggufWPMSpecials(m *ggufMeta) {
	n := len(t.texts)
	if t.bos < 0 && n > 101 {
		t.bos = 101
	}
	sep := m.id("tokenizer.ggml.seperator_token_id", n)
	if sep < 0 && n > 102 {
		sep = 102
	}
	t.prefix, t.suffix = nil, nil
	if t.bos >= 0 {
		t.prefix = []int32{t.bos}
	}
	if sep >= 0 {
		t.suffix = []int32{sep}
	}
}
