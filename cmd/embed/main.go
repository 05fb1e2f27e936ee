// Command embed prints the embedding of one input with a text-embedding
// model (a GGUF of bert, nomic-bert, or Qwen3-Embedding's qwen3 with a
// pooling type), as cmd/generate is to chat: one JSON object
// {"embedding": [...], "normalized": [...], "tokens": N}, embedding being
// the model's own pooling before L2 normalisation.
//
//	go run ./cmd/embed -model testdata/embed/models/tiny-bert-cls-q4_0.gguf -input "the sun"
//	go run ./cmd/embed -model M -tokens 101,204,219,102
//	go run ./cmd/embed -model M -input TEXT -dimensions 64 -truncate
//	go run ./cmd/embed -model M -input TEXT -backend webgpu   # in headless Chromium
//
// Text gets the model's special tokens ([CLS] … [SEP], <|endoftext|>) and
// special tokens written in it are recognised; -tokens are used as given.
// An input over the model's length is an error unless -truncate.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"wasmllm/embed"
	"wasmllm/model"
)

type config struct {
	args                          []string // as given, to run again in the browser
	model, input, tokens, backend string
	threads, dimensions           int
	truncate, inputSet            bool
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), c, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	c := &config{args: args}
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	fs.StringVar(&c.model, "model", "", "a text-embedding GGUF (bert, nomic-bert, or qwen3 with a pooling type), or a Hugging Face folder of a BERT encoder")
	fs.StringVar(&c.backend, "backend", "cpu", "cpu, or webgpu (in headless Chromium, as cmd/generate runs it)")
	fs.StringVar(&c.input, "input", "", "the text to embed (specials added)")
	fs.StringVar(&c.tokens, "tokens", "", "comma-separated token ids, used as given")
	fs.IntVar(&c.threads, "threads", 0, "CPU threads (0: all)")
	fs.IntVar(&c.dimensions, "dimensions", 0, "keep the first N values and renormalise (0: all)")
	fs.BoolVar(&c.truncate, "truncate", false, "cut an input over the model's length instead of failing")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "input" {
			c.inputSet = true
		}
	})
	switch {
	case c.model == "":
		return nil, errors.New("-model is required")
	case c.inputSet == (c.tokens != ""):
		return nil, errors.New("give one of -input and -tokens")
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch c.backend {
	case "cpu", "webgpu":
	default:
		return nil, fmt.Errorf("-backend %q: want cpu or webgpu", c.backend)
	}
	return c, nil
}

// parseIDs reads comma-separated token ids.
func parseIDs(s string) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("-tokens: %q is not a token id", f)
		}
		ids = append(ids, int32(v))
	}
	return ids, nil
}

// output is what the command prints.
type output struct {
	Embedding  []float32 `json:"embedding"`
	Normalized []float32 `json:"normalized"`
	Tokens     int       `json:"tokens"`
}

func run(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	if ran, err := runElsewhere(ctx, c, stdout, stderr); ran {
		return err
	}
	b, closeB, err := newBackend(ctx, c)
	if err != nil {
		return err
	}
	defer closeB()
	m, err := embed.Open(c.model, b)
	if err != nil {
		return err
	}
	in := embed.Text(c.input)
	if c.tokens != "" {
		ids, err := parseIDs(c.tokens)
		if err != nil {
			return err
		}
		in = embed.Tokens(ids)
	}
	res, err := m.Embed([]embed.Input{in}, embed.Options{Truncate: c.truncate, Dimensions: c.dimensions})
	if err != nil {
		if errors.Is(err, model.ErrInputTooLong) {
			return fmt.Errorf("%w (use -truncate)", err)
		}
		return err
	}
	return json.NewEncoder(stdout).Encode(output{res[0].Embedding, res[0].Normalized, res[0].Tokens})
}
