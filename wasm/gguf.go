//go:build js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"syscall/js"
	"time"

	"wasmllm/api"
	"wasmllm/convert"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/source"
	"wasmllm/wasm/loading"
)

// A GGUF given as the model (a URL whose path ends in .gguf, or a File)
// is read where it lies, with Range requests or Blob slices, one tensor
// at a time, and converted as cmd/convert -quant keep converts it into a
// model folder kept in Cache Storage (web/loader.js ggufFolder,
// localFolder); the load then goes on from that folder as from any other.
// The next load of the same GGUF (same URL, size and ETag; or the same
// file name, size and time) finds the folder and reads nothing of the
// GGUF, and with the server gone it loads from the folder alone.

// ggufSource is a GGUF's identity, kept beside its conversion.
type ggufSource struct {
	Name         string `json:"name"`
	URL          string `json:"url,omitempty"`
	Size         int64  `json:"size"`
	ETag         string `json:"etag,omitempty"`
	LastModified int64  `json:"last_modified,omitempty"`
}

// ggufSourceFile holds a conversion's ggufSource in its folder.
const ggufSourceFile = "gguf-source.json"

// ggufChunk is the most bytes one read of a GGUF asks for.
const ggufChunk = 16 << 20

// ggufModel is the GGUF a load names: the File posted with the message,
// or the model URL when its path ends in .gguf; undefined otherwise.
func ggufModel(j job, o loadOptions) js.Value {
	if f := j.msg.Get("file"); f.Truthy() {
		return f
	}
	if js.Global().Get("__wasmllmLoader").Call("isGGUF", o.Model).Bool() {
		return js.ValueOf(o.Model)
	}
	return js.Undefined()
}

// convertGGUF is the "gguf" phase: it finds the GGUF's conversion in its
// folder or makes it, then points the load at that folder. A GGUF that
// changes on the server while it is converted (code "integrity": see
// gguf_verify.go) is converted again from the start, once, after its
// partial conversion is dropped; info.gguf.restarts counts that.
func (r *loadRun) convertGGUF() error {
	err := r.convertGGUFOnce()
	var ae *api.Error
	if err == nil || !errors.As(err, &ae) || ae.Code != api.CodeIntegrity || r.ggufInfo == nil {
		return err
	}
	if _, derr := await(r.loader.Call("deleteModel", r.ggufInfo["folder"])); derr != nil {
		return err
	}
	if err = r.convertGGUFOnce(); err == nil {
		r.ggufInfo["restarts"] = 1
	} else if errors.As(err, &ae) && ae.Code == api.CodeIntegrity {
		await(r.loader.Call("deleteModel", r.ggufInfo["folder"])) // keep nothing of a file that will not hold still
	}
	return err
}

