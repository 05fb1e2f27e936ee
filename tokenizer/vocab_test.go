package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"wasmllm/loader"
)

func ggufTok(t testing.TB, path string) *Tokenizer {
	t.Helper()
	tokMu.Lock()
	defer tokMu.Unlock()
	if tk, ok := tokCache[path]; ok {
		return tk
	}
	g, err := loader.ReadGGUF(path)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := FromGGUF(g)
	if err != nil {
		t.Fatalf("FromGGUF(%s): %v", path, err)
	}
	tokCache[path] = tk
	return tk
}

// llamaCppVectors reads llama.cpp's test-tokenizer-0 files: texts separated
// by "\n__ggml_vocab_test__\n", and one line of space-separated ids each.
func llamaCppVectors(t *testing.T, base string) ([]string, [][]int32) {
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d texts but %d id lines", base, len(texts), len(lines))
	}
	ids := make([][]int32, len(lines))
	for i, l := range lines {
		ids[i] = []int32{}
		for _, f := range strings.Fields(l) {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out:%d: %v", base, i+1, err)
			}
			ids[i] = append(ids[i], int32(v))
		}
	}
	return texts, ids
}

// TestLlamaCppVectors checks llama.cpp's own tokenizer test vectors: the
// SentencePiece GGUF vocab, and the llama-bpe / qwen2 vectors against the
// Llama-3 and Qwen3 tokenizer.json.
func TestLlamaCppVectors(t *testing.T) {
	dir := filepath.Join(testdata, "tokenizer", "vocab")
	cases := []struct {
		vectors string
		tok     func(t *testing.T) *Tokenizer
	}{
		{"ggml-vocab-llama-spm.gguf", func(t *testing.T) *Tokenizer { return ggufTok(t, filepath.Join(dir, "ggml-vocab-llama-spm.gguf")) }},
		{"ggml-vocab-llama-bpe.gguf", func(t *testing.T) *Tokenizer { return hfTok(t, "tokenizer/llama3") }},
		{"ggml-vocab-qwen2.gguf", func(t *testing.T) *Tokenizer { return hfTok(t, "tokenizer/qwen3") }},
	}
	for _, c := range cases {
		t.Run(c.vectors, func(t *testing.T) {
			tk := c.tok(t)
			texts, want := llamaCppVectors(t, filepath.Join(dir, c.vectors))
			for i, text := range texts {
				if d := diffIDs(tk.mustEncode(text, false), want[i]); d != "" {
					t.Errorf("test %d: text %q\n%s", i+1, text, d)
				}
			}
		})
	}
}

type tokenizeGolden struct {
	Model string  `json:"model"`
	Text  string  `json:"text"`
	IDs   []int32 `json:"ids"`
}

