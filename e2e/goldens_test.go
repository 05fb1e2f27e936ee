package e2e

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/golden"
	"wasmllm/manifest"
	"wasmllm/tokenizer"
)

// goldenRun is one golden's request through the JS API.
type goldenRun struct {
	Backend, KV string
	Ranks       int
	Note        string
	Text        string
	Logprobs    []float64
	Tokens      int
	Finish      string
}

// TestFirefoxGoldens runs every exact llama.cpp golden through the public
// JS API (createEngine, completions.create) in headless Firefox: WebGPU with
// an f32 and an f16 KV cache (wgpu/naga over llvmpipe, so a kernel that naga
// rejects or miscompiles fails here), and the CPU engine. The prompt goes in
// as the golden's token ids; greedy decoding with ignore_eos must give the
// golden's greedy ids (compared as their decoded text), and each token's
// logprob must be the golden logits' log-softmax at that id.
func TestFirefoxGoldens(t *testing.T) {
	skipShort(t)
	files, models := goldenModels(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	jsAPIGoldens(t, browsertest.NewFirefox(t), srv.URL, files, models)
}

// TestChromiumGoldens is TestFirefoxGoldens in Chromium (Dawn over
// SwiftShader).
func TestChromiumGoldens(t *testing.T) {
	skipShort(t)
	files, models := goldenModels(t)
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: models})
	jsAPIGoldens(t, browsertest.NewBrowser(t), srv.URL, files, models)
}

// goldenModels converts the model of every exact golden (the test models
// and the Qwen2 ones) into a models folder, with shards of 256 KiB: the
// experts of tiny-qwen3moe-q8_0 (0.5 MiB) are a tensor in parts over
// shards, as a big model's embedding and head are.
func goldenModels(t *testing.T) ([]*golden.File, string) {
	t.Helper()
	files := golden.Files(t, browsertest.RepoFile("testdata/golden"), "exact", false, false)
	files = append(files, golden.Files(t, browsertest.RepoFile("testdata/qwen2/golden"), "exact", false, false)...)
	if len(files) < 12 {
		t.Fatalf("%d exact goldens, want at least 12", len(files))
	}
	models := t.TempDir()
	parts := 0
	for _, g := range files {
		dir := filepath.Join(models, modelName(g))
		browsertest.Convert(t, g.ModelPath(), dir, browsertest.ConvertOptions{Quant: "keep", ShardMB: 0.25})
		m, err := manifest.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range m.Tensors {
			if len(ti.Parts) > 1 {
				parts++
			}
		}
	}
	if parts == 0 {
		t.Fatal("no golden model has a tensor in parts")
	}
	return files, models
}

