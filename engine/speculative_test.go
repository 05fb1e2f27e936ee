package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/source"
)

const qwen35MTP = "../testdata/qwen35/models/tiny-qwen35-mtp-f32.gguf"

// mtpTensors reads the MTP file's NextN block.
func mtpTensors(t *testing.T) *model.Weights {
	t.Helper()
	g, err := loader.ReadGGUF(qwen35MTP)
	if err != nil {
		t.Fatal(err)
	}
	w, err := model.FromGGUFOptions(g, model.LoadOptions{MTP: true})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// specEngine loads path with an MTP block: its own, or tiny-qwen35-mtp's
// grafted on (its nextn tensors, and for a model whose block shape differs
// (the MoE) the layer tensors of the model's last attention layer). A
// grafted block drafts worse, which exercises the rollback more.
func specEngine(t *testing.T, path string, mtp *model.Weights) *Engine {
	t.Helper()
	s, err := source.Open(path, source.Options{MTP: path == qwen35MTP})
	if err != nil {
		t.Fatal(err)
	}
	w := s.Weights
	if w.Config.MTPLayers == 0 {
		L, ML := w.Config.Layers, mtp.Config.Layers
		w.Config.MTPLayers = 1
		names := w.Config.TensorNames()
		w.Config.MTPLayers = 0
		last := L - 1
		for !slices.Contains(names, fmt.Sprintf(model.NameQKV, last)) {
			last--
		}
		prefix, mprefix := fmt.Sprintf("blk.%d.", L), fmt.Sprintf("blk.%d.", ML)
		for _, n := range names {
			rest, ok := cutPrefix(n, prefix)
			if !ok {
				continue
			}
			if src, ok := mtp.Tensors[mprefix+rest]; ok && (w.Config.Arch == mtp.Config.Arch || len(rest) > 6 && rest[:6] == "nextn.") {
				w.Tensors[n] = src
			} else {
				w.Tensors[n] = w.Tensors[fmt.Sprintf("blk.%d.", last)+rest]
			}
		}
		w.Config.MTPLayers = 1
	}
	m, err := model.Build(cpu.New(0), w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(m, s.Tok(), Options{Context: 256, PrefillChunk: 5})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

var qwen35Models = []string{qwen35MTP, qwen35,
	"../testdata/qwen35/models/tiny-qwen35-q8_0.gguf", "../testdata/qwen35/models/tiny-qwen35-q4_0.gguf",
	"../testdata/qwen35/models/tiny-qwen35moe-f32.gguf", "../testdata/qwen35/models/tiny-qwen35moe-q8_0.gguf",
	"../testdata/qwen35/models/tiny-qwen35moe-q4_0.gguf"}

// TestSpeculativeGreedy: on every Qwen3.5 model, greedy output with
// speculation (1, 3 and 4 drafts a round) is greedy output without it, on a
// first turn and on a next turn that reuses the cache; drafted and
// accepted tokens are counted.
func TestSpeculativeGreedy(t *testing.T) {
	mtp := mtpTensors(t)
	for _, path := range qwen35Models {
		t.Run(path[len("../testdata/qwen35/models/"):], func(t *testing.T) {
			plain := load(t, path, 256)
			e := specEngine(t, path, mtp)
			prompts := [][]int32{qwen35Prompt, {5, 300, 12, 9}}
			for _, k := range []int{1, 3, 4, -3} {
				// k < 0: the block's drafts replaced by an oracle, the plain
				// run's tokens with every third position wrong, so rounds
				// accept all, some or none of their drafts.
				e.draftsFor = nil
				if k < 0 {
					k = -k
					e.draftsFor = oracle(t, load(t, path, 256), true)
				}
				var drafted, accepted int
				for i, prompt := range prompts {
					want := gen(t, plain, &Request{Tokens: prompt, Params: greedy(40)}).Tokens
					if i == 0 && path == qwen35 && !slices.Equal(want[:16], qwen35Greedy) {
						t.Fatalf("plain greedy %v, the golden's %v", want[:16], qwen35Greedy)
					}
					res := gen(t, e, &Request{Tokens: prompt, Params: greedy(40), Speculative: &Speculative{Method: "mtp", NumTokens: k}})
					if !slices.Equal(res.Tokens, want) {
						t.Fatalf("k=%d, prompt %d: speculative %v, plain %v", k, i, res.Tokens, want)
					}
					// A next turn: the reply extended.
					next := slices.Concat(prompt, res.Tokens[:len(res.Tokens)-1], []int32{7, 8})
					want2 := gen(t, plain, &Request{Tokens: next, Params: greedy(12)}).Tokens
					res2 := gen(t, e, &Request{Tokens: next, Params: greedy(12), Speculative: &Speculative{Method: "mtp", NumTokens: k}})
					if !slices.Equal(res2.Tokens, want2) {
						t.Fatalf("k=%d, prompt %d, next turn: speculative %v, plain %v", k, i, res2.Tokens, want2)
					}
					if res2.Usage.CachedTokens == 0 {
						t.Errorf("k=%d: the next turn reused nothing", k)
					}
					drafted += res.Usage.DraftedTokens + res2.Usage.DraftedTokens
					accepted += res.Usage.AcceptedTokens + res2.Usage.AcceptedTokens
				}
				if drafted == 0 || accepted > drafted {
					t.Errorf("k=%d: %d drafted, %d accepted", k, drafted, accepted)
				}
				t.Logf("k=%d (oracle %v): %d drafted, %d accepted (%.0f%%); %d tokens run again so far", k, e.draftsFor != nil, drafted, accepted, 100*float64(accepted)/float64(drafted), e.Stats.SpecRerunTokens)
			}
			if e.Stats.DraftedTokens == 0 || e.Stats.SpecRerunTokens == 0 && e.Stats.AcceptedTokens < e.Stats.DraftedTokens {
				t.Errorf("stats %+v", e.Stats)
			}
		})
	}
}

// oracle drafts what plain greedy decoding gives after seq, but when
// wrong is set every draft whose position is a multiple of 3 is wrong.
func oracle(t *testing.T, plain *Engine, wrong bool) func(seq, drafts []int32) []int32 {
	t.Helper()
	return func(seq, drafts []int32) []int32 {
		if len(drafts) == 0 {
			return drafts
		}
		out := gen(t, plain, &Request{Tokens: seq, Params: greedy(len(drafts))}).Tokens
		for i := range out {
			if wrong && (len(seq)+i)%3 == 0 {
				out[i] = (out[i] + 1) % int32(plain.Model.Config.Vocab)
			}
		}
		return out
	}
}

// sampledParams are the statistical tests' sampling parameters: top_k 3,
// so the first three tokens' joint law has 27 cells.
func sampledParams(seed int64, n int) sampler.Params {
	p := sampler.DefaultParams()
	p.Temperature, p.TopK, p.MaxTokens, p.Seed = 1.3, 3, n, &seed
	p.RepetitionPenalty, p.PresencePenalty = 1.2, 0.5
	return p
}

// TestSpeculativeSampledSeeds: a seeded sampled request gives the tokens
// it gives without speculation (the drafts are accepted by the sampler's
// own draws, penalties seeing the accepted drafts as output).
func TestSpeculativeSampledSeeds(t *testing.T) {
	plain, e := load(t, qwen35MTP, 256), specEngine(t, qwen35MTP, mtpTensors(t))
	e.draftsFor = oracle(t, load(t, qwen35MTP, 256), false)
	accepted := 0
	for seed := range int64(20) {
		want := gen(t, plain, &Request{Tokens: qwen35Prompt, Params: sampledParams(seed, 24)}).Tokens
		res := gen(t, e, &Request{Tokens: qwen35Prompt, Params: sampledParams(seed, 24), Speculative: &Speculative{Method: "mtp", NumTokens: 3}})
		if !slices.Equal(res.Tokens, want) {
			t.Fatalf("seed %d: speculative %v, plain %v", seed, res.Tokens, want)
		}
		accepted += res.Usage.AcceptedTokens
	}
	if accepted == 0 {
		t.Error("no draft was ever accepted: the test did not exercise acceptance")
	}
}

// TestSpeculativeSampledLaw: over many seeds, the first three tokens of a
// speculative sampled request (the second and third decided by accepting
// or rejecting drafts) follow the model's exact law: computed from the
// logits with top_k 3 at temperature 1.3 and the penalties, a chi-square
// test over the cells (those expecting fewer than 5 draws pooled) at a
// false-alarm rate of 1e-3.
func TestSpeculativeSampledLaw(t *testing.T) {
	plain, e := load(t, qwen35MTP, 256), specEngine(t, qwen35MTP, mtpTensors(t))
	e.draftsFor = oracle(t, load(t, qwen35MTP, 256), false)
	// The exact law, from plain forward passes.
	law := map[[3]int32]float64{}
	var walk func(prefix []int32, out []int32, prob float64)
	walk = func(prefix, out []int32, prob float64) {
		if len(out) == 3 {
			law[[3]int32(out)] = prob
			return
		}
		for id, q := range processed(t, plain, prefix, out) {
			walk(append(slices.Clone(prefix), id), append(slices.Clone(out), id), prob*q)
		}
	}
	walk(qwen35Prompt, nil, 1)
	const N = 3000
	counts := map[[3]int32]int{}
	accepted := 0
	for seed := range int64(N) {
		res := gen(t, e, &Request{Tokens: qwen35Prompt, Params: sampledParams(1000+seed, 3), Speculative: &Speculative{Method: "mtp", NumTokens: 2}})
		counts[[3]int32(res.Tokens)]++
		accepted += res.Usage.AcceptedTokens
	}
	cells := make([][3]int32, 0, len(law))
	for c := range law {
		cells = append(cells, c)
	}
	sort.Slice(cells, func(i, j int) bool { return law[cells[i]] > law[cells[j]] })
	var chi2, poolE float64
	poolO, df := 0, -1
	for _, c := range cells {
		exp := law[c] * N
		if exp < 5 {
			poolE += exp
			poolO += counts[c]
			continue
		}
		chi2 += (float64(counts[c]) - exp) * (float64(counts[c]) - exp) / exp
		df++
	}
	if poolE > 0 {
		chi2 += (float64(poolO) - poolE) * (float64(poolO) - poolE) / poolE
		df++
	}
	for c, n := range counts {
		if law[c] == 0 {
			t.Errorf("%v drawn %d times: outside the law's support", c, n)
		}
	}
	crit := chi2Critical(df, 1e-3)
	t.Logf("chi-square %.1f with %d degrees of freedom (critical %.1f at 1e-3); %d drafts accepted over %d runs", chi2, df, crit, accepted, N)
	if chi2 > crit {
		t.Errorf("chi-square %.1f > %.1f: the speculative draws do not follow the model's law", chi2, crit)
	}
	if accepted == 0 {
		t.Error("no draft was accepted: acceptance was not tested")
	}
}

// processed is the law of the next token after prefix (out the tokens
// generated so far): the sampler's processing of the logits (repetition
// penalty 1.2 over prompt and output, presence 0.5 over the output,
// temperature 1.3, top_k 3), in float64.
func processed(t *testing.T, e *Engine, prefix, out []int32) map[int32]float64 {
	t.Helper()
	m := e.Model
	cache, err := m.NewCache(len(prefix) + 1)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Forward(cache, prefix, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float32, m.Config.Vocab)
	if err := m.Backend().ReadF32(logits, row); err != nil {
		t.Fatal(err)
	}
	x := make([]float64, len(row))
	for i, v := range row {
		x[i] = float64(v)
		id := int32(i)
		if slices.Contains(prefix, id) {
			if x[i] > 0 {
				x[i] /= 1.2
			} else {
				x[i] *= 1.2
			}
		}
		if slices.Contains(out, id) {
			x[i] -= 0.5
		}
		x[i] /= 1.3
	}
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] > x[idx[b]] })
	law, sum := map[int32]float64{}, 0.0
	for _, i := range idx[:3] {
		sum += math.Exp(x[i] - x[idx[0]])
	}
	for _, i := range idx[:3] {
		law[int32(i)] = math.Exp(x[i]-x[idx[0]]) / sum
	}
	return law
}

