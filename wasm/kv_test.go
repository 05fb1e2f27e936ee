//go:build !js

package main

import (
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// TestKVCacheDtype: on WebGPU the KV cache is f16 by default and with
// kvCacheDtype: "f16" (engine.info says so; the plan counts half the bytes
// of kvCacheDtype: "f32") and generates the same greedy text as f32; the
// CPU backend keeps f32 for "f16" and says so, and keeps q8 for "q8" (the
// plan's bytes per token are a q8 cache's) with the same text; "q8" on
// WebGPU is f16 with a notice for stories260K (its heads of 8 are not a
// multiple of the kernels' 16-value units); an
// unknown type is a bad_request naming the option.
func TestKVCacheDtype(t *testing.T) {
	t.Parallel()
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: browsertest.RepoFile("models")})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	type kvInfo struct {
		Backend string `json:"backend"`
		KV      string `json:"kv_cache_dtype"`
		Context int    `json:"context_length"`
		Notice  string `json:"notice"`
		Plan    struct {
			KVBytes         int64 `json:"kv_bytes"`
			KVBytesPerToken int64 `json:"kv_bytes_per_token"`
		} `json:"plan"`
	}
	req := map[string]any{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0}
	run := func(backend, kv string) (kvInfo, string) {
		t.Helper()
		opts := map[string]any{"model": "/models/stories260K/", "backend": backend}
		if kv != "" {
			opts["kvCacheDtype"] = kv
		}
		mustLoad(t, b, opts)
		var info kvInfo
		b.MustRun(`engine.info`, &info)
		text := complete(t, b, req).Choices[0].Text
		b.MustRun(`engine.unload()`, nil)
		return info, text
	}
	i32, want := run("webgpu", "f32")
	i16, got := run("webgpu", "f16")
	if def, _ := run("webgpu", ""); def != i16 {
		t.Errorf("info by default: %+v, with f16 %+v", def, i16)
	}
	if i32.Backend != "webgpu" || i32.KV != "f32" || i16.Backend != "webgpu" || i16.KV != "f16" ||
		i16.Context != i32.Context || i32.Plan.KVBytes != 2*i16.Plan.KVBytes || i16.Plan.KVBytes <= 0 {
		t.Errorf("info: f32 %+v, f16 %+v", i32, i16)
	}
	if got != want {
		t.Errorf("greedy text: f16 KV %q, f32 KV %q", got, want)
	}
	t.Logf("WebGPU, %d positions: f32 KV %d bytes, f16 KV %d bytes; text %q", i16.Context, i32.Plan.KVBytes, i16.Plan.KVBytes, got)

	// The CPU backend keeps f32.
	ic, cpuText := run("cpu", "f16")
	if ic.Backend != "cpu" || ic.KV != "f32" || ic.Plan.KVBytes != i32.Plan.KVBytes || cpuText != want {
		t.Errorf("cpu: %+v, text %q", ic, cpuText)
	}

	// stories260K: 5 layers of 4 KV heads of 8, one q8 scale a head:
	// K and V of a position are 2·5·4·(8+4) bytes, f32's 2·5·4·8·4.
	iq, q8Text := run("cpu", "q8")
	if iq.Backend != "cpu" || iq.KV != "q8" || iq.Plan.KVBytesPerToken != 2*5*4*12 || ic.Plan.KVBytesPerToken != 2*5*4*32 || q8Text != want {
		t.Errorf("cpu q8: %+v (f32: %+v), text %q", iq, ic, q8Text)
	}
	if ig, _ := run("webgpu", "q8"); ig.KV != "f16" || !strings.Contains(ig.Notice, "q8") {
		t.Errorf("webgpu q8: %+v", ig)
	}

	_, err := load(b, map[string]any{"model": "/models/stories260K/", "kvCacheDtype": "f8"})
	je := wantCode(t, err, "bad_request")
	if je.Details["param"] != "kvCacheDtype" || !strings.Contains(je.Message, `"f8"`) {
		t.Errorf("error %q %v", je.Message, je.Details)
	}
}
