package tokenizer

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/internal/testkit/shareddata"
	"wasmllm/loader"
)

// phi3Case is a line of a phi3 tokenize golden (llama.cpp's
// llama_tokenize of the model's vocab).
type phi3Case struct {
	Model        string   `json:"model"`
	Text         string   `json:"text"`
	AddSpecial   bool     `json:"add_special"`
	ParseSpecial bool     `json:"parse_special"`
	IDs          []int32  `json:"ids"`
	PiecesHex    []string `json:"pieces_hex"`
}

// checkPhi3Cases runs every case of the .cases.jsonl file path with tok:
// the ids and each id's bytes.
func checkPhi3Cases(t *testing.T, tok *Tokenizer, path string, want int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var c phi3Case
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		got, err := tok.EncodeOpts(c.Text, EncodeOptions{AddSpecial: c.AddSpecial, SpecialAsText: !c.ParseSpecial})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.IDs) {
			t.Errorf("case %d %q (parse special %v):\n got  %v\n want %v", n, c.Text, c.ParseSpecial, got, c.IDs)
			continue
		}
		for i, id := range c.IDs {
			piece := tok.Piece(id)
			if tok.IsSpecial(id) {
				piece = []byte(tok.TokenText(id)) // llama.cpp's pieces with special = true
			}
			if h := hex.EncodeToString(piece); h != c.PiecesHex[i] {
				t.Errorf("case %d: piece of %d = %s, want %s", n, id, h, c.PiecesHex[i])
			}
		}
		if dec := tok.Decode(c.IDs); dec != c.Text && !c.ParseSpecial {
			t.Errorf("case %d: decodes to %q", n, dec)
		}
	}
	if n != want {
		t.Errorf("%d cases, want %d", n, want)
	}
}

// TestPhi4MiniTokenizer runs llama.cpp's tokenization of tiny-phi4mini's
// vocab (GGUF gpt2, pre-tokenizer gpt-4o: o200k's split) on its 6 cases
// (a Phi chat prompt with its specials parsed and as text, code, accents,
// emoji and CJK, runs of spaces); the Q4_0 file holds the same vocab as the
// F32 file the cases name. No BOS (add_bos_token false); <|end|> and
// <|endoftext|> end a generation.
func TestPhi4MiniTokenizer(t *testing.T) {
	tok := ggufTok(t, "../testdata/phi3/models/tiny-phi4mini-q4_0.gguf")
	checkPhi3Cases(t, tok, "../testdata/phi3/golden/tokenize/tiny-phi4mini.cases.jsonl", 6)
	if tok.AddBOS() || !tok.IsEOS(507) || !tok.IsEOS(511) || tok.IsEOS(510) {
		t.Errorf("AddBOS %v, EOS 507 %v 511 %v 510 %v", tok.AddBOS(), tok.IsEOS(507), tok.IsEOS(511), tok.IsEOS(510))
	}
}

// TestPhi3TokenizerShared runs both tiny phi3 vocabs' cases from the shared
// set: tiny-phi4mini's (o200k split) and tiny-phi35mini's (SentencePiece
// llama vocab) (make test-extended).
func TestPhi3TokenizerShared(t *testing.T) {
	dir := shareddata.Dir(t, "testdata-phi3")
	for _, name := range []string{"tiny-phi4mini", "tiny-phi35mini"} {
		t.Run(name, func(t *testing.T) {
			tok := ggufTok(t, filepath.Join(dir, "models", name+"-f32.gguf"))
			checkPhi3Cases(t, tok, filepath.Join(dir, "golden", "tokenize", name+".cases.jsonl"), 6)
		})
	}
}

// TestPhi3RStrip: a vocab named like Phi-3 (general.name containing
// "phi3" or "phi-3", as llama.cpp checks) drops the whitespace after its
// special tokens, except after <|endoftext|>; another name keeps it.
func TestPhi3RStrip(t *testing.T) {
	g, err := loader.ReadGGUF("../testdata/phi3/models/tiny-phi4mini-q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	text := "<|end|>\n<|user|> \n x<|endoftext|> y"
	for name, want := range map[string]int{"Phi-3.5-mini-instruct": 0, "tiny-phi4mini-random": 2} {
		g.Meta["general.name"] = name
		tok, err := FromGGUF(g)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode(text, false)
		if err != nil {
			t.Fatal(err)
		}
		spaces := 0
		for i, id := range ids {
			if i > 0 && ids[i-1] == 511 || i > 0 && ids[i-1] == 509 {
				if s := tok.TokenText(id); strings.TrimSpace(s) == "" || strings.HasPrefix(s, "Ġ") || strings.HasPrefix(s, "Ċ") {
					spaces++
				}
			}
		}
		if spaces != want {
			t.Errorf("name %q: %d whitespace tokens after <|end|> and <|user|> in %v, want %d", name, spaces, ids, want)
		}
		if i := slices.Index(ids, 507); i < 0 || i+1 == len(ids) || !strings.HasPrefix(tok.TokenText(ids[i+1]), "Ġ") {
			t.Errorf("name %q: %v: the space after <|endoftext|> is not kept", name, ids)
		}
	}
}
