// Command index builds the semantic-search index of a static site for
// <wasmllm-search> (web/wasmllm-search.js): every Markdown and HTML page
// under -dir split into passages (package search), each embedded natively
// with -model (a text-embedding GGUF), written to -out as manifest.json,
// passages.json and vectors.f16 (L2-normalised f16 vectors).
//
//	go run ./cmd/index -model bge-small-en-v1.5-q8_0.gguf -dir site/ -out site/search-index/
//
// -passage-prefix and -query-prefix are the model's task prefixes (nomic:
// "search_document: " and "search_query: "); the query prefix is stored
// in the manifest for the component.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"wasmllm/cpu"
	"wasmllm/embed"
	"wasmllm/search"
)

type config struct {
	model, dir, out, passagePrefix, queryPrefix string
	threads, batch                              int
}

func main() {
	c, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "index:", err)
		os.Exit(2)
	}
	if err := run(c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "index:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("index", flag.ContinueOnError)
	fs.StringVar(&c.model, "model", "", "a text-embedding GGUF (bert, nomic-bert, Qwen3-Embedding)")
	fs.StringVar(&c.dir, "dir", "", "the site's folder of Markdown and HTML pages")
	fs.StringVar(&c.out, "out", "", "the index folder to write")
	fs.StringVar(&c.passagePrefix, "passage-prefix", "", "text put before every passage (the model's document prefix)")
	fs.StringVar(&c.queryPrefix, "query-prefix", "", "text the component puts before every query (stored in the manifest)")
	fs.IntVar(&c.threads, "threads", 0, "CPU threads (0: all)")
	fs.IntVar(&c.batch, "batch", 32, "passages per forward pass")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case c.model == "" || c.dir == "" || c.out == "":
		return nil, errors.New("-model, -dir and -out are required")
	case c.batch < 1:
		return nil, errors.New("-batch must be at least 1")
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return c, nil
}

func run(c *config, stdout io.Writer) error {
	ps, err := search.Collect(c.dir)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		return fmt.Errorf("-dir %s: no Markdown or HTML passages", c.dir)
	}
	m, err := embed.Open(c.model, cpu.New(c.threads))
	if err != nil {
		return err
	}
	vecs := make([][]float32, 0, len(ps))
	tokens := 0
	for i := 0; i < len(ps); i += c.batch {
		j := min(i+c.batch, len(ps))
		in := make([]embed.Input, 0, j-i)
		for _, p := range ps[i:j] {
			in = append(in, embed.Text(c.passagePrefix+p.Input()))
		}
		res, err := m.Embed(in, embed.Options{Truncate: true})
		if err != nil {
			return err
		}
		for _, r := range res {
			vecs = append(vecs, r.Normalized)
			tokens += r.Tokens
		}
	}
	man, err := search.Write(c.out, m.Name, c.queryPrefix, ps, vecs)
	if err != nil {
		return err
	}
	pages := map[string]bool{}
	for _, p := range ps {
		pages[p.Page] = true
	}
	fmt.Fprintf(stdout, "%d passages of %d pages, %d tokens, %d dims: %s (%s)\n", man.Count, len(pages), tokens, man.Dimensions,
		strings.TrimSuffix(c.out, "/"), humanBytes(man.Files[search.VectorsFile].Bytes+man.Files[search.PassagesFile].Bytes))
	return nil
}

func humanBytes(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}
