package tokenizer

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"wasmllm/loader"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the committed fuzz seed corpora under testdata/fuzz")

// fuzzTexts are seed strings for the encoder fuzz targets.
var fuzzTexts = []string{
	"", "Hello, world!", "  leading and trailing  ", "line\r\nbreak\n\n", "it's THEY'LL 'ſ",
	"12345 ١٢٣", "日本語のテキスト", "👨\u200d👩\u200d👧", "<|im_start|>user\nhi<|im_end|>", "<s> </s>",
	"\xff\xfe invalid \xe2\x82", "tab\tsep\u00a0nbsp\u3000ideo", "▁spm▁marker",
}

// miniGGUF builds a small GGUF holding only the tokenizer metadata of a test
// model, for fuzz seeds.
func miniGGUF(t testing.TB, model string) []byte {
	g, err := loader.ReadGGUF(filepath.Join(testdata, "models", model))
	if err != nil {
		t.Fatal(err)
	}
	var meta []loader.MetaKV
	for _, k := range g.Keys {
		if strings.HasPrefix(k, "tokenizer.") {
			meta = append(meta, loader.MetaKV{Key: k, Value: g.Meta[k]})
		}
	}
	var b bytes.Buffer
	if err := loader.WriteGGUF(&b, 3, meta, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readTestFile(t testing.TB, parts ...string) []byte {
	b, err := os.ReadFile(filepath.Join(append([]string{testdata}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// seedCorpus returns the seed inputs of each fuzz target, as written to
// testdata/fuzz/<target>/.
func seedCorpus(t testing.TB) map[string][][]any {
	c := map[string][][]any{}
	for _, s := range fuzzTexts {
		c["FuzzEncode"] = append(c["FuzzEncode"], []any{s})
	}
	c["FuzzDecoder"] = [][]any{
		{[]byte{0, 1, 2, 3}},
		{[]byte{0xf0, 0x01, 0x9f, 0x00, 0xfd, 0x01}},
		{[]byte("\x00\x00\xff\x01\x10\x00")},
	}
	c["FuzzHFJSON"] = [][]any{
		{readTestFile(t, "hf", "tiny-qwen3", "tokenizer.json"), readTestFile(t, "hf", "tiny-qwen3", "tokenizer_config.json")},
		{readTestFile(t, "hf", "tiny-llama3", "tokenizer.json"), readTestFile(t, "hf", "tiny-llama3", "tokenizer_config.json")},
		{[]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]},"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"}}`), []byte(`{}`)},
	}
	c["FuzzLlama2C"] = [][]any{
		{readTestFile(t, "models", "tok512.bin"), 512},
		{readTestFile(t, "models", "tok512.bin"), 0},
	}
	return c
}

// TestFuzzSeeds checks that the seed corpora seedCorpus generates are
// committed (go test -run TestFuzzSeeds -update-seeds rewrites them).
func TestFuzzSeeds(t *testing.T) {
	for target, seeds := range seedCorpus(t) {
		dir := filepath.Join("testdata", "fuzz", target)
		for i, args := range seeds {
			var b strings.Builder
			b.WriteString("go test fuzz v1\n")
			for _, a := range args {
				switch v := a.(type) {
				case string:
					fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
				case []byte:
					fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
				case int:
					fmt.Fprintf(&b, "int(%d)\n", v)
				}
			}
			path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
			if *updateSeeds {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			// Only presence is checked: the GGUF seeds depend on
			// loader.WriteGGUF's exact output. go test runs every file as
			// a case of its fuzz target.
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s is missing (run go test -run TestFuzzSeeds -update-seeds): %v", path, err)
			}
		}
	}
}

// fuzzToks are the small tokenizers the encoder fuzz targets use.
func fuzzToks(t testing.TB) map[string]*Tokenizer {
	return map[string]*Tokenizer{
		"hf/tiny-llama3":   hfTok(t, "hf/tiny-llama3"),
		"hf/tiny-qwen3":    hfTok(t, "hf/tiny-qwen3"),
		"stories260K.gguf": ggufTok(t, filepath.Join(testdata, "models", "stories260K.gguf")),
		"tok512.bin":       llama2cTok(t),
		// WordPiece (llama.cpp's WPM over the tiny embedding models' vocab)
		"tiny-bert-cls.gguf": ggufTok(t, filepath.Join(testdata, "embed", "models", "tiny-bert-cls-q4_0.gguf")),
		// WordPiece from tokenizer.json (BertNormalizer, BertPreTokenizer)
		"tokenizer/bert-base-uncased": hfTok(t, filepath.Join("tokenizer", "bert-base-uncased")),
	}
}

// FuzzEncode feeds arbitrary text to the BPE and SentencePiece encoders. It
// checks that every id is in range, that text round-trips through Decode
// where the tokenizer is lossless, and that the hand-written pre-tokenizers
// split exactly as the regex engine does.
func FuzzEncode(f *testing.F) {
	for _, s := range fuzzTexts {
		f.Add(s)
	}
	toks := fuzzToks(f)
	f.Fuzz(func(t *testing.T, text string) {
		for name, tk := range toks {
			for _, o := range []EncodeOptions{{}, {AddSpecial: true, SpecialAsText: true}} {
				ids := tk.mustEncodeOpts(text, o)
				for _, id := range ids {
					if id < 0 || int(id) >= tk.VocabSize() {
						t.Fatalf("%s: id %d out of range for %q", name, id, text)
					}
				}
				if o.AddSpecial {
					continue
				}
				// Lossless cases: byte-level BPE without a normalizer, and
				// SentencePiece on text without '▁' (it decodes to a space)
				// or a leading space (dropped with the dummy prefix).
				lossless := utf8.ValidString(text) && (name == "hf/tiny-llama3" ||
					(name == "stories260K.gguf" && !strings.Contains(text, spmSpace) && !strings.HasPrefix(text, " ") && !strings.Contains(text, "<s>") && !strings.Contains(text, "</s>") && !strings.Contains(text, "<unk>")))
				if got := tk.Decode(ids); lossless && got != text {
					t.Fatalf("%s: Decode(Encode(%q)) = %q (ids %v)", name, text, got, ids)
				}
			}
		}
		checkSplitters(t, []string{text})
	})
}

// FuzzDecoder streams arbitrary ids (two bytes each) and checks that the
// chunks never split a character and add up to Decode.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3})
	toks := fuzzToks(f)
	toks["qwen3"] = hfTok(f, "tokenizer/qwen3")
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, tk := range toks {
			var ids []int32
			for i := 0; i+1 < len(data); i += 2 {
				ids = append(ids, int32(int(data[i])|int(data[i+1])<<8)%int32(tk.VocabSize()+2)-1)
			}
			want := tk.Decode(ids)
			d := tk.NewDecoder(DecodeOptions{})
			var sb strings.Builder
			for _, id := range ids {
				c := d.Add(id)
				if !utf8.ValidString(c) {
					t.Fatalf("%s: chunk %q is not valid UTF-8", name, c)
				}
				sb.WriteString(c)
			}
			sb.WriteString(d.Flush())
			if sb.String() != want {
				t.Fatalf("%s ids %v: stream %q, Decode %q", name, ids, sb.String(), want)
			}
		}
	})
}

// exercise runs a freshly loaded tokenizer on a few strings; it must not
// panic or produce out-of-range ids.
func exercise(t *testing.T, tk *Tokenizer) {
	for _, s := range []string{"Hello world", "<|im_start|>x 123", "\xff é"} {
		for _, id := range tk.mustEncode(s, true) {
			if id < 0 || int(id) >= tk.VocabSize() {
				t.Fatalf("id %d out of range (vocab %d)", id, tk.VocabSize())
			}
		}
	}
	ids := make([]int32, 0, 64)
	for i := -2; i < 62; i++ {
		ids = append(ids, int32(i*tk.VocabSize()/60))
	}
	_ = tk.Decode(ids)
	_, _ = tk.RenderChat([]Message{{Role: "user", Content: "hi"}}, ChatOptions{AddGenerationPrompt: true})
}

// FuzzGGUFVocab loads arbitrary GGUF bytes as a vocabulary.
func FuzzGGUFVocab(f *testing.F) {
	// seeded here, not committed: each is 36 KB of the repository's budget
	for _, m := range []string{"tiny-qwen3-f32.gguf", "tiny-llama3-f32.gguf", "stories260K.gguf"} {
		f.Add(miniGGUF(f, m))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := loader.ParseGGUF("fuzz.gguf", data)
		if err != nil {
			return
		}
		tk, err := FromGGUF(g)
		if err != nil {
			return
		}
		exercise(t, tk)
	})
}

// FuzzHFJSON loads arbitrary tokenizer.json and tokenizer_config.json bytes.
func FuzzHFJSON(f *testing.F) {
	f.Add([]byte(`{}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, tokJSON, cfgJSON []byte) {
		tk, err := FromHFJSON(tokJSON, cfgJSON)
		if err != nil {
			return
		}
		exercise(t, tk)
	})
}

// FuzzLlama2C loads arbitrary llama2.c tokenizer.bin bytes.
func FuzzLlama2C(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0}, 0)
	f.Fuzz(func(t *testing.T, data []byte, vocab int) {
		tk, err := FromLlama2C(data, vocab)
		if err != nil {
			return
		}
		exercise(t, tk)
	})
}
