package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"wasmllm/api"
	"wasmllm/cpu"
	"wasmllm/embed"
	"wasmllm/model"
)

// embedSlot is one embedding model, loaded by the request holding its turn
// (Engine.acquire under the name embedKey(name)).
type embedSlot struct {
	m *embed.Model
}

// embedKey is an embedding model's key among the slots: apart from the
// model folders' names, which cannot hold a NUL.
func embedKey(name string) string { return "\x00embed/" + name }

// EmbedFiles maps the GGUFs of -api-embed to the names /v1/embeddings
// serves them under: the file name without .gguf. Two files of one name
// are an error.
func EmbedFiles(paths []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		if name == "" || strings.HasPrefix(name, ".") {
			return nil, fmt.Errorf("-api-embed %q: not a model file name", p)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("-api-embed: two models called %q", name)
		}
		out[name] = p
	}
	return out, nil
}

// embeddingModel returns the embedding model a request names: its model,
// or the only one when it names none.
func (e *Engine) embeddingModel(name string) (string, string, *Error) {
	if name == "" {
		if len(e.cfg.Embedders) == 1 {
			for n, p := range e.cfg.Embedders {
				return n, p, nil
			}
		}
		return "", "", errorf(http.StatusBadRequest, "model", "model is required: name one of this server's embedding models (-api-embed)")
	}
	p, ok := e.cfg.Embedders[name]
	if !ok {
		if len(e.cfg.Embedders) == 0 {
			return "", "", errorf(http.StatusNotFound, "model", "the model `%s` does not exist: this server has no embedding models (-api-embed)", clip(name, 200))
		}
		return "", "", errorf(http.StatusNotFound, "model", "the model `%s` does not exist or is not an embedding model", clip(name, 200))
	}
	return name, p, nil
}

// embeddings answers /v1/embeddings: OpenAI's request and response (float
// or base64), each input pooled with the model's pooling and
// L2-normalised, dimensions truncating and renormalising, inputs over the
// model's length refused unless truncate_prompt_tokens asks to cut them.
func (e *Engine) embeddings(w http.ResponseWriter, r *http.Request) {
	body, herr := readJSON(w, r, e.cfg.MaxBody)
	if herr != nil {
		WriteError(w, herr)
		return
	}
	req, err := api.ParseEmbeddings(body)
	if err != nil {
		WriteError(w, fromAPI(err))
		return
	}
	name, path, herr := e.embeddingModel(req.Model)
	if herr != nil {
		WriteError(w, herr)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s, herr := e.acquire(ctx, embedKey(name))
	if herr != nil {
		WriteError(w, herr)
		return
	}
	if s == nil {
		return
	}
	defer s.release()
	e.mu.Lock()
	if e.embeds == nil {
		e.embeds = map[string]*embedSlot{}
	}
	es := e.embeds[name]
	if es == nil {
		es = &embedSlot{}
		e.embeds[name] = es
	}
	e.mu.Unlock()
	if es.m == nil {
		start := time.Now()
		m, err := embed.Open(path, cpu.New(e.cfg.Threads))
		if err != nil {
			e.cfg.Logger.Printf("api: loading %s: %v", clip(name, 200), err)
			msg := strings.ReplaceAll(err.Error(), path, name)
			WriteError(w, errorf(http.StatusInternalServerError, "", "the model `%s` failed to load: %s", clip(name, 200), msg))
			return
		}
		es.m = m
		e.cfg.Logger.Printf("api: loaded %s in %s (%s, %d dims, %s pooling)", clip(name, 200), time.Since(start).Round(time.Millisecond), m.Arch, m.Dim, m.Pooling)
	}
	res, err := es.m.Embed(req.Inputs, req.EmbedOptions())
	if err != nil {
		WriteError(w, embedError(err))
		return
	}
	resp := api.NewEmbeddingResponse(req, name, res)
	e.cfg.Logger.Printf("api: embeddings %s: %d inputs, %d tokens", clip(name, 200), len(res), resp.Usage.PromptTokens)
	writeJSON(w, r, resp)
}

// embedError maps embed's errors: a bad input or dimensions is a 400
// naming the parameter (a too-long input with vLLM's context-length
// wording); anything else is a 500.
func embedError(err error) *Error {
	var ie *model.InputError
	var de *embed.DimensionsError
	switch {
	case errors.As(err, &ie) && errors.Is(err, model.ErrInputTooLong):
		return errorf(http.StatusBadRequest, "input",
			"input %d has %d tokens, over this model's maximum of %d tokens: shorten it, or ask for truncation with truncate_prompt_tokens", ie.Index, ie.Tokens, ie.Max)
	case errors.As(err, &ie):
		return errorf(http.StatusBadRequest, "input", "%s", strings.TrimPrefix(ie.Error(), "model: "))
	case errors.As(err, &de):
		return errorf(http.StatusBadRequest, "dimensions", "%s", strings.TrimPrefix(de.Error(), "embed: "))
	}
	return fromAPI(err)
}

// embedCard is an embedding model's card; MaxModelLen is its input length
// once loaded.
func (e *Engine) embedCard(name string) ModelCard {
	c := ModelCard{ID: name, Object: "model", Created: e.started, OwnedBy: "wasmllm", Root: name}
	e.mu.Lock()
	if es := e.embeds[name]; es != nil && es.m != nil {
		c.MaxModelLen = es.m.E.MaxTokens()
	}
	e.mu.Unlock()
	return c
}

// embedCards are the embedding models' cards, by name.
func (e *Engine) embedCards() []ModelCard {
	names := make([]string, 0, len(e.cfg.Embedders))
	for n := range e.cfg.Embedders {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]ModelCard, len(names))
	for i, n := range names {
		out[i] = e.embedCard(n)
	}
	return out
}
