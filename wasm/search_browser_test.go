//go:build !js

package main

import (
	"os"
	"path/filepath"
	"testing"

	"wasmllm/cpu"
	"wasmllm/embed"
	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/embedgolden"
	"wasmllm/search"
)

// TestSearchComponent indexes the project's README and ARCHITECTURE
// natively (package search, as cmd/index does) and queries it with
// <wasmllm-search> in Chromium: the page's ranking of its own query vector
// is the native Rank of that vector, hit for hit and score for score; its
// query vector is the native one within the golden tolerance; and its top
// results are the native ranking's for the same query text.
func TestSearchComponent(t *testing.T) {
	t.Parallel()
	site := t.TempDir()
	for _, f := range []string{"README.md", "ARCHITECTURE.md"} {
		data, err := os.ReadFile(browsertest.RepoFile(f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(site, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gguf := browsertest.RepoFile("testdata/embed/models/tiny-bert-cls-q4_0.gguf")
	m, err := embed.OpenGGUF(gguf, cpu.New(0))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := search.Collect(site)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]embed.Input, len(ps))
	for i, p := range ps {
		in[i] = embed.Text(p.Input())
	}
	res, err := m.Embed(in, embed.Options{Truncate: true})
	if err != nil {
		t.Fatal(err)
	}
	vecs := make([][]float32, len(res))
	for i, r := range res {
		vecs[i] = r.Normalized
	}
	web := browsertest.WebDir(t, nil)
	if _, err := search.Write(filepath.Join(web, "search-index"), m.Name, "", ps, vecs); err != nil {
		t.Fatal(err)
	}
	idx, err := search.Read(filepath.Join(web, "search-index"))
	if err != nil {
		t.Fatal(err)
	}
	models := t.TempDir()
	data, err := os.ReadFile(gguf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(models, "tiny-bert-cls-q4_0.gguf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	page := `<!doctype html><meta charset="utf-8"><script type="module" src="./wasmllm-search.js"></script>
<wasmllm-search index="search-index/" model="/models/tiny-bert-cls-q4_0.gguf" backend="cpu" results="8"></wasmllm-search>
<script>window.pageReady = true;</script>`
	if err := os.WriteFile(filepath.Join(web, "search.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Web: web, Models: models, Args: []string{"-max-age", "10m"}})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/search.html")
	b.MustRun(`customElements.whenDefined("wasmllm-search").then(() => document.querySelector("wasmllm-search").ready).then(() => true)`, nil)
	for _, q := range []string{"how are the WebGPU kernels tested", "KV cache on the GPU", "tokenizer"} {
		var got struct {
			Query []float32 `json:"query"`
			Hits  []struct {
				Index int     `json:"index"`
				Score float64 `json:"score"`
				Page  string  `json:"page"`
			} `json:"hits"`
		}
		b.MustRun(`document.querySelector("wasmllm-search").search(`+jsValue(q)+`)`, &got)
		same := idx.Rank(got.Query, 8)
		if len(got.Hits) != len(same) {
			t.Fatalf("%q: %d hits, native %d", q, len(got.Hits), len(same))
		}
		for i := range same {
			if got.Hits[i].Index != same[i].Index || got.Hits[i].Score != same[i].Score {
				t.Errorf("%q: hit %d: page (%d, %v), native Rank of the page's query (%d, %v)", q, i, got.Hits[i].Index, got.Hits[i].Score, same[i].Index, same[i].Score)
			}
		}
		nat, err := m.Embed([]embed.Input{embed.Text(q)}, embed.Options{Truncate: true})
		if err != nil {
			t.Fatal(err)
		}
		if e := embedgolden.RelErr(got.Query, nat[0].Normalized); e > 1e-5 {
			t.Errorf("%q: the page's query vector is %.3g from the native one", q, e)
		}
		native := idx.Rank(nat[0].Normalized, 8)
		for i := range native {
			if got.Hits[i].Index != native[i].Index {
				t.Errorf("%q: hit %d: page %d, native %d (scores %v, %v)", q, i, got.Hits[i].Index, native[i].Index, got.Hits[i].Score, native[i].Score)
			}
		}
		t.Logf("%q: top %s (%.4f), %d passages", q, got.Hits[0].Page, got.Hits[0].Score, idx.Manifest.Count)
	}

	// Offline: with the server stopped, a new element in the page loads the
	// index and the model from Cache Storage (the scripts and the wasm from
	// the HTTP cache) and ranks as before.
	var before, after []struct {
		Index int `json:"index"`
	}
	b.MustRun(`document.querySelector("wasmllm-search").search("tokenizer").then(r => r.hits)`, &before)
	srv.Stop()
	b.MustRun(`(async () => {
		document.querySelector("wasmllm-search").engine.unload();
		const el = document.createElement("wasmllm-search");
		el.setAttribute("index", "search-index/");
		el.setAttribute("model", "/models/tiny-bert-cls-q4_0.gguf");
		el.setAttribute("backend", "cpu");
		el.setAttribute("results", "8");
		document.body.append(el);
		await el.ready;
		return (await el.search("tokenizer")).hits;
	})()`, &after)
	if len(after) != len(before) {
		t.Fatalf("offline: %d hits, online %d", len(after), len(before))
	}
	for i := range before {
		if after[i].Index != before[i].Index {
			t.Errorf("offline hit %d: %d, online %d", i, after[i].Index, before[i].Index)
		}
	}
}
