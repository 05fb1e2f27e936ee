// Package embed turns text or token ids into embedding vectors with a
// text-embedding model: an encoder family (bert, nomic-bert) or a decoder
// with a pooling type (Qwen3-Embedding), and its tokenizer. It is what
// cmd/embed, the server's /v1/embeddings and the browser worker call.
//
// Text is tokenized as llama.cpp's server does for /v1/embeddings: the
// model's special tokens added ([CLS] … [SEP], or Qwen3-Embedding's
// <|endoftext|>) and special tokens written in the text recognised;
// token-id inputs are used as given. Each input is pooled with the model's
// own pooling; Result.Normalized is the L2-normalised vector (llama.cpp's
// embd_normalize 2), optionally cut to Options.Dimensions and renormalised
// (Matryoshka).
package embed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/tokenizer"
)

// Embedder is a model's forward pass to pooled vectors (model.Encoder,
// model.DecoderEmbedder).
type Embedder interface {
	// Embed returns each input's pooled vector, not normalised.
	Embed(seqs [][]int32) ([][]float32, error)
	// MaxTokens is the most tokens one input may have.
	MaxTokens() int
}

// Model is an embedding model ready to run.
type Model struct {
	Name    string
	Tok     *tokenizer.Tokenizer
	E       Embedder
	Dim     int           // the length of every vector
	Pooling model.Pooling // the model's pooling
	Arch    string
}

// ErrNotEmbedding reports a model file that is not a text-embedding model.
var ErrNotEmbedding = errors.New("not a text-embedding model (no encoder architecture and no pooling_type)")

// Open loads a text-embedding model onto b: a GGUF file (OpenGGUF) or a
// Hugging Face folder of a BERT encoder (OpenHF).
func Open(path string, b model.Backend) (*Model, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return OpenHF(path, b)
	}
	return OpenGGUF(path, b)
}

// OpenHF loads a Hugging Face folder onto b: a BERT encoder (config.json,
// safetensors, tokenizer.json, sentence-transformers' 1_Pooling), or a
// decoder whose 1_Pooling asks for last-token or mean pooling
// (Qwen3-Embedding: config.json of qwen3, safetensors saved with or
// without the "model." prefix, tokenizer.json appending <|endoftext|>).
func OpenHF(dir string, b model.Backend) (*Model, error) {
	if !model.IsEncoderHF(dir) && isDecoderHF(dir) {
		return openDecoderHF(dir, b)
	}
	w, err := model.EncoderFromHF(dir)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromHFDir(dir)
	if err != nil {
		return nil, err
	}
	e, err := model.BuildEncoder(b, w)
	if err != nil {
		return nil, err
	}
	return &Model{Name: filepath.Base(filepath.Clean(dir)), Tok: tok, E: e, Dim: w.Config.Hidden, Pooling: w.Config.Pooling, Arch: w.Config.Arch}, nil
}

// isDecoderHF reports whether dir's config.json is one of a decoder
// family (anything else reads as an encoder's, whose errors name it).
func isDecoderHF(dir string) bool {
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	_, err = model.ParseHFConfig(path, data)
	return err == nil
}

// openDecoderHF loads a decoder folder with a sentence-transformers
// pooling.
func openDecoderHF(dir string, b model.Backend) (*Model, error) {
	w, err := model.FromHF(dir)
	if err != nil {
		return nil, err
	}
	pool, ok, err := model.HFPooling(dir)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &loader.FormatError{File: filepath.Join(dir, "1_Pooling", "config.json"), Offset: -1, Err: ErrNotEmbedding}
	}
	tok, err := tokenizer.FromHFDir(dir)
	if err != nil {
		return nil, err
	}
	m, err := model.Build(b, w)
	if err != nil {
		return nil, err
	}
	return &Model{Name: filepath.Base(filepath.Clean(dir)), Tok: tok, E: &model.DecoderEmbedder{M: m, Pooling: pool},
		Dim: w.Config.Hidden, Pooling: pool, Arch: w.Config.Arch}, nil
}

// OpenGGUF loads a GGUF text-embedding model onto b: an encoder
// architecture (bert, nomic-bert) or a decoder with <arch>.pooling_type
// (qwen3 as Qwen3-Embedding). b must implement model.EncoderOps for an
// encoder.
func OpenGGUF(path string, b model.Backend) (*Model, error) {
	g, err := loader.ReadGGUF(path)
	if err != nil {
		return nil, err
	}
	return FromGGUF(g, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), b)
}

// FromGGUF is OpenGGUF on a parsed GGUF (read whole or through a ReaderAt,
// as the browser worker reads one), the model called name.
func FromGGUF(g *loader.GGUF, name string, b model.Backend) (*Model, error) {
	path := g.File
	tok, err := tokenizer.FromGGUF(g)
	if err != nil {
		return nil, err
	}
	if model.IsEncoderGGUF(g) {
		w, err := model.EncoderFromGGUF(g)
		if err != nil {
			return nil, err
		}
		e, err := model.BuildEncoder(b, w)
		if err != nil {
			return nil, err
		}
		return &Model{Name: name, Tok: tok, E: e, Dim: w.Config.Hidden, Pooling: w.Config.Pooling, Arch: w.Config.Arch}, nil
	}
	pool, ok, err := model.DecoderPooling(g)
	if err != nil {
		return nil, err
	}
	if !ok {
		arch, _ := g.String("general.architecture")
		return nil, &loader.FormatError{File: path, Field: "metadata general.architecture", Offset: -1, Err: fmt.Errorf("%w: %q", ErrNotEmbedding, arch)}
	}
	w, err := model.FromGGUF(g)
	if err != nil {
		return nil, err
	}
	m, err := model.Build(b, w)
	if err != nil {
		return nil, err
	}
	return &Model{Name: name, Tok: tok, E: &model.DecoderEmbedder{M: m, Pooling: pool}, Dim: w.Config.Hidden, Pooling: pool, Arch: w.Config.Arch}, nil
}