func jsAPIGoldens(t *testing.T, b *browsertest.Browser, url string, files []*golden.File, models string) {
	b.Open(url + "/test.html")
	b.MustRun(pageHelpers, nil)
	// The CPU engine runs on 1, 2 and 3 ranks (Web Workers), every weight
	// matrix split across them. Each golden runs in one mode, the modes in
	// turn, so that every golden and every mode goes through the JS API in
	// each browser (each mode on at least two models); the GPU suite
	// (gpu.TestModelGolden and its KV variants) runs every golden on every
	// backend in both browsers.
	modes := []struct {
		backend, kv string
		ranks       int
	}{{"webgpu", "f32", 0}, {"webgpu", "f16", 0}, {"cpu", "", 1}, {"cpu", "", 2}, {"cpu", "", 3}}
	if len(files) < 2*len(modes) {
		t.Fatalf("%d goldens for %d modes: want two a mode", len(files), len(modes))
	}
	for i, g := range files {
		mode := modes[i%len(modes)]
		{
			name := modelName(g)
			label := mode.backend + mode.kv
			if mode.ranks > 0 {
				label += fmt.Sprintf("-ranks%d", mode.ranks)
			}
			t.Run(label+"/"+name, func(t *testing.T) {
				opts := fmt.Sprintf(`{model: "/models/%s/", backend: %q}`, name, mode.backend)
				if mode.kv != "" {
					opts = fmt.Sprintf(`{model: "/models/%s/", backend: %q, kvCacheDtype: %q}`, name, mode.backend, mode.kv)
				}
				if mode.ranks > 0 {
					opts = fmt.Sprintf(`{model: "/models/%s/", backend: %q, cpuRanks: %d, cpuMinShardBytes: 1}`, name, mode.backend, mode.ranks)
				}
				var got goldenRun
				b.MustRun(`(async () => {
					if (window.engine) await engine.unload();
					window.engine = await wasmllm.createEngine(`+opts+`);
					const r = await engine.completions.create({prompt: `+jsonIDs(g.Tokens)+`, max_tokens: `+fmt.Sprint(len(g.Greedy))+`,
						temperature: 0, ignore_eos: true, logprobs: 1});
					const c = r.choices[0];
					return {Backend: engine.info.backend, KV: engine.info.kv_cache_dtype || "", Ranks: engine.info.cpu_ranks, Note: engine.info.cpu_ranks_note, Text: c.text,
						Logprobs: c.logprobs.token_logprobs, Tokens: r.usage.completion_tokens, Finish: c.finish_reason};
				})()`, &got)
				if mode.ranks > 0 && got.Ranks != mode.ranks {
					t.Fatalf("engine on %d CPU ranks (%q), want %d", got.Ranks, got.Note, mode.ranks)
				}
				checkGoldenRun(t, g, models, mode.backend, mode.kv, got)
			})
		}
	}
}

// modelName is the served folder of a golden's model.
func modelName(g *golden.File) string {
	return strings.TrimSuffix(filepath.Base(g.Model), filepath.Ext(g.Model))
}

func jsonIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "[" + strings.Join(s, ",") + "]"
}

func checkGoldenRun(t *testing.T, g *golden.File, models, backend, kv string, got goldenRun) {
	t.Helper()
	if got.Backend != backend || (kv != "" && got.KV != kv) {
		t.Fatalf("engine on %q with KV %q, want %q %q", got.Backend, got.KV, backend, kv)
	}
	if got.Tokens != len(g.Greedy) || got.Finish != "length" {
		t.Fatalf("%d tokens, finish %q; want %d, length", got.Tokens, got.Finish, len(g.Greedy))
	}
	// The API's text skips special tokens, as Hugging Face's decode does.
	want := loadTokenizer(t, filepath.Join(models, modelName(g))).DecodeOpts(g.Greedy, tokenizer.DecodeOptions{SkipSpecial: true})
	if got.Text != want {
		t.Fatalf("greedy text %q, golden's greedy ids %v decode to %q", got.Text, g.Greedy, want)
	}
	// Each chosen token's logprob against the golden row that chose it: the
	// prompt's last row, then the greedy steps' rows.
	tol := 4 * g.Tolerance
	if kv == "f16" {
		tol *= 10
	}
	worst := 0.0
	rows := append([][]float32{g.Logits[len(g.Logits)-1]}, g.GreedyLogits...)
	for i, lp := range got.Logprobs {
		if i >= len(rows) {
			break
		}
		want := logSoftmaxAt(rows[i], g.Greedy[i])
		d := math.Abs(lp - want)
		worst = max(worst, d)
		if d > tol {
			t.Errorf("token %d (id %d): logprob %.6g, golden %.6g (|diff| %.3g > %.3g)", i, g.Greedy[i], lp, want, d, tol)
		}
	}
	t.Logf("%d tokens equal the golden's; worst logprob error %.3g (tolerance %.3g)", len(g.Greedy), worst, tol)
}

// logSoftmaxAt is log(softmax(row)[id]) in float64.
func logSoftmaxAt(row []float32, id int32) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = max(m, float64(v))
	}
	sum := 0.0
	for _, v := range row {
		sum += math.Exp(float64(v) - m)
	}
	return float64(row[id]) - m - math.Log(sum)
}
