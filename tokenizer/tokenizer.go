package tokenizer

import (
	"golang.org/x/text/unicode/norm"
)

// modelKind is the tokenization algorithm.
type modelKind uint8

const (
	modelBPE     modelKind = iota // BPE: byte-level (Hugging Face, GGUF gpt2) or over literal ▁-pieces with byte fallback (Hugging Face Llama/Mistral)
	modelSPM                      // llama.cpp's SentencePiece-style vocab (GGUF llama)
	modelLlama2C                  // llama2.c tokenizer.bin
	modelWPM                      // WordPiece (BERT): Hugging Face WordPiece or GGUF bert
)

// Tokenizer encodes text to token ids and decodes them back. It is safe for
// concurrent use.
type Tokenizer struct {
	kind   modelKind
	texts  []string // token strings as the vocabulary stores them
	pieces []string // bytes each token decodes to
	// special marks tokens that DecodeOptions.SkipSpecial drops: special
	// added tokens (Hugging Face) or control tokens (GGUF).
	special []bool

	added     *addedMatcher
	normForm  norm.Form
	normalize bool
	normOps   []normOp   // Hugging Face normalizer steps, in order (overrides normForm)
	metaspace *metaspace // Hugging Face Metaspace pre-tokenizer
	pre       []splitter
	bpe       *bpeModel
	spm       *spmModel
	wpm       *wpmModel

	prefix, suffix []int32 // added around the text when AddSpecial is set
	bos            int32
	eos            []int32
	// stripSpace drops the leading space of the decoded text (SentencePiece).
	stripSpace bool
	// byteTokens: <0xNN> tokens decode to their byte, and a run of them that
	// is not valid UTF-8 gives one U+FFFD per byte (Hugging Face's
	// ByteFallback decoder).
	byteTokens bool
	cleanUp    bool // clean_up_tokenization_spaces

	chatTemplate       string
	chatTemplateFrom   string // where chatTemplate came from, for errors
	bosToken, eosToken string // texts handed to chat templates
	hasBOSToken        bool
	hasEOSToken        bool

	cache wordCache
}

// EncodeOptions selects how Encode treats special tokens.
type EncodeOptions struct {
	// AddSpecial adds the tokens the model's post-processor puts around
	// the text (usually BOS), like Hugging Face's add_special_tokens=true.
	AddSpecial bool
	// SpecialAsText treats special tokens written in the text as plain
	// text, like Hugging Face's split_special_tokens=true. Non-special
	// added tokens (such as Qwen3's <think>) are still recognised.
	SpecialAsText bool
}

// Encode tokenizes text. Special tokens written in the text are recognised;
// addSpecial adds the model's default special tokens (BOS). The only
// error is a tokenizer file's Split pattern running past its time budget
// (ErrRegexBudget, as a *loader.FormatError naming the file and field).
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int32, error) {
	return t.EncodeOpts(text, EncodeOptions{AddSpecial: addSpecial})
}

// EncodeOpts tokenizes text as the options say.
func (t *Tokenizer) EncodeOpts(text string, o EncodeOptions) ([]int32, error) {
	var out []int32
	if o.AddSpecial {
		out = append(out, t.prefix...)
	}
	var err error
	switch t.kind {
	case modelBPE:
		out, err = t.encodeBPE(text, o.SpecialAsText, out)
	case modelWPM:
		out = t.encodeWPM(text, o.SpecialAsText, out)
	default:
		out = t.encodeSPM(text, o.SpecialAsText, out)
	}
	if err != nil {
		return nil, err
	}
	if o.AddSpecial {
		out = append(out, t.suffix...)
	}
	return out, nil
}

