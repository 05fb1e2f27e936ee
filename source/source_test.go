package source_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/source"
	"wasmllm/tokenizer"
)

const (
	testdata = "../testdata"
	bundled  = "../models/stories260K" // cmd/convert's output for stories260K.gguf
)

func TestDetect(t *testing.T) {
	for path, want := range map[string]source.Format{
		testdata + "/models/stories260K.gguf": source.FormatGGUF,
		testdata + "/models/stories260K.bin":  source.FormatLlama2C,
		testdata + "/hf/tiny-llama3":          source.FormatHF,
		bundled:                               source.FormatManifest,
	} {
		if f, err := source.Detect(path); err != nil || f != want {
			t.Errorf("Detect(%s) = %q, %v; want %q", path, f, err, want)
		}
	}
	for _, path := range []string{testdata + "/tokenizer/qwen3.chat.jsonl", testdata, "missing.gguf"} {
		if f, err := source.Detect(path); err == nil {
			t.Errorf("Detect(%s) = %q, want an error", path, f)
		}
	}
	var fe *loader.FormatError
	if _, err := source.Detect(testdata + "/tokenizer/qwen3.chat.jsonl"); !errors.Is(err, loader.ErrBadMagic) || !errors.As(err, &fe) {
		t.Errorf("a JSON file: %v, want a FormatError wrapping ErrBadMagic", err)
	}
}

// sameTokenizer fails unless a and b encode alike and agree on the
// vocabulary, BOS, EOS and chat template.
func sameTokenizer(t *testing.T, what string, a, b *tokenizer.Tokenizer) {
	t.Helper()
	const text = "Once upon a time, the café had 3 cats.\n<|eot_id|> Hello"
	x, err1 := a.Encode(text, true)
	y, err2 := b.Encode(text, true)
	if err1 != nil || err2 != nil || !slices.Equal(x, y) {
		t.Errorf("%s: encodes %v (%v), want %v (%v)", what, x, err1, y, err2)
	}
	if a.VocabSize() != b.VocabSize() || a.BOS() != b.BOS() || !slices.Equal(a.EOS(), b.EOS()) || a.ChatTemplate() != b.ChatTemplate() {
		t.Errorf("%s: vocab/bos/eos %d %d %v, want %d %d %v (same template: %v)", what,
			a.VocabSize(), a.BOS(), a.EOS(), b.VocabSize(), b.BOS(), b.EOS(), a.ChatTemplate() == b.ChatTemplate())
	}
}

// TestOpen opens every format and checks the tokenizer's files: each has
// the sha256 the spec says, and BuildTokenizer builds the same tokenizer
// from them, as the browser does from a converted folder's files.
func TestOpen(t *testing.T) {
	for _, c := range []struct {
		path string
		want string // tokenizer format
	}{
		{testdata + "/models/stories260K.gguf", model.TokenizerGGUF},
		{testdata + "/models/tiny-qwen3-q8_0.gguf", model.TokenizerGGUF},
		{testdata + "/models/stories260K.bin", model.TokenizerLlama2C}, // tok512.bin beside it
		{testdata + "/hf/tiny-qwen3", model.TokenizerHF},
		{bundled, model.TokenizerGGUF},
	} {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			s, err := source.Open(c.path, source.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Weights == nil || s.Tokenizer == nil || s.NoTokenizer != nil {
				t.Fatalf("weights %v, tokenizer %v (%v)", s.Weights != nil, s.Tokenizer, s.NoTokenizer)
			}
			spec := s.Tokenizer.Spec
			if spec.Format != c.want {
				t.Errorf("tokenizer format %q, want %q", spec.Format, c.want)
			}
			var names []string
			files := map[string][]byte{}
			for _, f := range s.Tokenizer.Files {
				names = append(names, f.Name)
				files[f.Name] = f.Data
				if err := spec.Verify(f.Name, f.Name, f.Data); err != nil {
					t.Error(err)
				}
			}
			if !slices.Equal(names, spec.Names()) || len(spec.SHA256) != len(names) {
				t.Errorf("files %v, spec %v with %d hashes", names, spec.Names(), len(spec.SHA256))
			}
			// The spec is one a manifest may hold.
			raw, err := manifestSpec(&spec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := model.ParseTokenizerSpec("manifest.json", raw); err != nil {
				t.Errorf("spec %s: %v", raw, err)
			}
			tok, err := source.BuildTokenizer("", &spec, files, s.Weights.Config.Vocab)
			if err != nil {
				t.Fatal(err)
			}
			sameTokenizer(t, "built from the files", tok, s.Tok())

			w, tok2, err := source.Load(c.path, "")
			if err != nil || !reflect.DeepEqual(w.Config, s.Weights.Config) {
				t.Fatalf("Load: %v", err)
			}
			sameTokenizer(t, "Load", tok2, s.Tok())
		})
	}
}

