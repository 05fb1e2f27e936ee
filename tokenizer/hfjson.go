package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// hfFile is the part of a Hugging Face tokenizer.json this package reads.
type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         struct {
		Type                    string            `json:"type"`
		Vocab                   map[string]int64  `json:"vocab"`
		Merges                  []json.RawMessage `json:"merges"`
		UnkToken                *string           `json:"unk_token"`
		ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
		ByteFallback            bool              `json:"byte_fallback"`
		IgnoreMerges            bool              `json:"ignore_merges"`
		Dropout                 *float64          `json:"dropout"`
	} `json:"model"`
}

type hfAddedToken struct {
	ID         int64  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

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

// hfConfig is the part of tokenizer_config.json this package reads.
type hfConfig struct {
	BOSToken     json.RawMessage `json:"bos_token"`
	EOSToken     json.RawMessage `json:"eos_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
	CleanUp      *bool           `json:"clean_up_tokenization_spaces"`
}

// maxVocab bounds token ids so that a corrupt file cannot ask for a huge
// allocation.
const maxVocab = 1 << 24

// FromHFJSON builds a tokenizer from the contents of a Hugging Face
// tokenizer.json and, optionally (nil), tokenizer_config.json, which
// supplies the BOS/EOS tokens and the chat template.
func FromHFJSON(tokenizerJSON, tokenizerConfigJSON []byte) (*Tokenizer, error) {
	return fromHF("tokenizer.json", tokenizerJSON, "tokenizer_config.json", tokenizerConfigJSON, nil)
}

// FromHFDir loads tokenizer.json, tokenizer_config.json (optional),
// generation_config.json (optional, for its eos_token_id list) and
// chat_template.jinja (optional) from dir. A path to a tokenizer.json file
// is accepted too.
func FromHFDir(dir string) (*Tokenizer, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		dir = filepath.Dir(dir)
	}
	tj := filepath.Join(dir, "tokenizer.json")
	data, err := os.ReadFile(tj)
	if err != nil {
		return nil, err
	}
	opt := func(name string) ([]byte, string, error) {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, p, nil
		}
		return b, p, err
	}
	cfg, cfgName, err := opt("tokenizer_config.json")
	if err != nil {
		return nil, err
	}
	gen, genName, err := opt("generation_config.json")
	if err != nil {
		return nil, err
	}
	t, err := fromHF(tj, data, cfgName, cfg, nil)
	if err != nil {
		return nil, err
	}
	if gen != nil {
		if err := t.addGenerationEOS(genName, gen); err != nil {
			return nil, err
		}
	}
	tmpl, _, err := opt("chat_template.jinja")
	if err != nil {
		return nil, err
	}
	if tmpl != nil && t.chatTemplate == "" {
		t.chatTemplate = string(tmpl)
	}
	return t, nil
}

func jsonErr(file string, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &formatError{File: file, Field: "JSON", Offset: se.Offset, Err: err}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &formatError{File: file, Field: te.Field, Offset: te.Offset, Err: err}
	}
	return formatErr(file, "JSON", err)
}

func fromHF(file string, data []byte, cfgFile string, cfgData []byte, _ []byte) (*Tokenizer, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, jsonErr(file, err)
	}
	if f.Model.Type != "BPE" && !(f.Model.Type == "" && f.Model.Merges != nil) {
		return nil, formatErr(file, "model.type", fmt.Errorf("%w: model %q (only BPE)", ErrUnsupported, f.Model.Type))
	}
	if p := f.Model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, formatErr(file, "model.continuing_subword_prefix", ErrUnsupported)
	}
	if p := f.Model.EndOfWordSuffix; p != nil && *p != "" {
		return nil, formatErr(file, "model.end_of_word_suffix", ErrUnsupported)
	}
	if d := f.Model.Dropout; d != nil && *d != 0 {
		return nil, formatErr(file, "model.dropout", ErrUnsupported)
	}
	if f.Model.ByteFallback {
		return nil, formatErr(file, "model.byte_fallback", fmt.Errorf("%w: byte fallback (SentencePiece-style BPE)", ErrUnsupported))
	}

	t := &Tokenizer{kind: modelBPE, bos: -1}
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
	t.texts = make([]string, size)
	t.pieces = make([]string, size)
	t.special = make([]bool, size)

	bpe := &bpeModel{rawID: make(map[string]int32, len(f.Model.Vocab)), merges: make(map[uint64]merge, len(f.Model.Merges)), ignoreMerges: f.Model.IgnoreMerges}
	t.bpe = bpe
	for s, id := range f.Model.Vocab {
		t.texts[id] = s
		t.pieces[id] = string(byteLevelDecode(s))
		if raw, ok := byteLevelRaw(s); ok {
			bpe.rawID[string(raw)] = int32(id)
		}
	}
	for b := 0; b < 256; b++ {
		bpe.byteID[b] = -1
		if id, ok := bpe.rawID[string([]byte{byte(b)})]; ok {
			bpe.byteID[b] = id
		}
	}
	vocabID := func(s string) (int32, bool) {
		id, ok := f.Model.Vocab[s]
		return int32(id), ok
	}
	for i, raw := range f.Model.Merges {
		a, b, err := parseMerge(raw)
		if err != nil {
			return nil, formatErr(file, fmt.Sprintf("model.merges[%d]", i), err)
		}
		ia, oka := vocabID(a)
		ib, okb := vocabID(b)
		im, okm := vocabID(a + b)
		if !oka || !okb || !okm {
			return nil, formatErrf(file, fmt.Sprintf("model.merges[%d]", i), "merge %q %q uses a token not in the vocabulary", a, b)
		}
		bpe.merges[pairKey(ia, ib)] = merge{int32(i), im}
	}

	var added []addedToken
	for _, a := range f.AddedTokens {
		t.texts[a.ID] = a.Content
		t.pieces[a.ID] = string(byteLevelDecode(a.Content))
		t.special[a.ID] = a.Special
		added = append(added, addedToken{text: a.Content, id: int32(a.ID), special: a.Special, lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord, normalized: a.Normalized})
	}
	t.added = newAddedMatcher(added)

	if err := t.hfNormalizer(file, "normalizer", f.Normalizer); err != nil {
		return nil, err
	}
	byteLevel, err := t.hfPreTokenizer(file, "pre_tokenizer", f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, formatErr(file, "pre_tokenizer", fmt.Errorf("%w: BPE without a ByteLevel pre-tokenizer", ErrUnsupported))
	}
	if err := t.hfDecoder(file, "decoder", f.Decoder); err != nil {
		return nil, err
	}
	if err := t.hfPostProcessor(file, "post_processor", f.PostProcessor); err != nil {
		return nil, err
	}
	if cfgData != nil {
		if err := t.hfConfig(cfgFile, cfgData); err != nil {
			return nil, err
		}
	}
	t.eos = t.withEOGTokens(t.eos)
	return t, nil
}

// parseMerge reads a merge given as "a b" or ["a", "b"].
func parseMerge(raw json.RawMessage) (string, string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", "", err
		}
		a, b, ok := strings.Cut(s, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return "", "", fmt.Errorf("merge %q is not two tokens separated by a space", s)
		}
		return a, b, nil
	}
	var p []string
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", "", err
	}
	if len(p) != 2 {
		return "", "", fmt.Errorf("merge has %d parts, want 2", len(p))
	}
	return p[0], p[1], nil
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
		t.pre = append(t.pre, rs)
		return false, nil
	}
	return false, formatErr(file, field, fmt.Errorf("%w: pre-tokenizer %q", ErrUnsupported, c.Type))
}

// prefixSpace is ByteLevel's add_prefix_space: a space before every piece
// that does not start with one.
type prefixSpace struct{}

func (prefixSpace) split(s string, emit func(string)) {
	if s != "" && s[0] != ' ' {
		s = " " + s
	}
	emit(s)
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

// tokenString reads a special-token entry of tokenizer_config.json: a
// string, an AddedToken object with "content", or null.
func tokenString(raw json.RawMessage) (string, bool, error) {
	if isNull(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", false, errors.New("neither a string nor an object with content")
	}
	return *obj.Content, true, nil
}

func (t *Tokenizer) hfConfig(file string, data []byte) error {
	var c hfConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return jsonErr(file, err)
	}
	bos, ok, err := tokenString(c.BOSToken)
	if err != nil {
		return formatErr(file, "bos_token", err)
	}
	if ok {
		t.bosToken, t.hasBOSToken = bos, true
		if id, found := t.TokenID(bos); found {
			t.bos = id
		}
	}
	eos, ok, err := tokenString(c.EOSToken)
	if err != nil {
		return formatErr(file, "eos_token", err)
	}
	if ok {
		t.eosToken, t.hasEOSToken = eos, true
		if id, found := t.TokenID(eos); found {
			t.eos = append(t.eos, id)
		}
	}
	// transformers defaults clean_up_tokenization_spaces to false since
	// v4.45; older configs spell it out.
	t.cleanUp = c.CleanUp != nil && *c.CleanUp
	tmpl, err := chatTemplateField(c.ChatTemplate)
	if err != nil {
		return formatErr(file, "chat_template", err)
	}
	t.chatTemplate = tmpl
	return nil
}

// chatTemplateField reads chat_template: a string, or a list of
// {"name", "template"} of which "default" is used.
func chatTemplateField(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", errors.New("neither a string nor a list of named templates")
	}
	for _, e := range list {
		if e.Name == "default" {
			return e.Template, nil
		}
	}
	if len(list) > 0 {
		return list[0].Template, nil
	}
	return "", nil
}

// addGenerationEOS adds generation_config.json's eos_token_id (a number or
// a list) to the end-of-generation ids.
func (t *Tokenizer) addGenerationEOS(file string, data []byte) error {
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return jsonErr(file, err)
	}
	if isNull(g.EOS) {
		return nil
	}
	var ids []int64
	var one int64
	if err := json.Unmarshal(g.EOS, &one); err == nil {
		ids = []int64{one}
	} else if err := json.Unmarshal(g.EOS, &ids); err != nil {
		return formatErr(file, "eos_token_id", errors.New("neither a number nor a list of numbers"))
	}
	for _, id := range ids {
		if id < 0 || id >= int64(len(t.texts)) {
			return formatErrf(file, "eos_token_id", "id %d out of range", id)
		}
		t.eos = append(t.eos, int32(id))
	}
	t.eos = t.withEOGTokens(t.eos)
	return nil
}

// eogNames are token texts that end generation in the models llama.cpp
// knows; like llama.cpp, any special token with one of these texts is an
// end-of-generation id.
var eogNames = []string{
	"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
	"<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "<|return|>",
	"<|call|>", "<end_of_utterance>",
}

// withEOGTokens returns eos (primary first, deduplicated) followed by every
// special token named in eogNames.
func (t *Tokenizer) withEOGTokens(eos []int32) []int32 {
	out := make([]int32, 0, len(eos)+4)
	seen := map[int32]bool{}
	add := func(id int32) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, id := range eos {
		add(id)
	}
	for _, name := range eogNames {
		for _, tok := range t.addedTokens() {
			if tok.text == name && tok.special {
				add(tok.id)
			}
		}
	}
	return out
}
