package tokenizer

import (
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
)

type bytesplitLine struct {
	Text              string   `json:"text"`
	IDs               []int32  `json:"ids"`
	TokenBytesHex     []string `json:"token_bytes_hex"`
	SingleTokenDecode []string `json:"single_token_decode"`
	PrefixDecode      []string `json:"prefix_decode"`
	StreamChunks      []string `json:"stream_chunks"`
	Decoded           string   `json:"decoded"`
}

// TestBytesplit checks characters split across tokens: the bytes of every
// token, the decode of each token alone and of each prefix (U+FFFD per
// maximal invalid subsequence), and the streaming decoder's chunks.
func TestBytesplit(t *testing.T) {
	for _, name := range goldenNames {
		t.Run(name, func(t *testing.T) {
			tk := hfTok(t, filepath.Join("tokenizer", name))
			lines := readJSONL[bytesplitLine](t, filepath.Join(testdata, "tokenizer", name+".bytesplit.jsonl"))
			for n, g := range lines {
				if d := diffIDs(tk.mustEncode(g.Text, false), g.IDs); d != "" {
					t.Errorf("line %d: text %q\n%s", n+1, g.Text, d)
				}
				dec := tk.NewDecoder(DecodeOptions{})
				var stream strings.Builder
				for i, id := range g.IDs {
					if got := hex.EncodeToString([]byte(tk.pieces[id])); got != g.TokenBytesHex[i] {
						t.Errorf("line %d token %d (id %d): bytes %s, want %s", n+1, i, id, got, g.TokenBytesHex[i])
					}
					if got := tk.Decode(g.IDs[i : i+1]); got != g.SingleTokenDecode[i] {
						t.Errorf("line %d token %d: single decode %q, want %q", n+1, i, got, g.SingleTokenDecode[i])
					}
					if got := tk.Decode(g.IDs[:i+1]); got != g.PrefixDecode[i] {
						t.Errorf("line %d token %d: prefix decode %q, want %q", n+1, i, got, g.PrefixDecode[i])
					}
					got := dec.Add(id)
					if got != g.StreamChunks[i] {
						t.Errorf("line %d token %d: stream chunk %q, want %q", n+1, i, got, g.StreamChunks[i])
					}
					stream.WriteString(got)
				}
				if rest := dec.Flush(); rest != "" {
					t.Errorf("line %d: Flush = %q, want nothing", n+1, rest)
				}
				if stream.String() != g.Decoded {
					t.Errorf("line %d: stream %q, want %q", n+1, stream.String(), g.Decoded)
				}
			}
			t.Logf("%d lines", len(lines))
		})
	}
}

// TestStreamEqualsDecode checks on every golden string and tokenizer that
// the streamed chunks add up to Decode, that no chunk holds U+FFFD unless
// Decode does, and that Flush emits an incomplete tail as U+FFFD.
func TestStreamEqualsDecode(t *testing.T) {
	toks := map[string]*Tokenizer{
		"stories260K.gguf": ggufTok(t, filepath.Join(testdata, "models", "stories260K.gguf")),
		"tok512.bin":       llama2cTok(t),
	}
	for _, name := range goldenNames {
		toks[name] = hfTok(t, filepath.Join("tokenizer", name))
	}
	lines := readJSONL[goldenLine](t, filepath.Join(testdata, "tokenizer", "qwen3.jsonl.gz"))
	for tname, tk := range toks {
		for _, skip := range []bool{false, true} {
			o := DecodeOptions{SkipSpecial: skip}
			for n, g := range lines {
				ids := tk.mustEncode(g.Text, true)
				want := tk.DecodeOpts(ids, o)
				dec := tk.NewDecoder(o)
				var sb strings.Builder
				for _, id := range ids {
					c := dec.Add(id)
					if strings.ContainsRune(c, '\uFFFD') && !strings.ContainsRune(want, '\uFFFD') {
						t.Errorf("%s line %d: chunk %q has U+FFFD", tname, n+1, c)
					}
					sb.WriteString(c)
				}
				sb.WriteString(dec.Flush())
				if sb.String() != want {
					t.Errorf("%s skip=%v line %d: stream %q, Decode %q", tname, skip, n+1, sb.String(), want)
				}
			}
		}
	}
	// A ZWJ sequence cut inside U+200D: held back, then flushed as U+FFFD.
	tk := toks["qwen3"]
	ids := tk.mustEncode("👨‍👩", false)
	if len(ids) < 2 || tk.pieces[ids[1]] != "\xe2\x80" {
		t.Fatalf("unexpected tokens %v for the ZWJ sequence", ids)
	}
	dec := tk.NewDecoder(DecodeOptions{})
	if got := dec.Add(ids[0]) + dec.Add(ids[1]); got != "👨" {
		t.Errorf("streamed %q, want the man alone", got)
	}
	if got := dec.Flush(); got != "\uFFFD" {
		t.Errorf("Flush = %q, want U+FFFD", got)
	}
}

// TestLossyUTF8 checks the U+FFFD substitution against the WHATWG/Rust
// "maximal subpart" rule on hand-picked byte strings.
func TestLossyUTF8(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\x80b", "a\uFFFDb"},
		{"\xe2\x82", "\uFFFD"},
		{"\xe2\x82a", "\uFFFDa"},
		{"\xf0\x9f\x91", "\uFFFD"},
		{"\x80\x80", "\uFFFD\uFFFD"},
		{"\xe0\x80", "\uFFFD\uFFFD"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"\xc0\xaf", "\uFFFD\uFFFD"},
		{"\xf0\x9f\xa6\x99", "🦙"},
	} {
		if got := string(appendLossy(nil, []byte(c.in))); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSentencePieceLeadingSpace checks that the first piece's leading space
// is dropped only at the start of the text, and that priming a decoder
// with the prompt keeps the space of the first generated token.
func TestSentencePieceLeadingSpace(t *testing.T) {
	tk := ggufTok(t, filepath.Join(testdata, "models", "stories260K.gguf"))
	ids := tk.mustEncode("Once upon a time", true)
	if got := tk.DecodeOpts(ids, DecodeOptions{SkipSpecial: true}); got != "Once upon a time" {
		t.Errorf("decode = %q", got)
	}
	dec := tk.NewDecoder(DecodeOptions{SkipSpecial: true})
	dec.Prime(ids[:3])
	var got string
	for _, id := range ids[3:] {
		got += dec.Add(id)
	}
	if want := tk.DecodeOpts(ids, DecodeOptions{SkipSpecial: true})[len("Once upon"):]; got != want {
		t.Errorf("continuation = %q, want %q", got, want)
	}
}
