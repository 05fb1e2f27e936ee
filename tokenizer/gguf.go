package tokenizer

import (
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"

	"wasmllm/loader"
)

// GGUF token types (tokenizer.ggml.token_type).
const (
	ggufNormal      = 1
	ggufUnknown     = 2
	ggufControl     = 3
	ggufUserDefined = 4
	ggufUnused      = 5
	ggufByte        = 6
)

// ggufPre describes a tokenizer.ggml.pre value: its splitter, whether it
// emits whole-word tokens before merging, whether it adds BOS by default,
// and whether the Hugging Face tokenizer normalises to NFC.
type ggufPre struct {
	split        patternKind
	ignoreMerges bool
	addBOS       bool
	nfc          bool
}

var ggufPres = map[string]ggufPre{
	"llama-bpe":        {split: kindLlama3, ignoreMerges: true, addBOS: true},
	"llama3":           {split: kindLlama3, ignoreMerges: true, addBOS: true},
	"llama-v3":         {split: kindLlama3, ignoreMerges: true, addBOS: true},
	"qwen2":            {split: kindQwen2, nfc: true},
	"deepseek-r1-qwen": {split: kindQwen2, nfc: true},
	"qwen35":           {split: kindQwen35}, // no NFC: Qwen3.5 keeps decomposed accents
	"gpt-2":            {split: kindGPT2},
	"gpt-4o":           {split: kindO200k}, // o200k: GPT-4o, Phi-4-mini
}

// ggufMeta reads typed tokenizer metadata, remembering the first error.
type ggufMeta struct {
	g   *loader.GGUF
	err error
}

func (m *ggufMeta) fail(key string, err error) {
	if m.err == nil {
		m.err = &loader.FormatError{File: m.g.File, Field: "metadata " + key, Offset: -1, Err: err}
	}
}

func (m *ggufMeta) str(key string) (string, bool) {
	v, ok := m.g.Meta[key]
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		m.fail(key, fmt.Errorf("%w: %T, want string", loader.ErrCorrupt, v))
	}
	return s, ok
}

func (m *ggufMeta) boolean(key string, def bool) bool {
	v, ok := m.g.Meta[key]
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		m.fail(key, fmt.Errorf("%w: %T, want bool", loader.ErrCorrupt, v))
	}
	return b
}

// id reads a token id key; absent, or the "none" value 0xFFFFFFFF / -1,
// gives -1. An id outside the vocabulary is an error.
func (m *ggufMeta) id(key string, n int) int32 {
	v, ok := m.g.Meta[key]
	if !ok {
		return -1
	}
	var x int64
	switch t := v.(type) {
	case uint32:
		if t == 0xFFFFFFFF {
			return -1
		}
		x = int64(t)
	case int32:
		x = int64(t)
	case uint64:
		if t > 1<<40 {
			return -1
		}
		x = int64(t)
	case int64:
		x = t
	default:
		m.fail(key, fmt.Errorf("%w: %T, want an integer", loader.ErrCorrupt, v))
		return -1
	}
	if x < 0 {
		return -1
	}
	if x >= int64(n) {
		m.fail(key, fmt.Errorf("%w: id %d with %d tokens", loader.ErrCorrupt, x, n))
		return -1
	}
	return int32(x)
}

