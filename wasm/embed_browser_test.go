//go:build !js

package main

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/embedgolden"
)

// TestEmbeddingsCreate loads the vendored embedding GGUFs with
// createEngine({model, embedding: true}) in headless Chromium, on WebGPU
// and on the CPU backend, and checks engine.embeddings.create (strings,
// token ids, base64, a too-long input's error) against llama.cpp's
// goldens; then the same through WebLLM's entry point (webllm.js,
// a model record of model_type ModelType.embedding).
func TestEmbeddingsCreate(t *testing.T) {
	t.Parallel()
	models := t.TempDir()
	names := []string{"tiny-bert-cls-q4_0", "tiny-qwen3-embed-q4_0", "tiny-gemma-embedding-q4_0"}
	for _, n := range names {
		data, err := os.ReadFile(browsertest.RepoFile("testdata/embed/models/" + n + ".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(models, n+".gguf"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	checkEmbeddingsCreate(t, b, names)
}

// TestEmbeddingsCreateFirefox is TestEmbeddingsCreate in Firefox (WebGPU
// on wgpu over llvmpipe).
func TestEmbeddingsCreateFirefox(t *testing.T) {
	t.Parallel()
	models := t.TempDir()
	names := []string{"tiny-bert-cls-q4_0", "tiny-qwen3-embed-q4_0", "tiny-gemma-embedding-q4_0"}
	for _, n := range names {
		data, err := os.ReadFile(browsertest.RepoFile("testdata/embed/models/" + n + ".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(models, n+".gguf"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewFirefox(t)
	b.Open(srv.URL + "/test.html")
	checkEmbeddingsCreate(t, b, names)
}

func checkEmbeddingsCreate(t *testing.T, b *browsertest.Browser, names []string) {
	for _, n := range names {
		g, err := embedgolden.Read(browsertest.RepoFile("testdata/embed/golden/" + n + ".json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		for _, backend := range []string{"webgpu", "cpu"} {
			var info struct {
				Backend string `json:"backend"`
				Model   struct {
					Name string `json:"name"`
					Arch string `json:"arch"`
				} `json:"model"`
				Embedding struct {
					Dimensions int    `json:"dimensions"`
					Pooling    string `json:"pooling"`
					MaxTokens  int    `json:"max_tokens"`
				} `json:"embedding"`
			}
			b.MustRun(`wasmllm.createEngine({model: "/models/`+n+`.gguf", embedding: true, backend: "`+backend+`"}).then(e => (window.engine = e).info)`, &info)
			if info.Backend != backend || info.Embedding.Dimensions != g.NEmbdOut || info.Embedding.Pooling != g.Pooling || info.Model.Name != n || info.Model.Arch != g.Arch {
				t.Fatalf("%s on %s: info %+v", n, backend, info)
			}
			var texts []string
			var want [][]float32
			tokens := 0
			for i, s := range g.InputTexts {
				if g.AddSpecial[i] {
					texts = append(texts, s)
					want = append(want, g.EmbeddingsNormalized[i])
					tokens += len(g.Inputs[i])
				}
			}
			var resp struct {
				Object string `json:"object"`
				Data   []struct {
					Index     int       `json:"index"`
					Embedding []float32 `json:"embedding"`
				} `json:"data"`
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			b.MustRun(`engine.embeddings.create({input: `+jsValue(texts)+`})`, &resp)
			if resp.Object != "list" || len(resp.Data) != len(texts) || resp.Usage.PromptTokens != tokens {
				t.Fatalf("%s on %s: %d items, %d tokens", n, backend, len(resp.Data), resp.Usage.PromptTokens)
			}
			worst := 0.0
			for i, d := range resp.Data {
				e := embedgolden.RelErr(d.Embedding, want[i])
				worst = math.Max(worst, e)
				if e > *g.Tolerance {
					t.Errorf("%s on %s: item %d: rel err %.3g", n, backend, i, e)
				}
			}
			t.Logf("%s on %s: worst rel err %.3g over %d inputs", n, backend, worst, len(texts))
			// token ids as given, base64
			var b64 struct {
				Data []struct {
					Embedding string `json:"embedding"`
				} `json:"data"`
			}
			b.MustRun(`engine.embeddings.create({input: [`+jsValue(g.Inputs[0])+`], encoding_format: "base64"})`, &b64)
			raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
			if err != nil || len(raw) != 4*g.NEmbdOut {
				t.Fatalf("base64: %v, %d bytes", err, len(raw))
			}
			v := make([]float32, g.NEmbdOut)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			if e := embedgolden.RelErr(v, g.EmbeddingsNormalized[0]); e > *g.Tolerance {
				t.Errorf("%s on %s: base64 token ids: rel err %.3g", n, backend, e)
			}
			long := make([]int32, info.Embedding.MaxTokens+1)
			err = b.Run(`engine.embeddings.create({input: [[1, 2], `+jsValue(long)+`]})`, nil)
			if je := wantCode(t, err, "bad_request"); je != nil && je.Details["param"] != "input" {
				t.Errorf("too long: %+v", je)
			}
			b.MustRun(`engine.unload()`, nil)
		}
	}

	// WebLLM's entry point: a model record of model_type embedding.
	g, err := embedgolden.Read(browsertest.RepoFile("testdata/embed/golden/tiny-bert-cls-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Model string `json:"model"`
		Data  []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	b.MustRun(`import("./webllm.js").then(async (webllm) => {
		const appConfig = { model_list: [{ model: "/models/tiny-bert-cls-q4_0.gguf", model_id: "bert", model_type: webllm.ModelType.embedding }] };
		const e = await webllm.CreateMLCEngine("bert", { appConfig, backend: "cpu" });
		const r = await e.embeddings.create({ input: `+jsValue(g.InputTexts[2])+` });
		await e.unload();
		return r;
	})`, &resp)
	if resp.Model != "bert" || len(resp.Data) != 1 {
		t.Fatalf("WebLLM: %+v", resp)
	}
	if e := embedgolden.RelErr(resp.Data[0].Embedding, g.EmbeddingsNormalized[2]); e > *g.Tolerance {
		t.Errorf("WebLLM embeddings.create: rel err %.3g", e)
	}
}

// TestEmbeddingsRemote: createEngine({endpoint}) of go run . -api
// -api-embed gives the same embeddings.create answers as the engine in the
// page (llama.cpp's golden within its tolerance, the same usage).
func TestEmbeddingsRemote(t *testing.T) {
	t.Parallel()
	models := t.TempDir()
	gguf := filepath.Join(models, "tiny-bert-cls-q4_0.gguf")
	data, err := os.ReadFile(browsertest.RepoFile("testdata/embed/models/tiny-bert-cls-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gguf, data, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := embedgolden.Read(browsertest.RepoFile("testdata/embed/golden/tiny-bert-cls-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models, Args: []string{"-api", "-api-embed", gguf}})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	type resp struct {
		Model string `json:"model"`
		Data  []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	input := jsValue([]string{g.InputTexts[1], g.InputTexts[2]})
	var local, remote resp
	b.MustRun(`wasmllm.createEngine({model: "/models/tiny-bert-cls-q4_0.gguf", embedding: true, backend: "cpu"}).then(async (e) => {
		const r = await e.embeddings.create({input: `+input+`});
		await e.unload();
		return r;
	})`, &local)
	b.MustRun(`wasmllm.createEngine({endpoint: "/v1", model: "tiny-bert-cls-q4_0"}).then((e) => e.embeddings.create({input: `+input+`}))`, &remote)
	for _, r := range []struct {
		name string
		r    resp
	}{{"local", local}, {"remote", remote}} {
		if r.r.Model != "tiny-bert-cls-q4_0" || len(r.r.Data) != 2 || r.r.Usage.PromptTokens != len(g.Inputs[1])+len(g.Inputs[2]) {
			t.Fatalf("%s: %+v", r.name, r.r)
		}
		for i := range 2 {
			if e := embedgolden.RelErr(r.r.Data[i].Embedding, g.EmbeddingsNormalized[1+i]); e > *g.Tolerance {
				t.Errorf("%s item %d: rel err %.3g", r.name, i, e)
			}
		}
	}
}
