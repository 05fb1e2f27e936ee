// Package openai serves the OpenAI-compatible API at /v1/ for cmd wasmllm
// (the root server.go), in one of two ways:
//
//   - Engine (-api) answers with the native CPU engine, for the converted
//     model folders the static server lists at /models/: /v1/models,
//     /v1/completions and /v1/chat/completions, streamed (Server-Sent
//     Events) or not, with vLLM's parameter names; and /v1/embeddings for
//     the text-embedding GGUFs of -api-embed (embeddings.go). The request's model
//     names a folder; each model loads on its first request and stays
//     loaded, and answers one request at a time, with a bounded queue.
//   - Proxy (-upstream) passes /v1/ to a vLLM (or any OpenAI-compatible)
//     deployment, so that the page stays same-origin and the upstream's
//     API key stays on the server; streams pass through as they come.
//
// Requests are parsed and responses built by api, the code the
// browser worker runs, so the two engines take the same requests and give
// the same responses. Errors are vLLM's error bodies (see ErrorBody).
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"wasmllm/api"
	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/sampler"
)

// Models are the models an Engine serves: the model folders of -models.
type Models interface {
	// Names lists the models that can be served, in order.
	Names() ([]string, error)
	// Dir returns the folder of the model called name, to load it from. An
	// error wrapping fs.ErrNotExist means there is no such model.
	Dir(name string) (string, error)
}

// EngineConfig configures an Engine.
type EngineConfig struct {
	Models Models
	// Context is each model's KV cache capacity in tokens, vLLM's
	// max_model_len, at most the model's maximum (0: the model's maximum,
	// at most 4096).
	Context int
	// Threads is each model's CPU threads (0: GOMAXPROCS).
	Threads int
	// KVDType is each model's KV cache type: F32 (the zero value), F16 or
	// model.KVQ8 (engine.Options.KVDType).
	KVDType loader.DType
	// Queue is how many requests may wait for a model while it answers
	// another; more get 429. 0 means none wait.
	Queue int
	// MaxBody bounds a request body in bytes (0: DefaultMaxBody).
	MaxBody int64
	Logger  *log.Logger
	// Embedders are the text-embedding models of /v1/embeddings: name ->
	// GGUF file (EmbedFiles).
	Embedders map[string]string
}

// DefaultQueue is the command's default EngineConfig.Queue.
const DefaultQueue = 8

// Engine is the http.Handler of /v1/ on the native engine.
type Engine struct {
	cfg     EngineConfig
	started int64 // the models' "created"

	mu    sync.Mutex
	slots map[string]*slot
	// embeds are the embedding models, loaded on first use (embeddings.go).
	embeds map[string]*embedSlot

	// load builds a model's engine (engine.Load on the CPU backend); tests
	// change it, and params, which is applied to every request's sampling
	// parameters.
	load   func(dir string) (*engine.Engine, error)
	params func(*sampler.Params)
}

// slot is one model: its engine once loaded, and the turn to use it.
type slot struct {
	turn    chan struct{}  // holds one token while a request loads or runs the model
	waiting int            // requests waiting for the turn, guarded by Engine.mu
	context int            // the loaded engine's context, guarded by Engine.mu
	eng     *engine.Engine // set once loaded, by the request holding the turn
}