// Input is one input: a text, or token ids used as given.
type Input struct {
	Text   string
	Tokens []int32
	IsText bool
}

// Text is a text input.
func Text(s string) Input { return Input{Text: s, IsText: true} }

// Tokens is a token-id input.
func Tokens(ids []int32) Input { return Input{Tokens: ids} }

// Options adjusts Embed.
type Options struct {
	// Truncate cuts an input over the model's length to it (a text keeps
	// its special tokens: [CLS] first, [SEP] or <|endoftext|> last); false
	// makes such an input an error naming it.
	Truncate bool
	// TruncateTo, with Truncate, cuts to at most this many tokens instead
	// of the model's length (vLLM's truncate_prompt_tokens); 0: the
	// model's length.
	TruncateTo int
	// Dimensions, when > 0, keeps the first Dimensions values of each
	// vector and renormalises (Matryoshka); at most Model.Dim.
	Dimensions int
	// MaxBatchTokens bounds the tokens of one forward pass (0: 8192, and
	// at least the model's length): more inputs run in several.
	MaxBatchTokens int
}

// Result is one input's embedding.
type Result struct {
	Embedding  []float32 // the pooled vector, not normalised (cut to Dimensions)
	Normalized []float32 // L2-normalised (after the cut)
	Tokens     int       // the tokens the model read, specials included
}

// DimensionsError is a Dimensions the model cannot give.
type DimensionsError struct{ Dimensions, Max int }

func (e *DimensionsError) Error() string {
	return fmt.Sprintf("embed: dimensions %d: want 1..%d, the model's embedding size", e.Dimensions, e.Max)
}

// Tokenize tokenizes text as Embed does: specials added and parsed; with
// truncate, cut to the model's length keeping the specials.
func (m *Model) Tokenize(text string, truncate bool) ([]int32, error) {
	return m.tokenize(text, truncate, m.E.MaxTokens())
}

func (m *Model) tokenize(text string, truncate bool, max int) ([]int32, error) {
	ids, err := m.Tok.EncodeOpts(text, tokenizer.EncodeOptions{AddSpecial: true})
	if err != nil {
		return nil, err
	}
	if !truncate || max <= 0 || len(ids) <= max {
		return ids, nil
	}
	specials, err := m.Tok.EncodeOpts("", tokenizer.EncodeOptions{AddSpecial: true})
	if err != nil {
		return nil, err
	}
	prefix := 0
	if m.Tok.AddBOS() && len(specials) > 0 {
		prefix = 1
	}
	suffix := specials[prefix:]
	if len(specials) >= max {
		return ids[:max], nil
	}
	out := append([]int32(nil), ids[:max-len(suffix)]...)
	return append(out, suffix...), nil
}

// Embed embeds the inputs, batching them (the CPU runs a batch's sequences
// together, each attending to itself). Errors name the input at fault
// (*model.InputError, wrapping model.ErrInputTooLong for one over the
// model's length).
func (m *Model) Embed(inputs []Input, o Options) ([]Result, error) {
	if o.Dimensions < 0 || o.Dimensions > m.Dim {
		return nil, &DimensionsError{o.Dimensions, m.Dim}
	}
	if len(inputs) == 0 {
		return nil, &model.InputError{Reason: "no inputs"}
	}
	seqs := make([][]int32, len(inputs))
	max := m.E.MaxTokens()
	cut := max
	if o.TruncateTo > 0 && (cut <= 0 || o.TruncateTo < cut) {
		cut = o.TruncateTo
	}
	for i, in := range inputs {
		ids := in.Tokens
		if in.IsText {
			var err error
			if ids, err = m.tokenize(in.Text, o.Truncate, cut); err != nil {
				return nil, fmt.Errorf("input %d: %w", i, err)
			}
		} else if o.Truncate && cut > 0 && len(ids) > cut {
			ids = ids[:cut]
		}
		if len(ids) == 0 {
			return nil, &model.InputError{Index: i, Reason: "no tokens"}
		}
		if max > 0 && len(ids) > max {
			return nil, &model.InputError{Index: i, Tokens: len(ids), Max: max, Reason: fmt.Sprintf("over the model's %d tokens (ask for truncation to cut it)", max)}
		}
		seqs[i] = ids
	}
	limit := o.MaxBatchTokens
	if limit <= 0 {
		limit = 8192
	}
	limit = maxInt(limit, max)
	out := make([]Result, 0, len(inputs))
	for start := 0; start < len(seqs); {
		end, n := start, 0
		for end < len(seqs) && (end == start || n+len(seqs[end]) <= limit) {
			n += len(seqs[end])
			end++
		}
		vecs, err := m.E.Embed(seqs[start:end])
		if err != nil {
			var ie *model.InputError
			if errors.As(err, &ie) {
				ie.Index += start
			}
			return nil, err
		}
		for i, v := range vecs {
			if o.Dimensions > 0 {
				v = v[:o.Dimensions]
			}
			out = append(out, Result{Embedding: v, Normalized: model.Normalize(v), Tokens: len(seqs[start+i])})
		}
		start = end
	}
	return out, nil
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
