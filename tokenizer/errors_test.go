package tokenizer

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"wasmllm/loader"
)

// wantFormatError checks err is a *loader.FormatError whose field contains
// field, and that it wraps cause when cause is set.
func wantFormatError(t *testing.T, what string, err error, field string, cause error) {
	t.Helper()
	var fe *loader.FormatError
	if !errors.As(err, &fe) {
		t.Errorf("%s: got %v (%T), want a *loader.FormatError", what, err, err)
		return
	}
	if !strings.Contains(fe.Field, field) {
		t.Errorf("%s: field %q, want it to name %q (%v)", what, fe.Field, field, err)
	}
	if cause != nil && !errors.Is(err, cause) {
		t.Errorf("%s: %v does not wrap %v", what, err, cause)
	}
}

const miniHF = `{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[MERGES]},
"pre_tokenizer":PRE,"decoder":{"type":"ByteLevel"}}`

func hfJSON(merges, pre string) []byte {
	return []byte(strings.NewReplacer("MERGES", merges, "PRE", pre).Replace(miniHF))
}

func TestHFJSONErrors(t *testing.T) {
	bl := `{"type":"ByteLevel"}`
	if _, err := FromHFJSON(hfJSON(`"a b"`, bl), nil); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	_, err := FromHFJSON([]byte(`{"model": {"type": "BPE", "vocab": {"a": 0,}}}`), nil)
	var fe *loader.FormatError
	if !errors.As(err, &fe) || fe.Offset <= 0 {
		t.Errorf("syntax error: %v, want a FormatError with the byte offset", err)
	}
	_, err = FromHFJSON(hfJSON(`"a b", "a c"`, bl), nil)
	wantFormatError(t, "unknown merge token", err, "model.merges[1]", nil)
	_, err = FromHFJSON(hfJSON(`"ab"`, bl), nil)
	wantFormatError(t, "merge without a space", err, "model.merges[0]", nil)
	_, err = FromHFJSON(hfJSON(`["a","b","c"]`, bl), nil)
	wantFormatError(t, "merge of three", err, "model.merges[0]", nil)
	_, err = FromHFJSON(hfJSON(`"a b"`, `{"type":"Whitespace"}`), nil)
	wantFormatError(t, "Whitespace", err, "pre_tokenizer", ErrUnsupported)
	_, err = FromHFJSON(hfJSON(`"a b"`, `{"type":"Metaspace","prepend_scheme":"sometimes"}`), nil)
	wantFormatError(t, "Metaspace scheme", err, "pre_tokenizer.prepend_scheme", nil)
	// A literal (SentencePiece-style) vocabulary with the ByteLevel decoder.
	_, err = FromHFJSON(hfJSON(`"a b"`, `{"type":"Metaspace"}`), nil)
	wantFormatError(t, "Metaspace with ByteLevel decoder", err, "decoder", ErrUnsupported)
	_, err = FromHFJSON(bytes.Replace(hfJSON(`"a b"`, bl), []byte(`"type":"BPE"`), []byte(`"type":"BPE","byte_fallback":true`), 1), nil)
	wantFormatError(t, "byte_fallback with ByteLevel", err, "model.byte_fallback", ErrUnsupported)
	_, err = FromHFJSON([]byte(`{"model":{"type":"WordPiece","vocab":{}}}`), nil)
	wantFormatError(t, "WordPiece without unk", err, "model.unk_token", nil)
	_, err = FromHFJSON([]byte(`{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0}},"normalizer":{"type":"NFC"}}`), nil)
	wantFormatError(t, "WordPiece with NFC", err, "normalizer", ErrUnsupported)
	_, err = FromHFJSON([]byte(`{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0},"max_input_chars_per_word":0}}`), nil)
	wantFormatError(t, "WordPiece max chars", err, "model.max_input_chars_per_word", nil)
	_, err = FromHFJSON([]byte(`{"model":{"type":"Unigram","vocab":{}}}`), nil)
	wantFormatError(t, "Unigram", err, "model.type", ErrUnsupported)
	_, err = FromHFJSON([]byte(`{"model":{"type":"BPE","vocab":{"a":99999999},"merges":[]}}`), nil)
	wantFormatError(t, "huge id", err, "model.vocab", nil)
	_, err = FromHFJSON([]byte(`{"model":{"type":"BPE","vocab":{"a":5000},"merges":[]}}`), nil)
	wantFormatError(t, "sparse ids", err, "model.vocab", nil)
	_, err = FromHFJSON(hfJSON(`"a b"`, bl), []byte(`{"bos_token": 5}`))
	wantFormatError(t, "bad bos_token", err, "bos_token", nil)
	_, err = FromHFJSON(hfJSON(`"a b"`, `{"type":"Split","pattern":{"Regex":"(("},"behavior":"Isolated"}`), nil)
	wantFormatError(t, "bad regex", err, "pre_tokenizer", nil)
	if _, err := FromHFDir("testdata/does-not-exist"); err == nil {
		t.Error("missing folder: no error")
	}
}

