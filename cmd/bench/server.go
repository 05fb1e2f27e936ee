package main

import "wasmllm/internal/testkit/testserver"

// serverFiles are the paths the bench's server maps: its page and
// everything it loads, on 127.0.0.1, cross-origin isolated (wllama's
// threads need SharedArrayBuffer) and uncached (a "network" load must come
// from the network):
//
//	/             cmd/bench/page/ (index.html, bench.js)
//	/probe.wasm   the probe (cmd/bench/probe, GOOS=js)
//	/wasm_exec.js the toolchain's
//	/web/         web/ with wasm_exec.js and the engine's wasmllm.wasm
//	/wllama/      the peer's esm/ folder, from npm
//	/models/      the bench's model folders and GGUF files
type serverFiles struct {
	Page, Web, Wllama, Models  string // folders
	Probe, EngineWasm, WasmExe string // files
}

func startServer(f serverFiles) (*testserver.Server, error) {
	mounts := []testserver.Mount{
		{Prefix: "/probe.wasm", Path: f.Probe},
		{Prefix: "/wasm_exec.js", Path: f.WasmExe},
		{Prefix: "/web/wasm_exec.js", Path: f.WasmExe},
		{Prefix: "/web/wasmllm.wasm", Path: f.EngineWasm},
		{Prefix: "/web/", Path: f.Web},
		{Prefix: "/models/", Path: f.Models},
		{Prefix: "/", Path: f.Page},
	}
	if f.Wllama != "" {
		mounts = append(mounts, testserver.Mount{Prefix: "/wllama/", Path: f.Wllama})
	}
	return testserver.Start(testserver.Options{Mounts: mounts, NoStore: true})
}