// FromGGUF builds the tokenizer embedded in a GGUF file's tokenizer.ggml.*
// metadata, including tokenizer.chat_template.
func FromGGUF(g *loader.GGUF) (*Tokenizer, error) {
	m := &ggufMeta{g: g}
	model, ok := m.str("tokenizer.ggml.model")
	if m.err != nil {
		return nil, m.err
	}
	if !ok {
		return nil, &loader.FormatError{File: g.File, Field: "metadata tokenizer.ggml.model", Offset: -1, Err: loader.ErrNotFound}
	}
	tokens, ok := g.Meta["tokenizer.ggml.tokens"].([]string)
	if !ok {
		m.fail("tokenizer.ggml.tokens", fmt.Errorf("%w: missing or not a string array", loader.ErrCorrupt))
		return nil, m.err
	}
	if len(tokens) == 0 || len(tokens) > maxVocab {
		m.fail("tokenizer.ggml.tokens", fmt.Errorf("%w: %d tokens", loader.ErrTooLarge, len(tokens)))
		return nil, m.err
	}
	n := len(tokens)
	types := make([]int32, n)
	for i := range types {
		types[i] = ggufNormal
	}
	if v, ok := g.Meta["tokenizer.ggml.token_type"]; ok {
		tt, ok := v.([]int32)
		if !ok || len(tt) != n {
			m.fail("tokenizer.ggml.token_type", fmt.Errorf("%w: want %d int32 values", loader.ErrCorrupt, n))
			return nil, m.err
		}
		copy(types, tt)
	}
	scores := make([]float32, n)
	if v, ok := g.Meta["tokenizer.ggml.scores"]; ok {
		sc, ok := v.([]float32)
		if !ok || len(sc) != n {
			m.fail("tokenizer.ggml.scores", fmt.Errorf("%w: want %d float32 values", loader.ErrCorrupt, n))
			return nil, m.err
		}
		copy(scores, sc)
	}

	t := &Tokenizer{
		texts:   tokens,
		pieces:  make([]string, n),
		special: make([]bool, n),
	}
	var added []addedToken
	for i, s := range tokens {
		switch types[i] {
		case ggufControl, ggufUnknown:
			t.special[i] = true
			added = append(added, addedToken{text: s, id: int32(i), special: true})
		case ggufUserDefined:
			added = append(added, addedToken{text: s, id: int32(i)})
		}
	}
	phi3RStrip(g, added)
	t.added = newAddedMatcher(added)

	addBOSDefault := true
	switch model {
	case "gpt2":
		pre, _ := m.str("tokenizer.ggml.pre")
		p, ok := ggufPres[pre]
		if m.err != nil {
			return nil, m.err
		}
		if !ok {
			m.fail("tokenizer.ggml.pre", fmt.Errorf("%w: pre-tokenizer %q", ErrUnsupported, pre))
			return nil, m.err
		}
		if err := t.ggufBPE(m, types, p); err != nil {
			return nil, err
		}
		addBOSDefault = p.addBOS
	case "llama":
		t.ggufSPM(m, types, scores)
	case "gemma4":
		if err := t.ggufGemma4(m, types); err != nil {
			return nil, err
		}
	case "bert":
		t.ggufWPM(m, types)
	default:
		m.fail("tokenizer.ggml.model", fmt.Errorf("%w: model %q", ErrUnsupported, model))
	}
	if m.err != nil {
		return nil, m.err
	}

	t.bos = m.id("tokenizer.ggml.bos_token_id", n)
	eos := m.id("tokenizer.ggml.eos_token_id", n)
	for _, id := range []int32{eos, m.id("tokenizer.ggml.eot_token_id", n), m.id("tokenizer.ggml.eom_token_id", n)} {
		if id >= 0 {
			t.eos = append(t.eos, id)
		}
	}
	t.eos = t.withEOGTokens(t.eos)
	// llama.cpp forces BOS on for gemma4 vocabularies.
	if (m.boolean("tokenizer.ggml.add_bos_token", addBOSDefault) || model == "gemma4") && t.bos >= 0 {
		t.prefix = []int32{t.bos}
	}
	if m.boolean("tokenizer.ggml.add_eos_token", false) && eos >= 0 {
		t.suffix = []int32{eos}
	}
	if model == "bert" {
		// llama.cpp's WPM adds [CLS] and [SEP] whatever the add_* flags say.
		t.ggufWPMSpecials(m)
	}
	if t.bos >= 0 {
		t.bosToken, t.hasBOSToken = tokens[t.bos], true
	}
	if eos >= 0 {
		t.eosToken, t.hasEOSToken = tokens[eos], true
	}
	if tmpl, ok := m.str("tokenizer.chat_template"); ok {
		t.chatTemplate = tmpl
		t.chatTemplateFrom = "tokenizer.chat_template (GGUF)"
	}
	if m.err != nil {
		return nil, m.err
	}
	return t, nil
}