// NewEngine returns the handler of /v1/ on the native engine.
func NewEngine(cfg EngineConfig) *Engine {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Queue < 0 {
		cfg.Queue = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = log.New(discard{}, "", 0)
	}
	e := &Engine{cfg: cfg, started: time.Now().Unix(), slots: map[string]*slot{}}
	e.load = func(dir string) (*engine.Engine, error) {
		ctx := cfg.Context
		// No model gets more context than it was made for (vLLM refuses a
		// max_model_len past the model's own).
		if m, err := manifest.Read(dir); err == nil && m.Config.MaxContext > 0 && ctx > m.Config.MaxContext {
			ctx = m.Config.MaxContext
		}
		return engine.Load(dir, cpu.New(cfg.Threads), engine.LoadOptions{Options: engine.Options{Context: ctx, KVDType: cfg.KVDType}})
	}
	return e
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/v1/models":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		e.listModels(w, r)
	case strings.HasPrefix(p, "/v1/models/"):
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		e.getModel(w, r, strings.TrimPrefix(p, "/v1/models/"))
	case p == "/v1/completions":
		if allow(w, r, http.MethodPost) {
			e.generate(w, r, api.KindCompletion)
		}
	case p == "/v1/chat/completions":
		if allow(w, r, http.MethodPost) {
			e.generate(w, r, api.KindChat)
		}
	case p == "/v1/embeddings":
		if allow(w, r, http.MethodPost) {
			e.embeddings(w, r)
		}
	default:
		WriteError(w, errorf(http.StatusNotFound, "", "%s is not an endpoint of this server: it serves /v1/models, /v1/completions, /v1/chat/completions and /v1/embeddings", clip(p, 100)))
	}
}

// allow answers 405 unless r's method is one of methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	WriteError(w, errorf(http.StatusMethodNotAllowed, "", "%s takes %s, not %s", clip(r.URL.Path, 100), strings.Join(methods, " or "), clip(r.Method, 20)))
	return false
}

// ModelCard is one model of /v1/models, as vLLM lists it. MaxModelLen is
// the context, known once the model is loaded.
type ModelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen int     `json:"max_model_len,omitempty"`
}

// ModelList is the /v1/models body.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelCard `json:"data"`
}

func (e *Engine) card(name string) ModelCard {
	c := ModelCard{ID: name, Object: "model", Created: e.started, OwnedBy: "wasmllm", Root: name}
	e.mu.Lock()
	if s := e.slots[name]; s != nil {
		c.MaxModelLen = s.context
	}
	e.mu.Unlock()
	return c
}

func (e *Engine) listModels(w http.ResponseWriter, r *http.Request) {
	if err := noBody(r); err != nil {
		WriteError(w, err)
		return
	}
	names, err := e.cfg.Models.Names()
	if err != nil {
		e.cfg.Logger.Printf("api: listing models: %v", err)
		WriteError(w, errorf(http.StatusServiceUnavailable, "", "the models cannot be listed now"))
		return
	}
	list := ModelList{Object: "list", Data: []ModelCard{}}
	for _, n := range names {
		list.Data = append(list.Data, e.card(n))
	}
	list.Data = append(list.Data, e.embedCards()...)
	writeJSON(w, r, list)
}

func (e *Engine) getModel(w http.ResponseWriter, r *http.Request, name string) {
	if err := noBody(r); err != nil {
		WriteError(w, err)
		return
	}
	if _, ok := e.cfg.Embedders[name]; ok {
		writeJSON(w, r, e.embedCard(name))
		return
	}
	if _, herr := e.dir(name); herr != nil {
		WriteError(w, herr)
		return
	}
	writeJSON(w, r, e.card(name))
}

// dir resolves a request's model name to its folder.
func (e *Engine) dir(name string) (string, *Error) {
	dir, err := e.cfg.Models.Dir(name)
	switch {
	case err == nil:
		return dir, nil
	case errors.Is(err, fs.ErrNotExist):
		return "", errorf(http.StatusNotFound, "model", "The model `%s` does not exist.", clip(name, 200))
	}
	e.cfg.Logger.Printf("api: model %q: %v", clip(name, 200), err)
	return "", errorf(http.StatusServiceUnavailable, "", "the model `%s` cannot be opened now", clip(name, 200))
}

