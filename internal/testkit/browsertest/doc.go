// Package browsertest runs the browser engine end to end from native Go
// tests: it builds the wasm engine and the static server, starts a real
// server (or a fault-injecting one) on 127.0.0.1, drives headless Chromium
// (WebGPU on SwiftShader) with chromedp, and converts test models into
// servable model folders.
//
// A typical test:
//
//	models := t.TempDir()
//	browsertest.ConvertGGUF(t, browsertest.RepoFile("testdata/models/stories260K.gguf"), filepath.Join(models, "stories"))
//	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
//	b := browsertest.NewBrowser(t)
//	b.Open(srv.URL + "/test.html")
//	var info map[string]any
//	b.Run(`wasmllm.createEngine({model: "/models/stories/", backend: "cpu"}).then(e => (window.engine = e).info)`, &info)
//
// The page at /test.html (TestPage) imports wasmllm.js as window.wasmllm.
// Run evaluates an expression that may return a promise; a rejection
// becomes a *JSError with the WasmLLMError's code.
package browsertest
