package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"

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
		if ks, ok := knownPattern(re); ok && c.Behavior == "Isolated" && !c.Invert {
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

func (t *Tokenizer) hfDecoder(file, field string, raw json.RawMessage) error {
	if isNull(raw) {
		return formatErr(file, field, fmt.Errorf("%w: no decoder", ErrUnsupported))
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return formatErr(file, field, err)
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		if len(c.Decoders) == 1 {
			return t.hfDecoder(file, field+".decoders[0]", c.Decoders[0])
		}
	}
	return formatErr(file, field, fmt.Errorf("%w: decoder %q", ErrUnsupported, c.Type))
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