// writeJSON answers v as JSON with status 200.
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		WriteError(w, errorf(http.StatusInternalServerError, "", "encoding the response: %v", err))
		return
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// acquire waits for the model's turn: at once when it is free, else in
// the queue if there is room (429 if not), until ctx is done.
func (e *Engine) acquire(ctx context.Context, name string) (*slot, *Error) {
	e.mu.Lock()
	s := e.slots[name]
	if s == nil {
		s = &slot{turn: make(chan struct{}, 1)}
		e.slots[name] = s
	}
	select {
	case s.turn <- struct{}{}:
		e.mu.Unlock()
		return s, nil
	default:
	}
	if s.waiting >= e.cfg.Queue {
		e.mu.Unlock()
		return nil, errorf(http.StatusTooManyRequests, "", "the model `%s` is busy and %d requests are waiting for it: retry later", clip(name, 200), s.waiting)
	}
	s.waiting++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		s.waiting--
		e.mu.Unlock()
	}()
	select {
	case s.turn <- struct{}{}:
		return s, nil
	case <-ctx.Done():
		return nil, nil
	}
}

func (s *slot) release() { <-s.turn }

// requestModel returns the model a request body names. A request that
// names none gets the only model, when there is one (as vLLM serves its
// one model).
func (e *Engine) requestModel(body []byte) (string, *Error) {
	var head struct {
		Model *string `json:"model"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		// The body parsed as a request, so only model can be at fault.
		return "", errorf(http.StatusBadRequest, "model", "model must be a string")
	}
	if head.Model != nil && *head.Model != "" {
		return *head.Model, nil
	}
	names, err := e.cfg.Models.Names()
	if err == nil && len(names) == 1 {
		return names[0], nil
	}
	return "", errorf(http.StatusBadRequest, "model", "model is required: name one of the models of /v1/models")
}

// generate answers /v1/completions (kind KindCompletion) and
// /v1/chat/completions (KindChat).
func (e *Engine) generate(w http.ResponseWriter, r *http.Request, kind string) {
	body, herr := readJSON(w, r, e.cfg.MaxBody)
	if herr != nil {
		WriteError(w, herr)
		return
	}
	var req *api.Request
	var err error
	if kind == api.KindChat {
		req, err = api.ParseChat(body)
	} else {
		req, err = api.ParseCompletion(body)
	}
	if err != nil {
		WriteError(w, fromAPI(err))
		return
	}
	name, herr := e.requestModel(body)
	if herr != nil {
		WriteError(w, herr)
		return
	}
	dir, herr := e.dir(name)
	if herr != nil {
		WriteError(w, herr)
		return
	}
	if e.params != nil {
		e.params(&req.Engine.Params)
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	s, herr := e.acquire(ctx, name)
	if herr != nil {
		WriteError(w, herr)
		return
	}
	if s == nil { // the client left while waiting
		return
	}
	defer s.release()
	if s.eng == nil {
		start := time.Now()
		eng, err := e.load(dir)
		if err != nil {
			e.cfg.Logger.Printf("api: loading %s: %v", clip(name, 200), err)
			msg := strings.ReplaceAll(api.Classify(err).Message, dir, name)
			WriteError(w, errorf(http.StatusInternalServerError, "", "the model `%s` failed to load: %s", clip(name, 200), msg))
			return
		}
		s.eng = eng
		e.mu.Lock()
		s.context = eng.Context()
		e.mu.Unlock()
		e.cfg.Logger.Printf("api: loaded %s in %s (context %d tokens)", clip(name, 200), time.Since(start).Round(time.Millisecond), eng.Context())
	}
	if herr := precheck(ctx, s.eng, req); herr != nil {
		if ctx.Err() == nil { // else the client left while it compiled
			WriteError(w, herr)
		}
		return
	}

	rn := &api.Runner{Engine: s.eng, Model: name}
	var out *streamOut
	emit := func(any) error { return nil }
	if req.Stream {
		out = &streamOut{w: w, rc: http.NewResponseController(w), cancel: cancel}
		emit = out.emit
	}
	resp, err := rn.Run(ctx, req, emit)
	var sum summary
	switch {
	case out != nil && out.gone:
		sum = out.sum
	case err != nil:
		herr := fromAPI(err)
		if herr.Status >= 500 {
			e.cfg.Logger.Printf("api: %s: %v", clip(name, 200), err)
		}
		if out != nil && out.started {
			out.fail(herr)
		} else {
			WriteError(w, herr)
		}
		return
	case out != nil:
		out.done()
		sum = out.sum
	default:
		sum.add(resp)
		writeJSON(w, r, resp)
	}
	sum.left = ctx.Err() != nil || out.isGone()
	e.cfg.Logger.Printf("api: %s %s: %s", kind, clip(name, 200), sum.String())
}

// precheck rejects, before anything is streamed, what the engine would
// reject once started, and what vLLM rejects that the engine would cut
// short: max_tokens past the room the prompt leaves. It runs with the
// model's turn, so the request's grammar is compiled here (api.Prepare,
// under ctx): after the model lookup and within the queue's admission, one
// at a time per model. The prompt it assembles replaces the request's, so
// that the engine does not assemble it again, except for a constrained
// chat, whose messages the engine reads (a thinking block stays outside
// the constraint).
func precheck(ctx context.Context, eng *engine.Engine, req *api.Request) *Error {
	if req.Kind == api.KindChat && eng.Tok != nil && eng.Tok.ChatTemplate() == "" {
		return errorf(http.StatusBadRequest, "", "the model has no chat template: use /v1/completions with a prompt")
	}
	if err := api.Prepare(ctx, eng, req); err != nil {
		return fromAPI(err)
	}
	if err := eng.CheckParams(&req.Engine.Params); err != nil {
		return fromAPI(err)
	}
	var se *engine.SpeculativeError
	if err := eng.CheckSpeculative(req.Engine.Speculative, &req.Engine.Params, req.Engine.Grammar != nil); errors.As(err, &se) {
		return errorf(http.StatusBadRequest, se.Field, "%v", err)
	}
	ids, err := eng.PromptIDs(&req.Engine)
	if err != nil {
		return fromAPI(err)
	}
	// n > context - prompt, not prompt + n > context: n may be any int.
	if n := req.Engine.Params.MaxTokens; n > 0 && req.Engine.Overflow != engine.OverflowTruncate && n > eng.Context()-len(ids) {
		return maxTokensError(n, len(ids), eng.Context())
	}
	if req.Engine.Messages == nil || req.Engine.Grammar == nil {
		req.Engine.Tokens, req.Engine.Prompt, req.Engine.Messages = ids, "", nil
	}
	return nil
}

// summary is what the log says of a request: its usage when the
// response has it, the chunks that carried text, each choice's finish
// reason ("abort" when the client left; "none" if there is none), and
// whether the client left.
type summary struct {
	usage  *api.Usage
	chunks int
	finish []string
	left   bool // the client left before the end
}

// add counts a response or chunk in.
func (s *summary) add(v any) {
	switch c := v.(type) {
	case *api.ChatCompletion:
		if c.Usage != nil {
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if d := ch.Delta; d != nil && (d.Content != nil && *d.Content != "" || len(d.ToolCalls) > 0) {
				s.chunks++
			}
			if ch.FinishReason != nil {
				s.finish = append(s.finish, *ch.FinishReason)
			}
		}
	case *api.TextCompletion:
		if c.Usage != nil {
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if c.Object == api.ObjectTextCompletion && ch.FinishReason == nil && ch.Text != "" {
				s.chunks++
			}
			if ch.FinishReason != nil {
				s.finish = append(s.finish, *ch.FinishReason)
			}
		}
	}
}

// String is the summary for the log.
func (s *summary) String() string {
	var b strings.Builder
	if u := s.usage; u != nil {
		fmt.Fprintf(&b, "%d prompt tokens (%d cached), %d completion tokens, ", u.PromptTokens, u.PromptTokensDetails.CachedTokens, u.CompletionTokens)
	}
	if s.chunks > 0 {
		fmt.Fprintf(&b, "%d chunks streamed, ", s.chunks)
	}
	fin := strings.Join(s.finish, " ")
	switch {
	case fin == "" && s.left:
		fin = "abort"
	case fin == "":
		fin = "none"
	}
	b.WriteString("finish " + fin)
	if s.left {
		b.WriteString(", the client left")
	}
	return b.String()
}
