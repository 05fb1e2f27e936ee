//go:build js

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall/js"

	"wasmllm/api"
	"wasmllm/embed"
	"wasmllm/internal/jsutil"
	"wasmllm/loader"
	"wasmllm/wasm/loading"
)

// An embedding model (createEngine({model, embedding: true})) is a GGUF
// (bert, nomic-bert, or qwen3 with a pooling type) read whole into memory,
// from its URL or a File, and built on WebGPU or the CPU backend (one
// rank); "embeddings" then answers engine.embeddings.create.

// maxEmbeddingGGUF bounds the GGUF an embedding load reads whole: the
// embedding models this is for are at most a few hundred MB.
const maxEmbeddingGGUF = 1 << 30

// loadedEmbedder is the embedding model of a worker.
type loadedEmbedder struct {
	m    *embed.Model
	be   *backend
	info map[string]any
}

// loadEmbedding runs the "load_embedding" message.
func (w *worker) loadEmbedding(j job) (map[string]any, error) {
	var o loadOptions
	if err := json.Unmarshal([]byte(j.body), &o); err != nil {
		return nil, api.Errorf(api.CodeBadRequest, "load options: %v", err)
	}
	switch o.Backend {
	case "", "auto", loading.BackendWebGPU, loading.BackendCPU:
	default:
		return nil, api.Errorf(api.CodeBadRequest, `load options: backend %q: want "webgpu" or "cpu"`, o.Backend)
	}
	w.forgetEmbedding()
	var buf js.Value
	name := o.Model
	if f := j.msg.Get("file"); f.Truthy() {
		if f.Get("arrayBuffer").Type() != js.TypeFunction || f.Get("size").Type() != js.TypeNumber {
			return nil, api.Errorf(api.CodeBadRequest, "an embedding model is one GGUF File (a split GGUF's parts are not supported)")
		}
		if n := f.Get("name"); n.Type() == js.TypeString {
			name = n.String()
		}
		if f.Get("size").Float() > maxEmbeddingGGUF {
			return nil, api.Errorf(api.CodeModelTooLarge, "the embedding model's GGUF is over %d bytes", maxEmbeddingGGUF)
		}
		ab, err := jsutil.Await(j.ctx, f.Call("arrayBuffer"))
		if err != nil {
			return nil, api.Errorf(api.CodeNetwork, "reading %s: %v", name, err)
		}
		buf = ab
	} else {
		if o.Model == "" {
			return nil, api.Errorf(api.CodeBadRequest, "load options: model is required")
		}
		resp, err := w.cachedFetch(j, o.Model, o.Cache == nil || *o.Cache)
		if err != nil {
			return nil, err
		}
		ab, err := jsutil.Await(j.ctx, resp.Call("arrayBuffer"))
		if err != nil {
			return nil, api.Errorf(api.CodeNetwork, "reading %s: %v", o.Model, err)
		}
		buf = ab
	}
	n := buf.Get("byteLength").Int()
	if n > maxEmbeddingGGUF {
		return nil, api.Errorf(api.CodeModelTooLarge, "the embedding model's GGUF is over %d bytes", maxEmbeddingGGUF)
	}
	data := make([]byte, n)
	js.CopyBytesToGo(data, js.Global().Get("Uint8Array").New(buf))
	base := name[strings.LastIndexAny(name, "/\\")+1:]
	base = strings.TrimSuffix(base, ".gguf")
	g, err := loader.OpenGGUFAt(base+".gguf", bytes.NewReader(data), int64(n))
	if err != nil {
		return nil, api.Classify(err)
	}
	o.CPURanks = 1
	be, err := openBackend(j.ctx, &o)
	if err != nil {
		return nil, err
	}
	m, err := embed.FromGGUF(g, base, be.b)
	if err != nil {
		if be.dev != nil {
			be.dev.Close()
		}
		return nil, api.Classify(err)
	}
	info := map[string]any{"backend": be.name, "notice": be.notice, "adapter": be.adapter,
		"model":     map[string]any{"name": base, "url": o.Model, "arch": m.Arch, "bytes": n},
		"embedding": map[string]any{"dimensions": m.Dim, "pooling": string(m.Pooling), "max_tokens": m.E.MaxTokens()}}
	w.embedder = &loadedEmbedder{m: m, be: be, info: info}
	return info, nil
}

// forgetEmbedding frees the embedding model, if any.
func (w *worker) forgetEmbedding() {
	if w.embedder == nil {
		return
	}
	if w.embedder.be.dev != nil {
		w.embedder.be.dev.Close()
	}
	w.embedder = nil
}

// embeddings runs the "embeddings" message: engine.embeddings.create.
func (w *worker) embeddings(j job) {
	req, err := api.ParseEmbeddings([]byte(j.body))
	if err != nil {
		postError(j.id, api.Classify(err))
		return
	}
	if w.embedder == nil {
		postError(j.id, api.Errorf(api.CodeNotLoaded, "no embedding model is loaded: createEngine({model, embedding: true})"))
		return
	}
	res, err := w.embedder.m.Embed(req.Inputs, req.EmbedOptions())
	if err != nil {
		postError(j.id, api.EmbedError(err))
		return
	}
	name := w.embedder.info["model"].(map[string]any)["name"].(string)
	if req.Model != "" {
		name = req.Model
	}
	postResult(j.id, api.NewEmbeddingResponse(req, name, res))
}

// embedCache is the Cache Storage of embedding GGUFs, by URL.
const embedCache = "wasmllm-embed"

// cachedFetch answers url from Cache Storage when it holds it (a GGUF at a
// URL does not change), else fetches it and, with cache, keeps a copy: an
// embedding model loads offline after its first load.
func (w *worker) cachedFetch(j job, url string, cache bool) (js.Value, error) {
	var store js.Value
	if c := js.Global().Get("caches"); cache && c.Truthy() {
		if s, err := jsutil.Await(j.ctx, c.Call("open", embedCache)); err == nil {
			store = s
			if hit, err := jsutil.Await(j.ctx, s.Call("match", url)); err == nil && hit.Truthy() {
				return hit, nil
			}
		}
	}
	resp, err := jsutil.Await(j.ctx, js.Global().Call("fetch", url))
	if err != nil {
		return js.Value{}, api.Errorf(api.CodeNetwork, "fetching %s: %v", url, err)
	}
	if !resp.Get("ok").Bool() {
		return js.Value{}, api.Errorf(api.CodeNetwork, "fetching %s: HTTP %d", url, resp.Get("status").Int())
	}
	if store.Truthy() {
		// The copy is best effort: a full quota only costs the next load
		// its download.
		if _, err := jsutil.Await(j.ctx, store.Call("put", url, resp.Call("clone"))); err != nil {
			post(j.id, "notice", map[string]any{"message": "the embedding model could not be cached: " + err.Error()})
		}
	}
	return resp, nil
}