// TestOpenLazy: GGUF and Hugging Face tensors stay in their files.
func TestOpenLazy(t *testing.T) {
	for _, path := range []string{testdata + "/models/tiny-llama3-q4_0.gguf", testdata + "/hf/tiny-llama3"} {
		s, err := source.Open(path, source.Options{Lazy: true})
		if err != nil {
			t.Fatal(err)
		}
		for name, x := range s.Weights.Tensors {
			if !x.Lazy() {
				t.Errorf("%s: %s was read", path, name)
			}
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}

// copyFiles copies names from src into a new folder and returns it.
func copyFiles(t *testing.T, src string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestNoTokenizer: a llama2.c checkpoint alone and a converted folder
// naming no tokenizer open with none, saying why; a GGUF without one is an
// error.
func TestNoTokenizer(t *testing.T) {
	dir := copyFiles(t, testdata+"/models", "stories260K.bin")
	s, err := source.Open(filepath.Join(dir, "stories260K.bin"), source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tokenizer != nil || s.Tok() != nil || s.NoTokenizer == nil || !strings.Contains(s.NoTokenizer.Error(), "tok512.bin") {
		t.Errorf("llama2.c alone: tokenizer %v, reason %v", s.Tokenizer, s.NoTokenizer)
	}
	// Given one, it has it.
	s, err = source.Open(filepath.Join(dir, "stories260K.bin"), source.Options{Tokenizer: testdata + "/models/tok512.bin"})
	if err != nil || s.Tokenizer == nil || s.Tokenizer.Spec.Format != model.TokenizerLlama2C || s.Tokenizer.Files[0].Name != source.Llama2CTokenizerFile {
		t.Errorf("llama2.c with -tokenizer: %v, %v", s, err)
	}

	m, err := manifest.Read(bundled)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, sh := range m.Shards {
		names = append(names, sh.File)
	}
	dir = copyFiles(t, bundled, names...)
	m.Tokenizer = nil
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, manifest.ManifestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = source.Open(dir, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tokenizer != nil || s.NoTokenizer == nil {
		t.Errorf("folder without a tokenizer: %v, %v", s.Tokenizer, s.NoTokenizer)
	}
}

// TestTokenizerChecksum: a converted folder's tokenizer file that does not
// match its sha256 is refused, naming the file.
func TestTokenizerChecksum(t *testing.T) {
	entries, err := os.ReadDir(bundled)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	dir := copyFiles(t, bundled, names...)
	path := filepath.Join(dir, source.GGUFTokenizerFile)
	data, _ := os.ReadFile(path)
	data[len(data)-1] ^= 1
	os.WriteFile(path, data, 0o644)
	for _, o := range []string{"Open", "Load", "BuildTokenizer"} {
		var err error
		switch o {
		case "Open":
			_, err = source.Open(dir, source.Options{})
		case "Load":
			_, _, err = source.Load(dir, "")
		case "BuildTokenizer":
			m, _ := manifest.Read(dir)
			spec, _ := model.ParseTokenizerSpec(manifest.ManifestFile, m.Tokenizer)
			_, err = source.BuildTokenizer(dir, spec, map[string][]byte{source.GGUFTokenizerFile: data}, m.Config.Vocab)
		}
		var fe *loader.FormatError
		if !errors.Is(err, loader.ErrChecksum) || !errors.As(err, &fe) || fe.File != path {
			t.Errorf("%s: got %v, want a checksum FormatError naming %s", o, err, path)
		}
	}
	// Weights alone do not read the tokenizer.
	if _, err := source.Weights(dir); err != nil {
		t.Errorf("Weights: %v", err)
	}
}

// TestTokenizerErrors: a tokenizer larger than the model, a file missing
// from the ones given, and a GGUF with no tokenizer.
func TestTokenizerErrors(t *testing.T) {
	_, err := source.Open(testdata+"/models/stories260K.gguf", source.Options{Tokenizer: testdata + "/tokenizer/llama3"})
	var ve *source.VocabError
	if !errors.As(err, &ve) || ve.Vocab != 512 || !strings.HasPrefix(err.Error(), testdata+"/models/stories260K.gguf: tokenizer has ") {
		t.Errorf("a larger tokenizer: %v", err)
	}
	tok, err := source.OpenTokenizer(testdata+"/hf/tiny-qwen3/tokenizer.json", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := source.BuildTokenizer("", &tok.Spec, map[string][]byte{"tokenizer.json": tok.Files[0].Data}, 0); err == nil {
		t.Error("a tokenizer with a file missing built")
	}
	if _, err := source.BuildTokenizer("", &tok.Spec, map[string][]byte{"tokenizer.json": tok.Files[0].Data, "tokenizer_config.json": tok.Files[1].Data}, 100); !errors.As(err, &ve) {
		t.Errorf("more tokens than the vocabulary: %v", err)
	}

	// tokenizer.gguf holds only tokenizer.* keys: drop them all.
	g, err := loader.ReadGGUF(testdata + "/models/stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	var keep []loader.MetaKV
	for _, kv := range g.MetaKVs() {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			keep = append(keep, kv)
		}
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var tensors []*loader.Tensor
	for i := range g.Tensors {
		tensors = append(tensors, g.TensorAt(i))
	}
	if err := loader.WriteGGUF(f, g.Version, keep, tensors); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := source.Open(path, source.Options{}); !errors.Is(err, loader.ErrNotFound) || !strings.Contains(err.Error(), "-tokenizer") {
		t.Errorf("a GGUF without a tokenizer: %v", err)
	}
	if _, err := source.OpenTokenizer(path, 0); !errors.Is(err, loader.ErrNotFound) {
		t.Errorf("OpenTokenizer of a GGUF without a tokenizer: %v", err)
	}
	if s, err := source.Open(path, source.Options{Tokenizer: testdata + "/models/tok512.bin"}); err != nil || s.Tokenizer == nil {
		t.Errorf("with -tokenizer: %v", err)
	}
}

func manifestSpec(s *model.TokenizerSpec) (json.RawMessage, error) { return json.Marshal(s) }
