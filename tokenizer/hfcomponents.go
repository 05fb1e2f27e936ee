package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// hfComponent is any normalizer, pre-tokenizer, post-processor or decoder.
type hfComponent struct {
	Type           string            `json:"type"`
	Normalizers    []json.RawMessage `json:"normalizers"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Processors     []json.RawMessage `json:"processors"`
	Decoders       []json.RawMessage `json:"decoders"`
	Pattern        json.RawMessage   `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
	Prepend        *string           `json:"prepend"`
	Content        *string           `json:"content"`
	Replacement    *string           `json:"replacement"`
	PrependScheme  *string           `json:"prepend_scheme"`
	Split          *bool             `json:"split"`
	Start          int               `json:"start"`
	Stop           int               `json:"stop"`
	Single         []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int64 `json:"ids"`
	} `json:"special_tokens"`
}

func isNull(raw json.RawMessage) bool {
	r := bytes.TrimSpace(raw)
	return len(r) == 0 || string(r) == "null"
}

func (t *Tokenizer) hfNormalizer(file, field string, raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return formatErr(file, field, err)
	}
	forms := map[string]norm.Form{"NFC": norm.NFC, "NFD": norm.NFD, "NFKC": norm.NFKC, "NFKD": norm.NFKD}
	if f, ok := forms[c.Type]; ok {
		if t.normalize && t.normForm != f {
			return formatErr(file, field, fmt.Errorf("%w: two Unicode normal forms", ErrUnsupported))
		}
		t.normalize, t.normForm = true, f
		t.normOps = append(t.normOps, normOp{form: f, isForm: true})
		return nil
	}
	switch c.Type {
	case "Prepend":
		if c.Prepend == nil {
			return formatErrf(file, field+".prepend", "missing")
		}
		t.normOps = append(t.normOps, normOp{prepend: *c.Prepend})
		return nil
	case "Replace":
		from, err := stringPattern(file, field, c.Pattern)
		if err != nil {
			return err
		}
		if c.Content == nil {
			return formatErrf(file, field+".content", "missing")
		}
		t.normOps = append(t.normOps, normOp{from: from, to: *c.Content, isReplace: true})
		return nil
	}
	if c.Type == "Sequence" {
		for i, n := range c.Normalizers {
			if err := t.hfNormalizer(file, fmt.Sprintf("%s.normalizers[%d]", field, i), n); err != nil {
				return err
			}
		}
		return nil
	}
	return formatErr(file, field, fmt.Errorf("%w: normalizer %q", ErrUnsupported, c.Type))
}

// hfPreTokenizer appends the splitters of a pre-tokenizer and reports
// whether it includes the ByteLevel step.
func (t *Tokenizer) hfPreTokenizer(file, field string, raw json.RawMessage) (bool, error) {
	if isNull(raw) {
		return false, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return false, formatErr(file, field, err)
	}
	switch c.Type {
	case "Sequence":
		byteLevel := false
		for i, p := range c.Pretokenizers {
			bl, err := t.hfPreTokenizer(file, fmt.Sprintf("%s.pretokenizers[%d]", field, i), p)
			if err != nil {
				return false, err
			}
			byteLevel = byteLevel || bl
		}
		return byteLevel, nil
	case "Metaspace":
		if t.metaspace != nil {
			return false, formatErr(file, field, fmt.Errorf("%w: two Metaspace pre-tokenizers", ErrUnsupported))
		}
		ms := &metaspace{replacement: spmSpace, scheme: "always", split: true}
		if c.Replacement != nil {
			if utf8.RuneCountInString(*c.Replacement) != 1 {
				return false, formatErrf(file, field+".replacement", "%q is not one character", *c.Replacement)
			}
			ms.replacement = *c.Replacement
		}
		if c.Split != nil {
			ms.split = *c.Split
		}
		switch {
		case c.PrependScheme != nil:
			ms.scheme = *c.PrependScheme
		case !c.AddPrefixSpace && bytes.Contains(raw, []byte(`"add_prefix_space"`)):
			ms.scheme = "never"
		}
		if ms.scheme != "always" && ms.scheme != "first" && ms.scheme != "never" {
			return false, formatErrf(file, field+".prepend_scheme", "unknown scheme %q", ms.scheme)
		}
		t.metaspace = ms
		return false, nil
	case "ByteLevel":
		if c.AddPrefixSpace {
			t.pre = append(t.pre, prefixSpace{})
		}
		if c.UseRegex == nil || *c.UseRegex {
			t.pre = append(t.pre, patternSplitter{kindGPT2})
		}
		return true, nil
	case "Split":
		var pat struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		}
		if err := json.Unmarshal(c.Pattern, &pat); err != nil {
			return false, formatErr(file, field+".pattern", err)
		}
		var re string
		switch {
		case pat.Regex != nil:
			re = *pat.Regex
		case pat.String != nil:
			re = regexp2.Escape(*pat.String)
		default:
			return false, formatErrf(file, field+".pattern", "neither Regex nor String")
		}
		// A known pattern matches at every position, so keeping its
		// matches and removing the gaps (Removed, inverted: o200k's
		// form) is its Isolated split.
		if ks, ok := knownPattern(re); ok && (c.Behavior == "Isolated" && !c.Invert || c.Behavior == "Removed" && c.Invert) {
			t.pre = append(t.pre, ks)
			return false, nil
		}
		rs, err := newRegexSplitter(re, c.Behavior, c.Invert)
		if err != nil {
			return false, formatErr(file, field, err)
		}
		rs.file, rs.field = file, field+".pattern"
		t.pre = append(t.pre, rs)
		return false, nil
	}
	return false, formatErr(file, field, fmt.Errorf("%w: pre-tokenizer %q", ErrUnsupported, c.Type))
}