func readTokenizeGolden(t *testing.T, name string) tokenizeGolden {
	data, err := os.ReadFile(filepath.Join(testdata, "golden", "tokenize", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g tokenizeGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGGUFVocabs checks the vocabularies embedded in the test models against
// llama.cpp's ids, and the tiny models' Hugging Face folders against the
// same ids.
func TestGGUFVocabs(t *testing.T) {
	for _, c := range []struct{ golden, gguf, hf string }{
		{"stories260K", "stories260K.gguf", ""},
		{"tiny-llama3", "tiny-llama3-f32.gguf", "hf/tiny-llama3"},
		{"tiny-qwen3", "tiny-qwen3-f32.gguf", "hf/tiny-qwen3"},
		{"tiny-qwen3", "tiny-qwen3moe-q8_0.gguf", "hf/tiny-qwen3moe"},
	} {
		t.Run(c.gguf, func(t *testing.T) {
			g := readTokenizeGolden(t, c.golden)
			tk := ggufTok(t, filepath.Join(testdata, "models", c.gguf))
			if d := diffIDs(tk.mustEncode(g.Text, true), g.IDs); d != "" {
				t.Errorf("GGUF: text %q\n%s", g.Text, d)
			}
			if got := tk.DecodeOpts(g.IDs, DecodeOptions{SkipSpecial: true}); got != g.Text {
				t.Errorf("GGUF decode: got %q, want %q", got, g.Text)
			}
			if c.hf == "" {
				return
			}
			h := hfTok(t, c.hf)
			if d := diffIDs(h.mustEncode(g.Text, true), g.IDs); d != "" {
				t.Errorf("HF folder: text %q\n%s", g.Text, d)
			}
			// Qwen's tokenizer_config.json has no bos_token while the GGUF
			// names one, so BOS itself may differ; adding it may not.
			if h.VocabSize() != tk.VocabSize() || h.AddBOS() != tk.AddBOS() {
				t.Errorf("HF vs GGUF: vocab %d/%d, AddBOS %v/%v", h.VocabSize(), tk.VocabSize(), h.AddBOS(), tk.AddBOS())
			}
			for id := int32(0); id < int32(tk.VocabSize()); id++ {
				if h.TokenText(id) != tk.TokenText(id) || h.Decode([]int32{id}) != tk.Decode([]int32{id}) {
					t.Errorf("token %d: HF %q decodes %q, GGUF %q decodes %q", id, h.TokenText(id), h.Decode([]int32{id}), tk.TokenText(id), tk.Decode([]int32{id}))
				}
			}
		})
	}
}

// TestTinyHFMatchesGGUF encodes every golden string with each tiny model's
// Hugging Face folder and its GGUF, which must agree id for id (this covers
// NFC for the qwen2 pre-tokenizer and the special tokens of both).
func TestTinyHFMatchesGGUF(t *testing.T) {
	pairs := [][2]string{
		{"hf/tiny-llama3", "tiny-llama3-f32.gguf"},
		{"hf/tiny-qwen3", "tiny-qwen3-f32.gguf"},
	}
	var texts []string
	for _, name := range goldenNames {
		for _, g := range readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", name+".jsonl.gz")) {
			texts = append(texts, g.Text)
		}
	}
	for _, p := range pairs {
		h := hfTok(t, p[0])
		g := ggufTok(t, filepath.Join(testdata, "models", p[1]))
		for _, text := range texts {
			for _, o := range []EncodeOptions{{}, {AddSpecial: true}, {SpecialAsText: true}} {
				if d := diffIDs(g.mustEncodeOpts(text, o), h.mustEncodeOpts(text, o)); d != "" {
					t.Errorf("%s vs %s %+v: text %q\n%s", p[1], p[0], o, text, d)
				}
			}
		}
	}
}

// TestSpecialTokens checks BOS, EOS and add-BOS against tiny_models.json
// (written when the GGUFs were made) and the tokenizer_config.json files.
func TestSpecialTokens(t *testing.T) {
	var models []struct {
		File      string `json:"file"`
		Tokenizer struct {
			BOS      int32            `json:"bos"`
			EOS      int32            `json:"eos"`
			AddBOS   bool             `json:"add_bos"`
			Specials map[string]int32 `json:"specials"`
		} `json:"tokenizer"`
	}
	if err := json.Unmarshal(readTestFile(t, "models", "tiny_models.json"), &models); err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		file := m.File
		if file == "tiny-qwen3moe-f32.gguf" {
			// The F32 original is in ../shared; the q8_0 file has its
			// header's tokenizer.
			file = "tiny-qwen3moe-q8_0.gguf"
		}
		tk := ggufTok(t, filepath.Join(testdata, "models", file))
		want := m.Tokenizer
		if tk.BOS() != want.BOS || tk.EOS()[0] != want.EOS || tk.AddBOS() != want.AddBOS {
			t.Errorf("%s: BOS %d EOS %v AddBOS %v, want %d, %d first, %v", m.File, tk.BOS(), tk.EOS(), tk.AddBOS(), want.BOS, want.EOS, want.AddBOS)
		}
		for text, id := range want.Specials {
			if got := tk.mustEncode(text, false); len(got) != 1 || got[0] != id || !tk.IsSpecial(id) || tk.TokenText(id) != text {
				t.Errorf("%s: %q encodes to %v, want [%d] (special)", m.File, text, got, id)
			}
		}
	}
	for _, c := range []struct {
		dir    string
		bos    int32
		addBOS bool
		eos    []int32
	}{
		{"tokenizer/llama3", 128000, false, []int32{128001, 128009}},
		{"tokenizer/llama3_instruct_v2", 128000, true, []int32{128009, 128001}},
		{"tokenizer/qwen3", -1, false, []int32{151645, 151643}},
	} {
		tk := hfTok(t, c.dir)
		if tk.BOS() != c.bos || tk.AddBOS() != c.addBOS || !slices.Equal(tk.EOS(), c.eos) {
			t.Errorf("%s: BOS %d AddBOS %v EOS %v, want %d %v %v", c.dir, tk.BOS(), tk.AddBOS(), tk.EOS(), c.bos, c.addBOS, c.eos)
		}
	}
	if tk := llama2cTok(t); tk.BOS() != 1 || !slices.Equal(tk.EOS(), []int32{2}) || !tk.AddBOS() {
		t.Errorf("tok512.bin: BOS %d EOS %v AddBOS %v", tk.BOS(), tk.EOS(), tk.AddBOS())
	}
}
