package main

import (
	"fmt"
	"html"
	"os"
	"path/filepath"

	"wasmllm/cpu"
	"wasmllm/embed"
	"wasmllm/search"
)

// DocsReport describes the docs search example dist wrote.
type DocsReport struct {
	Pages    int
	Passages int
	Model    string
}

// docsDir is where the docs search example goes in the dist folder.
const docsDir = "docs"

// writeDocs writes the project's own docs as a live example of
// <wasmllm-search>: the Markdown files docs under out/docs/, their index
// (search-index/, built here natively with the text-embedding GGUF
// modelPath, as cmd/index builds one), the model beside it, and an
// index.html whose <wasmllm-search> loads both and links the hits to the
// pages.
func writeDocs(out string, docs []string, modelPath string) (*DocsReport, error) {
	if modelPath == "" {
		return nil, fmt.Errorf("-docs needs -docs-model (a text-embedding GGUF)")
	}
	dir := filepath.Join(out, docsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, d := range docs {
		if err := copyFile(d, filepath.Join(dir, filepath.Base(d))); err != nil {
			return nil, fmt.Errorf("-docs: %w", err)
		}
	}
	ps, err := search.Collect(dir)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("-docs %v: no Markdown or HTML passages", docs)
	}
	m, err := embed.Open(modelPath, cpu.New(0))
	if err != nil {
		return nil, fmt.Errorf("-docs-model: %w", err)
	}
	vecs := make([][]float32, 0, len(ps))
	const batch = 32
	for i := 0; i < len(ps); i += batch {
		in := make([]embed.Input, 0, batch)
		for _, p := range ps[i:min(i+batch, len(ps))] {
			in = append(in, embed.Text(p.Input()))
		}
		res, err := m.Embed(in, embed.Options{Truncate: true})
		if err != nil {
			return nil, err
		}
		for _, r := range res {
			vecs = append(vecs, r.Normalized)
		}
	}
	if _, err := search.Write(filepath.Join(dir, "search-index"), m.Name, "", ps, vecs); err != nil {
		return nil, err
	}
	modelFile := filepath.Base(modelPath)
	if err := copyFile(modelPath, filepath.Join(dir, modelFile)); err != nil {
		return nil, err
	}
	page := fmt.Sprintf(docsPage, html.EscapeString(modelFile), html.EscapeString(modelFile))
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(page), 0o644); err != nil {
		return nil, err
	}
	pages := map[string]bool{}
	for _, p := range ps {
		pages[p.Page] = true
	}
	return &DocsReport{Pages: len(pages), Passages: len(ps), Model: m.Name}, nil
}

// docsPage is the docs search page: the model's file name twice.
const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>wasmllm docs search</title>
<script type="module" src="../wasmllm-search.js"></script>
</head>
<body>
<h1>Search wasmllm's docs</h1>
<p>Semantic search over this project's README and ARCHITECTURE, in the page: the query is embedded
with %s on WebGPU or the CPU and ranked by cosine against the index dist built natively.</p>
<wasmllm-search index="search-index/" model="%s"></wasmllm-search>
</body>
</html>
`