// prefixSpace is ByteLevel's add_prefix_space: a space before every piece
// that does not start with one.
type prefixSpace struct{}

func (prefixSpace) split(s string, emit func(string)) error {
	if s != "" && s[0] != ' ' {
		s = " " + s
	}
	emit(s)
	return nil
}

// hfDecodeSteps is what the decoder of a literal (SentencePiece-style)
// vocabulary does, in the order Hugging Face's Llama decoder runs it:
// Replace '▁' by ' ', ByteFallback, Fuse, Strip one leading space.
type hfDecodeSteps struct {
	replace      bool // '▁' -> ' '
	byteFallback bool // <0xNN> -> the byte
	fused        bool
	strip        bool // one leading space of the whole text
}

// piece is the text a token decodes to.
func (d *hfDecodeSteps) piece(s string) string {
	if d.replace {
		s = strings.ReplaceAll(s, spmSpace, " ")
	}
	if d.byteFallback {
		if b, ok := byteToken(s); ok {
			return string([]byte{b})
		}
	}
	return s
}

// byteToken parses a byte-fallback token <0xNN>, as Hugging Face's
// ByteFallback decoder does.
func byteToken(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[3:5], 16, 8)
	return byte(v), err == nil
}

func (t *Tokenizer) hfDecoder(file, field string, raw json.RawMessage, literal bool, d *hfDecodeSteps) error {
	if isNull(raw) {
		return formatErr(file, field, fmt.Errorf("%w: no decoder", ErrUnsupported))
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return formatErr(file, field, err)
	}
	unsupported := func(what string) error {
		return formatErr(file, field, fmt.Errorf("%w: decoder %q%s", ErrUnsupported, c.Type, what))
	}
	if !literal {
		switch c.Type {
		case "ByteLevel":
			return nil
		case "Sequence":
			if len(c.Decoders) == 1 {
				return t.hfDecoder(file, field+".decoders[0]", c.Decoders[0], literal, d)
			}
		}
		return unsupported("")
	}
	// A step that changes the text after Strip, or runs before an earlier
	// step, is refused: the pieces are computed once, per token.
	if d.strip {
		return unsupported(" after Strip")
	}
	switch c.Type {
	case "Sequence":
		for i, sub := range c.Decoders {
			if err := t.hfDecoder(file, fmt.Sprintf("%s.decoders[%d]", field, i), sub, literal, d); err != nil {
				return err
			}
		}
		return nil
	case "Replace":
		from, err := stringPattern(file, field, c.Pattern)
		if err != nil {
			return err
		}
		if from != spmSpace || c.Content == nil || *c.Content != " " || d.replace || d.byteFallback || d.fused {
			return unsupported(" other than '▁' to ' ' first")
		}
		d.replace = true
		return nil
	case "ByteFallback":
		if d.fused {
			return unsupported(" after Fuse")
		}
		d.byteFallback = true
		return nil
	case "Fuse":
		d.fused = true
		return nil
	case "Strip":
		if c.Content == nil || *c.Content != " " || c.Start > 1 || c.Stop != 0 || (c.Start == 1 && !d.fused) {
			return unsupported(" other than one leading space of the fused text")
		}
		d.strip = c.Start == 1
		return nil
	case "Metaspace":
		if d.replace || d.byteFallback || d.fused {
			return unsupported(" after other steps")
		}
		if c.Replacement != nil && *c.Replacement != spmSpace {
			return unsupported(" with a replacement other than '▁'")
		}
		d.replace = true
		scheme := "always"
		if c.PrependScheme != nil {
			scheme = *c.PrependScheme
		} else if !c.AddPrefixSpace && bytes.Contains(raw, []byte(`"add_prefix_space"`)) {
			scheme = "never"
		}
		d.fused = true
		d.strip = scheme != "never"
		return nil
	}
	return unsupported("")
}