func (t *Tokenizer) encodeBPE(text string, specialAsText bool, out []int32) ([]int32, error) {
	sc := &bpeScratch{}
	word := func(w string) {
		if len(w) <= cacheMaxWord {
			if ids, ok := t.cache.get(w); ok {
				out = append(out, ids...)
				return
			}
			n := len(out)
			out = t.bpe.encodeWord(w, sc, out)
			t.cache.put(w, out[n:])
			return
		}
		out = t.bpe.encodeWord(w, sc, out)
	}
	// inputStart: the segment starts the input (Metaspace prepend_scheme
	// "first").
	inputStart := true
	var err error
	pretok := func(seg string) {
		if err != nil {
			return
		}
		if t.metaspace != nil {
			t.metaspace.run(seg, inputStart, word)
			return
		}
		if len(t.pre) == 1 {
			err = t.pre[0].split(seg, word)
			return
		}
		err = t.pretokenize(seg, 0, word)
	}
	t.added.split(text, false, specialAsText, func(seg string, id int32) {
		if id >= 0 {
			out = append(out, id)
			inputStart = false
			return
		}
		if len(t.normOps) > 0 {
			for _, op := range t.normOps {
				seg = op.apply(seg)
			}
		} else if t.normalize {
			seg = t.normForm.String(seg)
		}
		t.added.split(seg, true, specialAsText, func(seg string, id int32) {
			if id >= 0 {
				out = append(out, id)
				inputStart = false
				return
			}
			pretok(seg)
			inputStart = false
		})
		inputStart = false
	})
	return out, err
}

// pretokenize runs the splitters from index k on s.
func (t *Tokenizer) pretokenize(s string, k int, emit func(string)) error {
	if k == len(t.pre) {
		if s != "" {
			emit(s)
		}
		return nil
	}
	var err error
	if e := t.pre[k].split(s, func(p string) {
		if err == nil {
			err = t.pretokenize(p, k+1, emit)
		}
	}); e != nil {
		return e
	}
	return err
}

// VocabSize returns the number of token ids, including added tokens.
func (t *Tokenizer) VocabSize() int { return len(t.texts) }

// BOS returns the beginning-of-sequence id, or -1 if the model has none.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns every end-of-generation id the model declares (eos, eot,
// eom, im_end and the like), the primary eos first.
func (t *Tokenizer) EOS() []int32 { return append([]int32(nil), t.eos...) }

// IsEOS reports whether id ends generation.
func (t *Tokenizer) IsEOS(id int32) bool {
	for _, e := range t.eos {
		if e == id {
			return true
		}
	}
	return false
}

// AddBOS reports whether Encode with addSpecial puts BOS first.
func (t *Tokenizer) AddBOS() bool { return t.bos >= 0 && len(t.prefix) > 0 && t.prefix[0] == t.bos }

// TokenText returns the vocabulary string of id (byte-level form for
// byte-level BPE, with '▁' for SentencePiece), or "" if id is out of range.
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.texts) {
		return ""
	}
	return t.texts[id]
}

// TokenID returns the id of a vocabulary string, as TokenText spells it.
func (t *Tokenizer) TokenID(text string) (int32, bool) {
	for _, tok := range t.addedTokens() {
		if tok.text == text {
			return tok.id, true
		}
	}
	switch t.kind {
	case modelBPE:
		if t.bpe.literal {
			id, ok := t.bpe.rawID[text]
			return id, ok
		}
		if raw, ok := byteLevelRaw(text); ok {
			id, ok := t.bpe.rawID[string(raw)]
			return id, ok
		}
	case modelWPM:
		id, ok := t.wpm.toID[text]
		return id, ok
	default:
		id, ok := t.spm.toID[text]
		return id, ok
	}
	return -1, false
}

// Piece returns the bytes id adds to decoded text (as a Decoder with
// SkipSpecial adds them): nil for a special or control token, or an id
// out of range. See StripsLeadingSpace for the first token.
func (t *Tokenizer) Piece(id int32) []byte {
	if id < 0 || int(id) >= len(t.pieces) || t.special[id] {
		return nil
	}
	return []byte(t.pieces[id])
}

// StripsLeadingSpace reports SentencePiece's decoding rule: the first
// token's leading space is dropped from the text.
func (t *Tokenizer) StripsLeadingSpace() bool { return t.stripSpace }

// IsSpecial reports whether id is a special (control) token.
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.special) && t.special[id]
}

func (t *Tokenizer) addedTokens() []addedToken {
	if t.added == nil {
		return nil
	}
	return t.added.tokens
}

// ChatTemplate returns the model's Jinja chat template, or "" if it has none.
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }
