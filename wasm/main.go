//go:build js

package main

import (
	"context"
	"encoding/json"
	"sync"
	"syscall/js"

	"wasmllm/api"
)

func main() {
	w := newWorker()
	handle := js.FuncOf(w.onMessage)
	js.Global().Call("__wasmllmReady", handle)
	go w.loop()
	select {}
}

// job is one message from the page.
type job struct {
	id   int
	op   string
	msg  js.Value
	ctx  context.Context // cancelled by abort, or by a cancel of this id
	body string          // request JSON of chat and completion jobs
}

// worker holds the engine state. Messages are handled one at a time, in
// order, by loop; only abort is handled at once.
type worker struct {
	jobs      chan job
	ctx       context.Context
	cancelAll context.CancelFunc
	loaded    *loadedModel
	src       *loadSource     // what the last successful load read, for reload
	lost      *api.Error      // the device loss that unloaded the model, until a reload or load
	embedder  *loadedEmbedder // the embedding model of load_embedding (embed.go)

	mu      sync.Mutex
	cancels map[int]context.CancelFunc // per job id, until the job ends
}

func newWorker() *worker {
	w := &worker{jobs: make(chan job, 256), cancels: map[int]context.CancelFunc{}}
	w.ctx, w.cancelAll = context.WithCancel(context.Background())
	return w
}

// onMessage receives a page message {id, op, ...} from worker.js. It runs
// inside a JavaScript callback, so it must not block.
func (w *worker) onMessage(_ js.Value, args []js.Value) any {
	if len(args) == 0 {
		return nil
	}
	msg := args[0]
	op := jsString(msg.Get("op"))
	id := 0
	if v := msg.Get("id"); v.Type() == js.TypeNumber {
		id = v.Int()
	}
	if op == "abort" {
		// Everything already sent is aborted; later messages are not.
		w.cancelAll()
		w.ctx, w.cancelAll = context.WithCancel(context.Background())
		return nil
	}
	if op == "cancel" {
		// One job, queued or running: a request ends with finish_reason
		// "abort" within one token; the others are not touched.
		w.mu.Lock()
		if c := w.cancels[id]; c != nil {
			c()
		}
		w.mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithCancel(w.ctx)
	j := job{id: id, op: op, msg: msg, ctx: ctx, body: jsString(msg.Get("body"))}
	w.mu.Lock()
	w.cancels[id] = cancel
	w.mu.Unlock()
	select {
	case w.jobs <- j:
	default:
		w.mu.Lock()
		delete(w.cancels, id)
		w.mu.Unlock()
		cancel()
		postError(id, api.Errorf(api.CodeBadRequest, "too many requests queued"))
	}
	return nil
}

func (w *worker) loop() {
	for j := range w.jobs {
		w.run(j)
		w.mu.Lock()
		if c := w.cancels[j.id]; c != nil {
			c()
			delete(w.cancels, j.id)
		}
		w.mu.Unlock()
	}
}

func (w *worker) run(j job) {
	switch j.op {
	case "load":
		info, err := w.load(j)
		if err != nil {
			postError(j.id, api.Classify(err))
			return
		}
		postResult(j.id, info)
	case "reload":
		info, err := w.reload(j)
		if err != nil {
			postError(j.id, api.Classify(err))
			return
		}
		postResult(j.id, info)
	case "chat", "completion":
		w.generate(j)
	case "load_embedding":
		info, err := w.loadEmbedding(j)
		if err != nil {
			postError(j.id, api.Classify(err))
			return
		}
		postResult(j.id, info)
	case "embeddings":
		w.embeddings(j)
	case "unload":
		w.forget()
		w.forgetEmbedding()
		postResult(j.id, map[string]any{})
	case "reset":
		// Forget the KV cache's prefix: the next request prefills all of
		// its prompt (WebLLM's resetChat).
		if w.loaded != nil {
			w.loaded.runner.Engine.Reset()
		}
		postResult(j.id, map[string]any{})
	case "info":
		if w.loaded == nil {
			postError(j.id, w.notLoaded())
			return
		}
		postResult(j.id, w.loaded.info)
	default:
		postError(j.id, api.Errorf(api.CodeBadRequest, "unknown operation %q", j.op))
	}
}

// generate answers a chat or completion job.
func (w *worker) generate(j job) {
	var r *api.Request
	var err error
	if j.op == "chat" {
		r, err = api.ParseChat([]byte(j.body))
	} else {
		r, err = api.ParseCompletion([]byte(j.body))
	}
	if err != nil {
		postError(j.id, api.Classify(err))
		return
	}
	n, perr := processorCount(j.msg)
	if perr != nil {
		postError(j.id, perr)
		return
	}
	if w.loaded == nil {
		postError(j.id, w.notLoaded())
		return
	}
	if n > 0 {
		r.Engine.Params.Processors = append(r.Engine.Params.Processors, &pageProcessors{ctx: j.ctx, id: j.id})
		defer js.Global().Call("__wasmllmProcessEnd", j.id)
	}
	out, err := w.loaded.runner.Run(yieldCtx{j.ctx}, r, func(chunk any) error {
		post(j.id, "chunk", chunk)
		return nil
	})
	if err != nil {
		e := api.Classify(err)
		if e.Code == api.CodeDeviceLost || e.Code == api.CodeRankFailed {
			// Everything on the device (or a rank's share of the weights)
			// is gone: drop the model, keep what reload needs.
			w.unload()
			e.Message += "; the model was unloaded: call engine.reload() to load it again"
			w.lost = e
		}
		postError(j.id, e)
		return
	}
	postResult(j.id, map[string]any{"response": out, "timings": w.loaded.runner.Last})
}

// notLoaded is the error for a request with no model: the device loss
// that unloaded it, if that is what happened, else not_loaded.
func (w *worker) notLoaded() *api.Error {
	if w.lost != nil {
		return w.lost
	}
	return api.Errorf(api.CodeNotLoaded, "no model is loaded")
}

// yieldCtx lets the browser's event loop run whenever the engine checks for
// cancellation (after every token and every prefill chunk), so an abort
// message is seen within one token even when the CPU backend never waits
// on JavaScript.
type yieldCtx struct{ context.Context }

func (c yieldCtx) Err() error {
	yieldEventLoop()
	return c.Context.Err()
}

// post sends {id, type, data} to the page; data is JSON-encoded here and
// parsed by worker.js.
func post(id int, typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(api.Errorf(api.CodeInternal, "encoding a %s message: %v", typ, err))
		typ = "error"
	}
	js.Global().Call("__wasmllmPost", id, typ, string(b))
}

func postResult(id int, data any) { post(id, "result", data) }

func postError(id int, e *api.Error) { post(id, "error", e) }

func jsString(v js.Value) string {
	if v.Type() == js.TypeString {
		return v.String()
	}
	return ""
}