// convertGGUFOnce is one try of convertGGUF.
func (r *loadRun) convertGGUFOnce() error {
	// A split GGUF's URL (any part's) stands for every part, in order; its
	// parts as Files are put in order.
	models := []js.Value{r.gguf}
	if js.Global().Get("Array").Call("isArray", r.gguf).Bool() {
		var err error
		if models, err = splitFiles(r.gguf); err != nil {
			return err
		}
	} else if r.gguf.Type() == js.TypeString {
		u := r.gguf.String()
		if cut := strings.LastIndexByte(u, '/'); cut >= 0 && !strings.ContainsAny(u[cut:], "?#") {
			if names := loader.GGUFSplitNames(u[cut+1:]); len(names) > 1 {
				models = models[:0]
				for _, n := range names {
					models = append(models, js.ValueOf(u[:cut+1]+n))
				}
			}
		}
	}
	folder := r.loader.Call("ggufFolder", r.gguf).String()
	local, err := await(r.loader.Call("localFolder", folder, js.ValueOf(r.jsOpts)))
	if err != nil {
		return err
	}
	r.ggufInfo = map[string]any{"folder": folder}
	var parts []loader.GGUFPart
	var readers []*jsReaderAt
	var id ggufSource
	var openErr error
	for i, m := range models {
		src, err := await(r.loader.Call("ggufOpen", m, js.ValueOf(r.jsOpts)))
		if err != nil {
			openErr = err
			break
		}
		size := int64(src.Get("size").Float())
		ra := &jsReaderAt{ctx: r.ctx, loader: r.loader, src: src, opts: js.ValueOf(r.jsOpts), size: size}
		if src.Get("url").Truthy() {
			ra.witness = newGGUFWitness(size)
			readers = append(readers, ra)
		}
		parts = append(parts, loader.GGUFPart{Name: jsString(src.Get("name")), Size: size, R: ra})
		if i == 0 {
			id = ggufSource{Name: jsString(src.Get("name")), URL: jsString(src.Get("url")), ETag: jsString(src.Get("etag"))}
			if lm := src.Get("lastModified"); lm.Type() == js.TypeNumber {
				id.LastModified = int64(lm.Float())
			}
		} else {
			id.ETag += "," + jsString(src.Get("etag"))
		}
		id.Size += size
	}
	if openErr == nil {
		r.ggufInfo["name"], r.ggufInfo["url"], r.ggufInfo["bytes"], r.ggufInfo["etag"] = id.Name, id.URL, id.Size, id.ETag
		if len(parts) > 1 {
			r.ggufInfo["parts"] = len(parts)
		}
	}
	// A conversion of this GGUF already in the folder: used as it is, or,
	// when the GGUF cannot be reached, trusted as the last one made.
	kept, err := localJSON(local, ggufSourceFile)
	if err == nil && kept != nil && localHas(local, "manifest.json") {
		var was ggufSource
		if json.Unmarshal(kept, &was) == nil && (openErr != nil || was == id) {
			r.ggufInfo["converted"] = false
			if openErr != nil {
				r.ggufInfo["offline"] = true
				r.ggufInfo["name"], r.ggufInfo["url"], r.ggufInfo["bytes"] = was.Name, was.URL, was.Size
			}
			r.useFolder(folder, local)
			return nil
		}
	}
	if openErr != nil {
		return openErr
	}
	if kept != nil && local.Get("cached").Bool() {
		// The GGUF changed since its conversion (or that one was cut
		// short): drop the old one's files before writing the new.
		if _, err := await(r.loader.Call("deleteModel", folder)); err != nil {
			return err
		}
		if local, err = await(r.loader.Call("localFolder", folder, js.ValueOf(r.jsOpts))); err != nil {
			return err
		}
	}
	// Room for the conversion, about the GGUF's size, before it starts.
	if local.Get("cached").Bool() {
		shards, _ := json.Marshal([]map[string]any{{"file": "(the conversion of " + id.Name + ")", "bytes": id.Size}})
		q, err := await(r.loader.Call("quota", r.id, folder, string(shards), js.ValueOf(r.jsOpts)))
		if err != nil {
			return err
		}
		if p := q.Get("persist"); p.Type() == js.TypeObject {
			r.persist = map[string]any{"granted": p.Get("granted").Truthy(), "asked": p.Get("asked").Truthy(), "already": p.Get("already").Truthy()}
		}
	}
	start := time.Now()
	s, err := source.OpenGGUFAt(parts...)
	if err != nil {
		return ggufError(err)
	}
	defer s.Close()
	in, err := convert.NewInput(s)
	if err != nil {
		return ggufError(err)
	}
	// What the conversion will hold, against the device, before a tensor
	// is read.
	lay, err := convert.Layout(in, convert.DefaultQuant)
	if err != nil {
		return ggufError(err)
	}
	kv, err := r.kvType()
	if err != nil {
		return err
	}
	lim := r.be.limits
	if lim.PerLayer, err = loading.ParsePerLayer(r.o.PerLayerEmbeddings); err != nil {
		return err
	}
	if _, err := loading.CheckKV(lay, lim, r.o.Context, kv); err != nil {
		return err
	}
	store := &jsStore{local: local, beforeManifest: func() error {
		for _, ra := range readers {
			if err := ra.verify(); err != nil {
				return err
			}
		}
		return nil
	}}
	idJSON, _ := json.Marshal(id)
	if err := store.Put(ggufSourceFile, idJSON); err != nil {
		return err
	}
	name := strings.TrimSuffix(id.Name, ".gguf")
	if len(parts) > 1 { // NAME-00001-of-0000N
		name = name[:max(0, len(name)-len("-00001-of-00001"))]
	}
	prog := &ggufProgress{id: r.id, size: id.Size, header: s.GGUF.DataOffset, start: start}
	prog.post(prog.header)
	rep, err := convert.FromSource(r.ctx, convert.Options{In: id.Name, Name: name, Quant: convert.DefaultQuant, Store: store, Workers: 1, Progress: prog.add}, in)
	if err != nil {
		if _, ok := err.(*api.Error); !ok {
			if c := api.Classify(err); c.Code == api.CodeInternal {
				return &api.Error{Code: api.CodeBadModel, Message: id.Name + ": " + err.Error(), Err: err}
			}
		}
		return err
	}
	prog.post(id.Size)
	r.ggufInfo["converted"] = true
	r.ggufInfo["convert_ms"] = msSince(start)
	r.ggufInfo["lossless"] = rep.Total.SumSq == 0
	runtime.GC()
	r.useFolder(folder, local)
	return nil
}

// ggufError is an error of opening a GGUF: bad_model, unless it carries a
// code of its own (a read that failed: network, integrity; an abort).
func ggufError(err error) error {
	if c := api.Classify(err); c.Code != api.CodeInternal && c.Code != api.CodeBadModel {
		return c
	}
	return &api.Error{Code: api.CodeBadModel, Message: err.Error(), Err: err}
}

