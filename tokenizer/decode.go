package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// DecodeOptions controls Decode and Decoder.
type DecodeOptions struct {
	// SkipSpecial drops special (control) tokens, like Hugging Face's
	// skip_special_tokens=true.
	SkipSpecial bool
	// CleanUpSpaces removes the space before punctuation and English
	// contractions, like Hugging Face's clean_up_tokenization_spaces. See
	// (*Tokenizer).CleanUpSpaces for the model's own setting. Decode only;
	// Decoder ignores it.
	CleanUpSpaces bool
}

// Decode turns ids back into text the way Hugging Face's decode does with
// skip_special_tokens=false and no clean-up of spaces. Bytes that do not
// form valid UTF-8 become U+FFFD, one per maximal invalid subsequence.
// Out-of-range ids decode to nothing.
func (t *Tokenizer) Decode(ids []int32) string {
	return t.DecodeOpts(ids, DecodeOptions{})
}

// DecodeOpts is Decode with options.
func (t *Tokenizer) DecodeOpts(ids []int32, o DecodeOptions) string {
	var text string
	if t.byteTokens {
		text = t.decodeByteFallback(ids, o)
	} else {
		var raw []byte
		atStart := true
		for _, id := range ids {
			raw, atStart = t.appendPiece(raw, id, o, atStart)
		}
		text = string(appendLossy(nil, raw))
	}
	if o.CleanUpSpaces {
		text = cleanUpSpaces.Replace(text)
	}
	return text
}

// decodeByteFallback is Hugging Face's Llama decoder: pieces with '▁' as
// ' ', each run of <0xNN> tokens as its bytes when they are valid UTF-8 and
// as one U+FFFD per byte when not, fused, then one leading space stripped.
// (Decoder, streaming, replaces invalid bytes as Decode does for other
// models: one U+FFFD per maximal invalid subsequence.)
func (t *Tokenizer) decodeByteFallback(ids []int32, o DecodeOptions) string {
	var out, run []byte
	flush := func() {
		if utf8.Valid(run) {
			out = append(out, run...)
		} else {
			for range run {
				out = append(out, "\uFFFD"...)
			}
		}
		run = run[:0]
	}
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.pieces) || (o.SkipSpecial && t.special[id]) {
			continue
		}
		if _, ok := byteToken(t.texts[id]); ok {
			run = append(run, t.pieces[id]...)
			continue
		}
		flush()
		out = append(out, t.pieces[id]...)
	}
	flush()
	if t.stripSpace && len(out) > 0 && out[0] == ' ' {
		out = out[1:]
	}
	return string(out)
}

// cleanUpSpaces is Hugging Face's clean_up_tokenization. Its replacements
// never overlap in a way that makes their order matter.
var cleanUpSpaces = strings.NewReplacer(
	" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'",
	" n't", "n't", " 'm", "'m", " 's", "'s", " 've", "'ve", " 're", "'re",
)

// CleanUpSpaces reports the model's clean_up_tokenization_spaces setting
// (tokenizer_config.json; false for GGUF and llama2.c vocabularies).
func (t *Tokenizer) CleanUpSpaces() bool { return t.cleanUp }

// appendPiece appends the bytes of id. atStart says no text has been
// produced yet, for the SentencePiece rule that drops the first leading
// space.
func (t *Tokenizer) appendPiece(dst []byte, id int32, o DecodeOptions, atStart bool) ([]byte, bool) {
	if id < 0 || int(id) >= len(t.pieces) {
		return dst, atStart
	}
	if o.SkipSpecial && t.special[id] {
		return dst, atStart
	}
	p := t.pieces[id]
	if atStart && t.stripSpace && len(p) > 0 && p[0] == ' ' {
		p = p[1:]
		if p == "" {
			return dst, false // the one leading space is gone
		}
	}
	if p == "" {
		return dst, atStart
	}
	return append(dst, p...), false
}

// Decoder is an incremental detokenizer for streaming generation. Add
// returns only newly completed text: it never returns part of a UTF-8
// sequence, so a character split across tokens appears whole once its last
// byte arrives. The concatenation of every Add and the final Flush equals
// Decode of all the ids.
type Decoder struct {
	t       *Tokenizer
	opts    DecodeOptions
	pending []byte
	atStart bool
}

// NewDecoder returns a streaming decoder for t.
func (t *Tokenizer) NewDecoder(o DecodeOptions) *Decoder {
	return &Decoder{t: t, opts: o, atStart: true}
}

// Add decodes one more token and returns the text it completes, which may
// be empty.
func (d *Decoder) Add(id int32) string {
	d.pending, d.atStart = d.t.appendPiece(d.pending, id, d.opts, d.atStart)
	keep := incompleteTail(d.pending)
	n := len(d.pending) - keep
	if n == 0 {
		return ""
	}
	out := string(appendLossy(nil, d.pending[:n]))
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns whatever is still held back (an incomplete sequence, as
// U+FFFD) and resets the decoder for a new sequence.
func (d *Decoder) Flush() string {
	out := string(appendLossy(nil, d.pending))
	d.pending = d.pending[:0]
	d.atStart = true
	return out
}

// Prime feeds ids whose text was already shown, such as the prompt, and
// discards their text. Streaming a continuation this way keeps the
// SentencePiece leading space of its first token and completes a character
// split between the prompt and the generated tokens.
func (d *Decoder) Prime(ids []int32) {
	for _, id := range ids {
		d.pending, d.atStart = d.t.appendPiece(d.pending, id, d.opts, d.atStart)
	}
	keep := incompleteTail(d.pending)
	d.pending = append(d.pending[:0], d.pending[len(d.pending)-keep:]...)
}