func TestGGUFErrors(t *testing.T) {
	base := []loader.MetaKV{
		{Key: "tokenizer.ggml.model", Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Value: "qwen2"},
		{Key: "tokenizer.ggml.tokens", Value: []string{"a", "b", "ab"}},
		{Key: "tokenizer.ggml.merges", Value: []string{"a b"}},
	}
	load := func(edit func(m []loader.MetaKV) []loader.MetaKV) error {
		meta := edit(append([]loader.MetaKV(nil), base...))
		var b bytes.Buffer
		if err := loader.WriteGGUF(&b, 3, meta, nil); err != nil {
			t.Fatal(err)
		}
		g, err := loader.ParseGGUF("mini.gguf", b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		_, err = FromGGUF(g)
		return err
	}
	set := func(k string, v any) func([]loader.MetaKV) []loader.MetaKV {
		return func(m []loader.MetaKV) []loader.MetaKV {
			for i := range m {
				if m[i].Key == k {
					if v == nil {
						return append(m[:i], m[i+1:]...)
					}
					m[i].Value = v
					return m
				}
			}
			return append(m, loader.MetaKV{Key: k, Value: v})
		}
	}
	if err := load(set("x", "y")); err != nil {
		t.Fatalf("valid vocab: %v", err)
	}
	wantFormatError(t, "unknown pre", load(set("tokenizer.ggml.pre", "starcoder")), "tokenizer.ggml.pre", ErrUnsupported)
	wantFormatError(t, "no pre", load(set("tokenizer.ggml.pre", nil)), "tokenizer.ggml.pre", ErrUnsupported)
	wantFormatError(t, "unknown model", load(set("tokenizer.ggml.model", "t5")), "tokenizer.ggml.model", ErrUnsupported)
	wantFormatError(t, "no model", load(set("tokenizer.ggml.model", nil)), "tokenizer.ggml.model", loader.ErrNotFound)
	wantFormatError(t, "no tokens", load(set("tokenizer.ggml.tokens", nil)), "tokenizer.ggml.tokens", nil)
	wantFormatError(t, "types length", load(set("tokenizer.ggml.token_type", []int32{1})), "tokenizer.ggml.token_type", nil)
	wantFormatError(t, "bad merge", load(set("tokenizer.ggml.merges", []string{"a c"})), "tokenizer.ggml.merges[0]", nil)
	wantFormatError(t, "bos out of range", load(set("tokenizer.ggml.bos_token_id", uint32(7))), "tokenizer.ggml.bos_token_id", nil)
	wantFormatError(t, "bos as string", load(set("tokenizer.ggml.bos_token_id", "1")), "tokenizer.ggml.bos_token_id", nil)
	wantFormatError(t, "add_bos as int", load(set("tokenizer.ggml.add_bos_token", uint32(1))), "tokenizer.ggml.add_bos_token", nil)
	wantFormatError(t, "template as int", load(set("tokenizer.chat_template", uint32(1))), "tokenizer.chat_template", nil)
}

func TestLlama2CErrors(t *testing.T) {
	data := readTestFile(t, "models", "tok512.bin")
	_, err := FromLlama2C(data[:len(data)-3], 512)
	wantFormatError(t, "truncated", err, "token 511", loader.ErrTruncated)
	_, err = FromLlama2C(data, 1<<20)
	wantFormatError(t, "vocab larger than the file", err, "vocabulary", loader.ErrTooLarge)
	_, err = FromLlama2C(data[:2], 0)
	wantFormatError(t, "no header", err, "max token length", loader.ErrTruncated)
	bad := append([]byte(nil), data...)
	bad[11] = 0x7F // the first token's length becomes huge
	_, err = FromLlama2C(bad, 512)
	wantFormatError(t, "bad length", err, "token 0 length", loader.ErrTruncated)
	if tk, err := FromLlama2C(data, 0); err != nil || tk.VocabSize() != 512 {
		t.Errorf("reading to the end: %v", err)
	}
}
