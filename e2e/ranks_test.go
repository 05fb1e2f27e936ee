package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// TestCPURanksHeap: on ranks each rank's heap holds its share of the split
// matrices, streamed to it from the shard, so the CPU engine runs a model
// larger than one heap. With a heap budget of 0.6 of what one rank needs
// (weights, KV cache and activations, engine.info.plan), one rank refuses the model with
// model_too_large before downloading it, and three load it and give one
// rank's greedy text.
func TestCPURanksHeap(t *testing.T) {
	skipShort(t)
	_, models := goldenModels(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	b.MustRun(pageHelpers, nil)
	var got struct {
		Need                 int64
		Text, Refused, Text3 string
		Ranks                int
	}
	b.MustRun(`(async () => {
		const opts = {model: "/models/tiny-qwen3-f32/", backend: "cpu", contextLength: 64};
		const ask = (e) => e.completions.create({prompt: "Once upon a time", max_tokens: 8, temperature: 0, ignore_eos: true}).then((r) => r.choices[0].text);
		let e = await wasmllm.createEngine(Object.assign({cpuRanks: 1}, opts));
		const need = e.info.plan.weight_bytes + e.info.plan.kv_bytes + e.info.plan.activation_bytes;
		const text = await ask(e);
		await e.unload();
		const heap = Math.floor(0.6 * need);
		let refused = "";
		try {
			await wasmllm.createEngine(Object.assign({cpuRanks: 1, heapBytes: heap}, opts));
		} catch (err) {
			refused = err.code;
		}
		e = await wasmllm.createEngine(Object.assign({cpuRanks: 3, cpuMinShardBytes: 1, heapBytes: heap}, opts));
		const text3 = await ask(e);
		const ranks = e.info.cpu_ranks;
		await e.unload();
		return {Need: need, Text: text, Refused: refused, Text3: text3, Ranks: ranks};
	})()`, &got)
	t.Logf("%+v", got)
	if got.Refused != "model_too_large" {
		t.Errorf("one rank with a heap of 0.6 × %d bytes: %q, want model_too_large", got.Need, got.Refused)
	}
	if got.Ranks != 3 || got.Text3 != got.Text || got.Text == "" {
		t.Errorf("three ranks: %d ranks, %q; one rank gave %q", got.Ranks, got.Text3, got.Text)
	}
}

// TestCPURankNoWorker serves the pages without rank.js: the rank workers
// cannot load, the page marks their ranks dead, and the engine runs on one
// rank at once (not after the start's timeout), saying why in
// engine.info.cpu_ranks_note, and answers.
func TestCPURankNoWorker(t *testing.T) {
	skipShort(t)
	web := browsertest.WebDir(t, nil)
	if err := os.Remove(filepath.Join(web, "rank.js")); err != nil {
		t.Fatal(err)
	}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Web: web, Models: modelsDir(t)})
	b := browsertest.NewBrowser(t)
	b.Open(srv.URL + "/test.html")
	var got struct {
		Ranks int
		Note  string
		Text  string
		Ms    float64
	}
	b.MustRun(`(async () => {
		const t0 = performance.now();
		const e = await wasmllm.createEngine({model: "/models/stories260K/", backend: "cpu", cpuRanks: 3});
		const ms = performance.now() - t0;
		const r = await e.completions.create({prompt: "Once upon a time", max_tokens: 4, temperature: 0});
		return {Ranks: e.info.cpu_ranks, Note: e.info.cpu_ranks_note, Text: r.choices[0].text, Ms: ms};
	})()`, &got)
	t.Logf("%+v", got)
	if got.Ranks != 1 || !strings.Contains(got.Note, "rank") || got.Text == "" || got.Ms > 20000 {
		t.Errorf("without rank.js: %+v, want one rank, a note, a reply, within 20 s", got)
	}
}