func (t *Tokenizer) ggufBPE(m *ggufMeta, types []int32, p ggufPre) error {
	t.kind = modelBPE
	t.pre = []splitter{patternSplitter{p.split}}
	if p.nfc {
		t.normalize, t.normForm = true, norm.NFC
	}
	merges, ok := m.g.Meta["tokenizer.ggml.merges"].([]string)
	if !ok {
		m.fail("tokenizer.ggml.merges", fmt.Errorf("%w: missing or not a string array", loader.ErrCorrupt))
		return m.err
	}
	bpe := &bpeModel{rawID: make(map[string]int32, len(t.texts)), merges: make(map[uint64]merge, len(merges)), ignoreMerges: p.ignoreMerges}
	t.bpe = bpe
	textID := make(map[string]int32, len(t.texts))
	for i, s := range t.texts {
		textID[s] = int32(i)
		switch types[i] {
		case ggufControl, ggufUserDefined, ggufUnknown:
			t.pieces[i] = s
			continue
		}
		t.pieces[i] = string(byteLevelDecode(s))
		if raw, ok := byteLevelRaw(s); ok {
			bpe.rawID[string(raw)] = int32(i)
		}
	}
	for b := 0; b < 256; b++ {
		bpe.byteID[b] = -1
		if id, ok := bpe.rawID[string([]byte{byte(b)})]; ok {
			bpe.byteID[b] = id
		}
	}
	for i, s := range merges {
		a, b, ok := strings.Cut(s, " ")
		ia, oka := textID[a]
		ib, okb := textID[b]
		im, okm := textID[a+b]
		if !ok || !oka || !okb || !okm {
			m.fail(fmt.Sprintf("tokenizer.ggml.merges[%d]", i), fmt.Errorf("%w: merge %q is not two vocabulary tokens forming a third", loader.ErrCorrupt, s))
			return m.err
		}
		if err := bpe.addMerge(ia, ib, im, i); err != nil {
			m.fail(fmt.Sprintf("tokenizer.ggml.merges[%d]", i), fmt.Errorf("%w: %v", loader.ErrCorrupt, err))
			return m.err
		}
	}
	return nil
}

func (t *Tokenizer) ggufSPM(m *ggufMeta, types []int32, scores []float32) {
	t.kind = modelSPM
	s := &spmModel{toID: make(map[string]int32, len(t.texts)), texts: t.texts, scores: scores}
	t.spm = s
	for i, tok := range t.texts {
		s.toID[tok] = int32(i)
		switch types[i] {
		case ggufByte:
			if b, ok := parseByteToken(tok); ok {
				t.pieces[i] = string([]byte{b})
				continue
			}
		case ggufControl, ggufUnknown, ggufUserDefined:
			t.pieces[i] = tok
			continue
		}
		t.pieces[i] = strings.ReplaceAll(tok, spmSpace, " ")
	}
	for b := 0; b < 256; b++ {
		s.byteTok[b] = -1
		if id, ok := s.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
			s.byteTok[b] = id
		}
	}
	s.unk = m.id("tokenizer.ggml.unknown_token_id", len(t.texts))
	if s.unk < 0 {
		s.unk = 0
	}
	s.addSpacePrefix = m.boolean("tokenizer.ggml.add_space_prefix", true)
	t.stripSpace = s.addSpacePrefix
}

// parseByteToken reads a "<0xNN>" byte token.
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range s[3:5] {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = byte(c - '0')
		case 'A' <= c && c <= 'F':
			d = byte(c - 'A' + 10)
		case 'a' <= c && c <= 'f':
			d = byte(c - 'a' + 10)
		default:
			return 0, false
		}
		b = b<<4 | d
	}
	return b, true
}