// splitFiles orders the Files of a split GGUF's parts
// (NAME-0000i-of-0000N.gguf); they must be every part, once.
func splitFiles(files js.Value) ([]js.Value, error) {
	byName := map[string]js.Value{}
	var first string
	for i := range files.Length() {
		f := files.Index(i)
		name := jsString(f.Get("name"))
		if _, dup := byName[name]; dup {
			return nil, api.Errorf(api.CodeBadRequest, "load options: the GGUF file %s is given twice", name)
		}
		byName[name] = f
		if first == "" || name < first {
			first = name
		}
	}
	if len(byName) == 1 {
		return []js.Value{byName[first]}, nil
	}
	names := loader.GGUFSplitNames(first)
	if names == nil {
		return nil, api.Errorf(api.CodeBadRequest, "load options: %d GGUF files, but %s is not a split GGUF's part (NAME-0000i-of-0000N.gguf)", len(byName), first)
	}
	out := make([]js.Value, len(names))
	for i, n := range names {
		f, ok := byName[n]
		if !ok {
			return nil, api.Errorf(api.CodeBadRequest, "load options: the split GGUF's part %s is missing", n)
		}
		out[i] = f
		delete(byName, n)
	}
	for n := range byName {
		return nil, api.Errorf(api.CodeBadRequest, "load options: %s is not a part of the split GGUF %s", n, first)
	}
	return out, nil
}

// useFolder points the load at a converted GGUF's folder.
func (r *loadRun) useFolder(folder string, local js.Value) {
	r.o.Model, r.o.Local = folder, true
	r.local = local
	r.jsOpts["local"] = local
}

// openLocal is a reload's "gguf" phase: the converted folder it loaded
// from before.
func (r *loadRun) openLocal() error {
	local, err := await(r.loader.Call("localFolder", r.o.Model, js.ValueOf(r.jsOpts)))
	if err != nil {
		return err
	}
	r.ggufInfo = map[string]any{"folder": r.o.Model, "converted": false}
	r.useFolder(r.o.Model, local)
	return nil
}

// localJSON returns a file of a local folder, or nil when it has none.
func localJSON(local js.Value, name string) ([]byte, error) {
	v, err := await(local.Call("get", name))
	if err != nil || v.IsNull() || v.IsUndefined() {
		return nil, err
	}
	b := make([]byte, v.Length())
	js.CopyBytesToGo(b, v)
	return b, nil
}

func localHas(local js.Value, name string) bool {
	b, err := localJSON(local, name)
	return err == nil && b != nil
}

// jsReaderAt reads a GGUF (or a part of a split one) through
// web/loader.js ggufRead, keeping samples of a URL's bytes in witness.
type jsReaderAt struct {
	ctx               context.Context
	loader, src, opts js.Value
	size              int64
	witness           *ggufWitness // nil for a Blob
}

func (r *jsReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		if err := r.ctx.Err(); err != nil {
			return n, err
		}
		at := off + int64(n)
		if at >= r.size {
			return n, io.EOF
		}
		want := int(min(int64(len(p)-n), ggufChunk, r.size-at))
		v, err := await(r.loader.Call("ggufRead", r.src, at, want, r.opts))
		if err != nil {
			return n, err
		}
		js.CopyBytesToGo(p[n:n+want], v)
		if r.witness != nil {
			r.witness.saw(p[n:n+want], at)
		}
		n += want
	}
	return n, nil
}

// jsStore puts a conversion's files into its local folder; before
// manifest.json, the last file, which makes the folder a model, it runs
// beforeManifest.
type jsStore struct {
	local          js.Value
	beforeManifest func() error
}

func (s *jsStore) Put(name string, data []byte) error {
	if name == manifest.ManifestFile && s.beforeManifest != nil {
		if err := s.beforeManifest(); err != nil {
			return err
		}
	}
	u8 := js.Global().Get("Uint8Array").New(len(data))
	js.CopyBytesToJS(u8, data)
	_, err := await(s.local.Call("put", name, u8))
	return err
}

// ggufProgress posts a conversion's progress as the page's progress events
// (stage "gguf"): the header's bytes once it is read, then the tensor data
// in proportion to the converted tensors, at most 10 events a second; the
// last, when the folder is whole, has bytes == total.
type ggufProgress struct {
	id           int
	size, header int64
	done         int64
	start, last  time.Time
	posted       int64
}

func (p *ggufProgress) add(n, total int64) {
	p.done += n
	if time.Since(p.last) < 100*time.Millisecond || total <= 0 {
		return
	}
	// Not size itself before the end: the last tensor's shard is still to be stored.
	p.post(min(p.size-1, p.header+(p.size-p.header)*min(p.done, total)/total))
}

func (p *ggufProgress) post(bytes int64) {
	if bytes <= p.posted && bytes != p.size {
		return
	}
	p.last, p.posted = time.Now(), bytes
	rate := 0.0
	if s := time.Since(p.start).Seconds(); s > 0 {
		rate = float64(bytes) / s
	}
	post(p.id, "progress", map[string]any{"stage": "gguf", "bytes": bytes, "total": p.size, "shards_done": 0, "shards_total": 0, "rate": rate})
}