// chi2Critical is the chi-square quantile at 1-alpha with df degrees of
// freedom (Wilson-Hilferty; within 1% for df >= 3 at these rates).
func chi2Critical(df int, alpha float64) float64 {
	z := map[float64]float64{1e-3: 3.090232}[alpha]
	k := float64(df)
	a := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * a * a * a
}

// TestSpeculativeErrors: requests speculation cannot serve are refused,
// naming the field.
func TestSpeculativeErrors(t *testing.T) {
	e := specEngine(t, qwen35MTP, mtpTensors(t))
	logprobs := greedy(4)
	logprobs.Logprobs = new(2)
	for _, c := range []struct {
		sp    *Speculative
		p     sampler.Params
		field string
	}{
		{&Speculative{Method: "ngram", NumTokens: 2}, greedy(4), "speculative.method"},
		{&Speculative{Method: "mtp", NumTokens: 0}, greedy(4), "speculative.num_tokens"},
		{&Speculative{Method: "mtp", NumTokens: MaxDraftTokens + 1}, greedy(4), "speculative.num_tokens"},
		{&Speculative{Method: "mtp", NumTokens: 2}, logprobs, "speculative"},
	} {
		_, err := e.Generate(t.Context(), &Request{Tokens: qwen35Prompt, Params: c.p, Speculative: c.sp}, func(Token) error { return nil })
		var se *SpeculativeError
		if !errors.As(err, &se) || se.Field != c.field || !errors.Is(err, ErrSpeculative) {
			t.Errorf("%+v: %v, want a *SpeculativeError on %s", c.sp, err, c.field)
		}
	}
	plain := load(t, qwen35, 64)
	_, err := plain.Generate(t.Context(), &Request{Tokens: qwen35Prompt, Params: greedy(4), Speculative: &Speculative{Method: "mtp", NumTokens: 2}}, func(Token) error { return nil })
	if !errors.Is(err, ErrSpeculative) {
		t.Errorf("a model without an MTP block: %v", err)
	}
}
