//go:build js

// Command wasm is the wasmllm engine for the browser: it runs in a Web
// Worker (web/worker.js), loads a converted model folder through the
// JavaScript loader (web/loader.js: parallel, verified, cached, resumable
// shard downloads), and answers OpenAI-shaped requests (package api) on
// WebGPU, or on the CPU backend, in ranks, when the browser has no WebGPU.
//
// Build it with GOOS=js GOARCH=wasm go build -o build/wasmllm.wasm ./wasm.
// The page talks to it through web/wasmllm.js; the message protocol between
// the two is described in web/worker.js. With createEngine({shared: true})
// the same worker.js runs inside a SharedWorker (web/shared-worker.js),
// which speaks that protocol for every tab of the origin: the engine is
// unchanged, and sees one page.
//
// # Loading a folder
//
// load.go reads manifest.json and checks it against the adapter's limits
// and the storage quota before fetching anything (package wasm/loading;
// the quota in web/loader.js),
// builds the tokenizer from its fetched files (through
// source.BuildTokenizer, as natively), fetches shards in parallel, checks
// each one's sha256, keeps good shards in Cache Storage, resumes dropped
// connections with Range requests, and on WebGPU writes the verified
// JavaScript bytes straight into GPU buffers (gpu.UploadJS); on the CPU
// engine a split matrix goes from its shard to the ranks, one rank's rows
// at a time (cpu's Backend.UploadFrom); the rest is assembled shard by
// shard (loading.Assembler).
//
// Before a download of at least 1 GiB (createEngine's persistBytes) the
// quota check asks for persistent storage: navigator.storage.persist()
// exists only in a page, so the worker posts "persist" to the page, which
// asks once per page (a browser that prompts and gets no answer in 15 s
// counts as not granted) and answers; the estimate is read after, since
// persistence may raise the quota (Firefox's best-effort one is about
// 10 GiB), and info.load.persist carries the answer. A model over the quota
// fails with quota_exceeded before any shard is fetched, and the page
// offers to run it from the network without caching (cache: false).
//
// # A GGUF where it lies
//
// A GGUF given as the model (a URL whose path ends in .gguf, such as the
// Hugging Face hub's resolve/main links, which redirect to a CDN, or a File)
// is opened through an io.ReaderAt over web/loader.js's ggufRead (Range
// requests of at most 16 MiB, resumed when a connection drops, failing with
// integrity if an answer's ETag, size or Last-Modified is not the first
// one's; or Blob slices), so the header is read
// first (source.OpenGGUFAt) and each canonical tensor when it is
// converted. Package convert converts it with -quant keep, exactly as
// cmd/convert does, into a manifest.Store (manifest.NewStoreWriter: each
// shard held until it is finished, manifest.json last) that puts the files
// in Cache Storage under a same-origin folder URL derived from the GGUF's
// URL, or from a File's name, size and time (web/loader.js ggufFolder),
// beside gguf-source.json (name, URL, size, ETag). Before manifest.json is
// written, samples of the GGUF's bytes kept as they were read are read
// again, so that bytes changed under the same ETag fail with integrity too;
// a GGUF that changed while it was read is converted again from the start,
// once, its partial conversion dropped. The load then goes on as
// for any folder. The next load asks the server for one byte (size and
// ETag); an unchanged GGUF, or an unreachable one, loads from the kept
// folder. The quota check before converting counts the GGUF's size, and the
// limits plan runs on convert.Layout, so a model too large for the device
// is refused before a tensor is read. A split GGUF
// (NAME-0000i-of-0000N.gguf) is opened as one file (loader.OpenGGUFParts),
// from any part's URL or from its parts as Files.
//
// Why convert into the cache rather than upload as it converts: everything
// after it (the plan, the tokenizer, the sha256 checks, the GPU and rank
// uploads, reload after a device loss) is the folder path already tested,
// a second visit is a cache read with no repacking, and a test requires the
// browser's conversion to equal cmd/convert's shard for shard (e2e's
// TestGGUFFromHub). The cost is one extra pass over the converted bytes
// through Cache Storage.
package main