// stringPattern reads a Replace pattern given as {"String": s}.
func stringPattern(file, field string, raw json.RawMessage) (string, error) {
	var pat struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	if err := json.Unmarshal(raw, &pat); err != nil {
		return "", formatErr(file, field+".pattern", err)
	}
	if pat.String == nil {
		return "", formatErr(file, field+".pattern", fmt.Errorf("%w: Replace with a regex", ErrUnsupported))
	}
	if *pat.String == "" {
		return "", formatErrf(file, field+".pattern", "empty pattern")
	}
	return *pat.String, nil
}

// normOp is one normalizer step: a Unicode normal form, Prepend (to a
// non-empty text) or Replace of a fixed string.
type normOp struct {
	form      norm.Form
	isForm    bool
	prepend   string
	from, to  string
	isReplace bool
}

func (o normOp) apply(s string) string {
	switch {
	case o.isForm:
		return o.form.String(s)
	case o.isReplace:
		return strings.ReplaceAll(s, o.from, o.to)
	case s != "":
		return o.prepend + s
	}
	return s
}

// metaspace is the Metaspace pre-tokenizer: spaces become the replacement
// character, which is prepended (scheme "always", or "first" for text at
// the start of the input) unless the text starts with it; split cuts the
// text before each replacement character.
type metaspace struct {
	replacement string
	scheme      string
	split       bool
}

func (m *metaspace) run(s string, inputStart bool, emit func(string)) {
	s = strings.ReplaceAll(s, " ", m.replacement)
	if s != "" && !strings.HasPrefix(s, m.replacement) && (m.scheme == "always" || (m.scheme == "first" && inputStart)) {
		s = m.replacement + s
	}
	if !m.split {
		if s != "" {
			emit(s)
		}
		return
	}
	start := 0
	for i := 0; ; {
		j := strings.Index(s[i:], m.replacement)
		if j < 0 {
			break
		}
		if k := i + j; k > start {
			emit(s[start:k])
			start = k
		}
		i += j + len(m.replacement)
	}
	if start < len(s) {
		emit(s[start:])
	}
}

func (t *Tokenizer) hfPostProcessor(file, field string, raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return formatErr(file, field, err)
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for i, p := range c.Processors {
			if err := t.hfPostProcessor(file, fmt.Sprintf("%s.processors[%d]", field, i), p); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		t.prefix, t.suffix = nil, nil
		seen := false
		for i, it := range c.Single {
			switch {
			case it.Sequence != nil:
				if seen {
					return formatErrf(file, fmt.Sprintf("%s.single[%d]", field, i), "two sequences")
				}
				seen = true
			case it.SpecialToken != nil:
				st, ok := c.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return formatErrf(file, fmt.Sprintf("%s.single[%d]", field, i), "special token %q not in special_tokens", it.SpecialToken.ID)
				}
				for _, id := range st.IDs {
					if id < 0 || id >= int64(len(t.texts)) {
						return formatErrf(file, fmt.Sprintf("%s.special_tokens[%q]", field, it.SpecialToken.ID), "id %d out of range", id)
					}
					if seen {
						t.suffix = append(t.suffix, int32(id))
					} else {
						t.prefix = append(t.prefix, int32(id))
					}
				}
			default:
				return formatErrf(file, fmt.Sprintf("%s.single[%d]", field, i), "neither Sequence nor SpecialToken")
			}
		}
		return nil
	}
	return formatErr(file, field, fmt.Errorf("%w: post-processor %q", ErrUnsupported, c.Type))
}
