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

	"wasmllm/loader"
)

// hfFile is the part of a Hugging Face tokenizer.json this package reads.
type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         struct {
		Type                    string           `json:"type"`
		Vocab                   map[string]int64 `json:"vocab"`
		Merges                  json.RawMessage  `json:"merges"`
		UnkToken                *string          `json:"unk_token"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
		ByteFallback            bool             `json:"byte_fallback"`
		FuseUnk                 bool             `json:"fuse_unk"`
		IgnoreMerges            bool             `json:"ignore_merges"`
		Dropout                 *float64         `json:"dropout"`
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

// maxVocab bounds token ids so that a corrupt file cannot ask for a huge
// allocation.
const maxVocab = 1 << 24

// maxTokenizerJSON bounds the size of a tokenizer.json: the largest real
// ones (Gemma's, 262k tokens) are about 33 MB.
const maxTokenizerJSON = 128 << 20

// FromHFJSON builds a tokenizer from the contents of a Hugging Face
// tokenizer.json and, optionally (nil), tokenizer_config.json, which
// supplies the BOS/EOS tokens and the chat template. The model must be
// BPE: byte-level (a ByteLevel pre-tokenizer and decoder), or
// SentencePiece-style (Llama-2, Mistral, TinyLlama: '▁' pieces,
// byte_fallback, the Prepend/Replace normalizer or a Metaspace
// pre-tokenizer, and the Replace/ByteFallback/Fuse/Strip or Metaspace
// decoder).
func FromHFJSON(tokenizerJSON, tokenizerConfigJSON []byte) (*Tokenizer, error) {
	return fromHF("tokenizer.json", tokenizerJSON, "tokenizer_config.json", tokenizerConfigJSON)
}

// HFFiles are the files of a Hugging Face tokenizer that FromHFDir and
// FromHFFiles read, tokenizer.json first: tokenizer_config.json (BOS/EOS
// tokens and the chat template), generation_config.json (its eos_token_id
// list) and chat_template.jinja (the template when the config has none)
// are optional.
var HFFiles = []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja"}

// FromHFDir loads the HFFiles there are in dir (ReadHFDir) and builds the
// tokenizer (FromHFFiles). A path to a tokenizer.json file is accepted too.
func FromHFDir(dir string) (*Tokenizer, error) {
	files, err := ReadHFDir(dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		dir = filepath.Dir(dir)
	}
	return FromHFFiles(dir, files)
}

// ReadHFDir reads the HFFiles there are in dir, by name; tokenizer.json
// must be there, and not over the size FromHFFiles takes. A path to a
// tokenizer.json file is accepted too.
func ReadHFDir(dir string) (map[string][]byte, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		dir = filepath.Dir(dir)
	}
	tj := filepath.Join(dir, HFFiles[0])
	if st, err := os.Stat(tj); err != nil {
		return nil, err
	} else if st.Size() > maxTokenizerJSON {
		return nil, formatErrf(tj, "", "file of %d bytes is over the %d-byte limit", st.Size(), maxTokenizerJSON)
	}
	files := map[string][]byte{}
	for i, name := range HFFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if i > 0 && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return files, nil
}

// FromHFFiles builds a tokenizer from the contents of HFFiles, by name:
// tokenizer.json is required, the others are used when present. Errors
// name each file as filepath.Join(dir, name), so dir is where the files
// were read from (or "", for their names alone).
func FromHFFiles(dir string, files map[string][]byte) (*Tokenizer, error) {
	path := func(name string) string { return filepath.Join(dir, name) }
	data, ok := files[HFFiles[0]]
	if !ok {
		return nil, formatErr(path(HFFiles[0]), "file", loader.ErrNotFound)
	}
	t, err := fromHF(path("tokenizer.json"), data, path("tokenizer_config.json"), files["tokenizer_config.json"])
	if err != nil {
		return nil, err
	}
	if gen, ok := files["generation_config.json"]; ok {
		if err := t.addGenerationEOS(path("generation_config.json"), gen); err != nil {
			return nil, err
		}
	}
	if tmpl, ok := files["chat_template.jinja"]; ok && t.chatTemplate == "" {
		t.chatTemplate = string(tmpl)
		t.chatTemplateFrom = "chat_template.jinja"
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

func fromHF(file string, data []byte, cfgFile string, cfgData []byte) (*Tokenizer, error) {
	if len(data) > maxTokenizerJSON {
		return nil, formatErrf(file, "", "file of %d bytes is over the %d-byte limit", len(data), maxTokenizerJSON)
	}
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, jsonErr(file, err)
	}
	if f.Model.Type == "WordPiece" {
		var raw struct {
			Model json.RawMessage `json:"model"`
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, jsonErr(file, err)
		}
		return fromHFWordPiece(file, &f, raw.Model, cfgFile, cfgData)
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

	t := &Tokenizer{kind: modelBPE, bos: -1}
	// Without a ByteLevel pre-tokenizer the vocabulary is literal: token
	// strings are the text itself, with '▁' for a space in SentencePiece
	// files (Llama-2, Mistral), which add byte_fallback.
	byteLevel, err := t.hfPreTokenizer(file, "pre_tokenizer", f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	literal := !byteLevel
	if byteLevel && f.Model.ByteFallback {
		return nil, formatErr(file, "model.byte_fallback", fmt.Errorf("%w: byte fallback with a ByteLevel pre-tokenizer", ErrUnsupported))
	}
	if t.metaspace != nil && len(t.pre) > 0 {
		return nil, formatErr(file, "pre_tokenizer", fmt.Errorf("%w: Metaspace with other pre-tokenizers", ErrUnsupported))
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
	t.texts = make([]string, size)
	t.pieces = make([]string, size)
	t.special = make([]bool, size)

	bpe := &bpeModel{rawID: make(map[string]int32, len(f.Model.Vocab)), merges: make(map[uint64]merge), ignoreMerges: f.Model.IgnoreMerges,
		literal: literal, byteFallback: f.Model.ByteFallback, fuseUnk: f.Model.FuseUnk, unk: -1}
	t.bpe = bpe
	for s, id := range f.Model.Vocab {
		t.texts[id] = s
		if literal {
			bpe.rawID[s] = int32(id)
			continue
		}
		t.pieces[id] = string(byteLevelDecode(s))
		if raw, ok := byteLevelRaw(s); ok {
			bpe.rawID[string(raw)] = int32(id)
		}
	}
	// A byte with no token becomes unk_token if there is one, else it is
	// dropped, as Hugging Face's BPE does.
	unk := int32(-1)
	if u := f.Model.UnkToken; u != nil {
		if id, ok := f.Model.Vocab[*u]; ok {
			unk = int32(id)
		}
	}
	bpe.unk = unk
	for b := 0; b < 256; b++ {
		bpe.fallback[b] = -1
		if id, ok := f.Model.Vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			bpe.fallback[b] = int32(id)
		}
		bpe.byteID[b] = unk
		if id, ok := bpe.rawID[string([]byte{byte(b)})]; ok {
			bpe.byteID[b] = id
		}
	}
	if err := bpe.readHFMerges(file, f.Model.Merges, f.Model.Vocab); err != nil {
		return nil, err
	}

	var added []addedToken
	for _, a := range f.AddedTokens {
		t.texts[a.ID] = a.Content
		if !literal {
			t.pieces[a.ID] = string(byteLevelDecode(a.Content))
		}
		t.special[a.ID] = a.Special
		added = append(added, addedToken{text: a.Content, id: int32(a.ID), special: a.Special, lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord, normalized: a.Normalized})
	}
	t.added = newAddedMatcher(added)

	if err := t.hfNormalizer(file, "normalizer", f.Normalizer); err != nil {
		return nil, err
	}
	var dec hfDecodeSteps
	if err := t.hfDecoder(file, "decoder", f.Decoder, literal, &dec); err != nil {
		return nil, err
	}
	if literal {
		t.stripSpace = dec.strip
		t.byteTokens = dec.byteFallback
		for id, s := range t.texts {
			t.pieces[id] = dec.piece(s)
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
	t.eos = t.withEOGTokens(t.eos)
	return t, nil
}

// readHFMerges adds model.merges, decoded one at a time so that a huge list
// is never held twice. A merge of tokens outside the vocabulary and a
// duplicate are errors, so the merges kept are distinct ways of cutting a
// vocabulary token in two: never more than the vocabulary's characters.
func (m *bpeModel) readHFMerges(file string, raw json.RawMessage, vocab map[string]int64) error {
	if isNull(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return formatErrf(file, "model.merges", "not an array")
	}
	for i := 0; dec.More(); i++ {
		field := fmt.Sprintf("model.merges[%d]", i)
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return formatErr(file, field, err)
		}
		a, b, err := parseMerge(item)
		if err != nil {
			return formatErr(file, field, err)
		}
		ia, oka := vocab[a]
		ib, okb := vocab[b]
		im, okm := vocab[a+b]
		if !oka || !okb || !okm {
			return formatErrf(file, field, "merge %q %q uses a token not in the vocabulary", a, b)
		}
		if err := m.addMerge(int32(ia), int32(ib), int32(im), i); err != nil {
			return formatErr(file, field, err)
		}
	}
	return nil
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
