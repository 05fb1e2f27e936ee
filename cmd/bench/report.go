package main

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"wasmllm/cmd/bench/internal/result"
)

// Report is the bench's JSON output (build/bench/bench.json).
type Report struct {
	Started string  `json:"started"`
	Seconds float64 `json:"seconds"`
	Short   bool    `json:"short"`
	Machine string  `json:"machine"`
	// LoadAvg is /proc/loadavg at the start and the end: other work on the
	// machine slows every engine.
	LoadAvg  [2]string       `json:"load_avg"`
	Adapter  result.Adapter  `json:"adapter"`
	Roofline result.Roofline `json:"roofline"`
	Kernels  []result.Kernel `json:"kernels"`
	// Firefox is the kernel table again in Firefox (nil: no Firefox runs;
	// its notes are among Notes).
	Firefox  *result.Kernels `json:"firefox_kernels,omitempty"`
	Prompts  []int           `json:"prompt_lengths"`
	Headline int             `json:"headline_prompt"` // the prompt length the ratios use
	Models   []*ModelReport  `json:"models"`
	// Q4KM is the Q4_K_M synthetic model's bytes (nil: not run).
	Q4KM *Q4KMReport `json:"q4_k_m,omitempty"`
	// Shapes are real models' decode memory and traffic, computed, with
	// the dispatches per layer this run recorded (shapes.go).
	Shapes []ShapeRow `json:"shapes,omitempty"`
	Ratios []Ratio    `json:"ratios"`
	// KV is the KV cache types' perplexity and bytes (nil: not measured).
	KV        *KVReport `json:"kv,omitempty"`
	Notes     []string  `json:"notes,omitempty"` // what was scaled down or skipped
	ChartFile string    `json:"chart,omitempty"`
}

// software reports whether the kernel tables ran on a software adapter
// (in Chromium, or in Firefox when only that one ran).
func (r *Report) software() bool {
	return r.Adapter.Fallback || (r.Firefox != nil && r.Firefox.Adapter.Fallback)
}

// ModelReport is one model on every engine.
type ModelReport struct {
	Name      string          `json:"name"`
	File      string          `json:"file"`
	Synthetic bool            `json:"synthetic,omitempty"`
	Decode    int             `json:"decode_tokens"`
	Context   int             `json:"context"`
	Engines   []*EngineReport `json:"engines"`
	Load      *LoadReport     `json:"load,omitempty"`
	// LayerKinds are the kinds of the model's layers (layerKind), in
	// order: the engines' LayerDispatches grouped by them.
	LayerKinds []string `json:"layer_kinds,omitempty"`
}

// Engine names.
const (
	engineGPU     = "wasmllm-webgpu"
	engineFirefox = "wasmllm-webgpu-firefox" // the same, in Firefox
	engineCPU     = "wasmllm-cpu"            // at the default rank count
	engineCPU1    = "wasmllm-cpu-1rank"      // the same on one rank (the synthetic model)
	engineNative  = "wasmllm-cpu-native"
	enginePeer    = "wllama"
	peerPackage   = "@wllama/wllama"
	peerVersion   = "3.13.0"
	synthName     = "synthetic-llama-1b-q4"
	// synthGemmaName is the Gemma-3-1B-shaped one: local and global layers.
	synthGemmaName = "synthetic-gemma-3-1b-q4"
	decodeTarget   = 128
)

// Point is a median rate at one prompt length over N runs.
type Point struct {
	Len  int     `json:"len"`
	TokS float64 `json:"tok_s"`
	N    int     `json:"runs"`
}

// EngineReport is one engine on one model.
type EngineReport struct {
	Engine string `json:"engine"`
	Detail string `json:"detail,omitempty"`
	// Prefill is tokens per second of time to first token; Decode tokens
	// per second after the first token, at each prompt length.
	Prefill []Point `json:"prefill"`
	Decode  []Point `json:"decode"`
	// DecodeBW is (active weight bytes + KV bytes read) per token ×
	// decode tok/s ÷ the read probe (WebGPU only), at the headline prompt.
	DecodeBW float64          `json:"decode_bw,omitempty"`
	PerToken *result.PerToken `json:"per_token,omitempty"`
	// LayerDispatches are a decode step's dispatches per layer, as
	// recorded (WebGPU); Experts is the model's (0: dense).
	LayerDispatches []int          `json:"layer_dispatches,omitempty"`
	LayerTypes      []string       `json:"layer_types,omitempty"` // a hybrid model's (result.Model.LayerTypes)
	Experts         int            `json:"experts,omitempty"`
	StepsAhead      *float64       `json:"decode_submitted_ahead,omitempty"`
	WeightBytes     int64          `json:"weight_bytes,omitempty"`
	ActiveBytes     int64          `json:"active_bytes,omitempty"`
	KVBytesPerPos   int64          `json:"kv_bytes_per_pos,omitempty"`
	Runs            []result.Run   `json:"runs"`
	Extra           map[string]any `json:"extra,omitempty"`
	Notes           []string       `json:"notes,omitempty"`
	Error           string         `json:"error,omitempty"`
}

// LoadReport times createEngine on the model's converted folder.
type LoadReport struct {
	Bytes      int64          `json:"bytes"`
	NetworkMs  float64        `json:"network_ms"`
	CacheMs    float64        `json:"cache_ms"`
	RawCacheMs float64        `json:"raw_cache_read_ms"` // the same bytes read from Cache Storage alone
	Backend    string         `json:"backend"`
	Phases     map[string]any `json:"phases,omitempty"`
	Note       string         `json:"note,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// Ratio is one `ratio NAME VALUE` line.
type Ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// points turns runs into per-length medians of rate(run).
func points(runs []result.Run, rate func(result.Run) float64) []Point {
	by := map[int][]float64{}
	for _, r := range runs {
		if v := rate(r); v > 0 && !math.IsInf(v, 0) {
			by[r.Prompt] = append(by[r.Prompt], v)
		}
	}
	var out []Point
	for l, vs := range by {
		out = append(out, Point{Len: l, TokS: result.Median(vs), N: len(vs)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Len < out[j].Len })
	return out
}

// at returns the rate at prompt length l, 0 when not measured.
func at(ps []Point, l int) float64 {
	for _, p := range ps {
		if p.Len == l {
			return p.TokS
		}
	}
	return 0
}

// fill computes an engine's medians from its runs.
func (e *EngineReport) fill() {
	e.Prefill = points(e.Runs, result.Run.PrefillTokS)
	e.Decode = points(e.Runs, result.Run.DecodeTokS)
}

// headline picks the prompt length the ratios compare at: want when both
// engines measured it, else the longest length both measured.
func headline(want int, a, b []Point) int {
	if at(a, want) > 0 && at(b, want) > 0 {
		return want
	}
	best := 0
	for _, p := range a {
		if at(b, p.Len) > 0 && p.Len > best {
			best = p.Len
		}
	}
	return best
}

func (m *ModelReport) engine(name string) *EngineReport {
	for _, e := range m.Engines {
		if e.Engine == name {
			return e
		}
	}
	return nil
}

var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// ratioName makes a model or kernel name safe for a `ratio NAME VALUE` line.
func ratioName(s string) string {
	return strings.Trim(nonName.ReplaceAllString(strings.ToLower(s), "_"), "_")
}

// computeRatios fills each WebGPU engine's decode bandwidth ratio and the
// report's ratio lines.
func (r *Report) computeRatios() {
	r.Ratios = nil
	defer r.kvRatios()
	for _, m := range r.Models {
		g := m.engine(engineGPU)
		if g == nil || len(g.Decode) == 0 {
			continue
		}
		if l := headline(r.Headline, g.Decode, g.Decode); l > 0 && r.Roofline.ReadGBps > 0 {
			// KV bytes: the cached positions, on average, during the decode.
			ctx := float64(l) + float64(m.Decode)/2
			bytes := float64(g.ActiveBytes) + float64(g.KVBytesPerPos)*ctx
			g.DecodeBW = bytes * at(g.Decode, l) / (r.Roofline.ReadGBps * 1e9)
			r.Ratios = append(r.Ratios, Ratio{"decode_bw_" + ratioName(m.Name), g.DecodeBW})
		}
	}
	r.kernelRatios("kernel_", r.Kernels)
	if r.Firefox != nil {
		r.kernelRatios("kernel_firefox_", r.Firefox.Kernels)
	}
	// The most dispatches any layer of a decode step recorded, over the
	// dense and over the MoE models.
	dense, moe := 0, 0
	for _, m := range r.Models {
		g := m.engine(engineGPU)
		if g == nil {
			continue
		}
		for _, n := range g.LayerDispatches {
			if g.Experts > 0 {
				moe = max(moe, n)
			} else {
				dense = max(dense, n)
			}
		}
	}
	if dense > 0 {
		r.Ratios = append(r.Ratios, Ratio{"dispatches_per_layer_dense", float64(dense)})
	}
	// The fraction of greedy decode steps submitted ahead of the previous
	// readback, the lowest over the WebGPU runs in both browsers.
	ahead := -1.0
	for _, m := range r.Models {
		for _, name := range []string{engineGPU, engineFirefox} {
			if e := m.engine(name); e != nil && e.StepsAhead != nil && (ahead < 0 || *e.StepsAhead < ahead) {
				ahead = *e.StepsAhead
			}
		}
	}
	if ahead >= 0 {
		r.Ratios = append(r.Ratios, Ratio{"decode_submitted_ahead", ahead})
	}
	if moe > 0 {
		r.Ratios = append(r.Ratios, Ratio{"dispatches_per_layer_moe", float64(moe)})
	}
	// The most dispatches a layer of each kind recorded (local, global,
	// with per-layer embeddings, MoE, ...), over the models that have it.
	for _, kd := range r.kindDispatches() {
		r.Ratios = append(r.Ratios, Ratio{"dispatches_per_layer_kind_" + kd.kind, float64(kd.most)})
	}
	for _, p := range r.projections() {
		r.Ratios = append(r.Ratios, Ratio{"dispatches_per_token_" + p.name, float64(p.dispatches)})
	}
	for _, m := range r.Models {
		g, f := m.engine(engineGPU), m.engine(engineFirefox)
		if g == nil || f == nil {
			continue
		}
		if l := headline(r.Headline, f.Decode, g.Decode); l > 0 {
			r.Ratios = append(r.Ratios, Ratio{"decode_firefox_vs_chromium_" + ratioName(m.Name), at(f.Decode, l) / at(g.Decode, l)})
		}
	}
	for _, m := range r.Models {
		g, p := m.engine(engineGPU), m.engine(enginePeer)
		if g == nil || p == nil {
			continue
		}
		if l := headline(r.Headline, g.Decode, p.Decode); l > 0 {
			r.Ratios = append(r.Ratios, Ratio{"decode_vs_wllama_" + ratioName(m.Name), at(g.Decode, l) / at(p.Decode, l)})
		}
		if l := headline(r.Headline, g.Prefill, p.Prefill); l > 0 {
			r.Ratios = append(r.Ratios, Ratio{"prefill_vs_wllama_" + ratioName(m.Name), at(g.Prefill, l) / at(p.Prefill, l)})
		}
	}
	// The CPU engine against wllama: the lowest ratio over the prompt
	// lengths both ran.
	for _, m := range r.Models {
		c, p := m.engine(engineCPU), m.engine(enginePeer)
		if c == nil || p == nil {
			continue
		}
		if v := lowestRatio(c.Decode, p.Decode); v > 0 {
			r.Ratios = append(r.Ratios, Ratio{"decode_cpu_vs_wllama_" + ratioName(m.Name), v})
		}
		if v := lowestRatio(c.Prefill, p.Prefill); v > 0 {
			r.Ratios = append(r.Ratios, Ratio{"prefill_cpu_vs_wllama_" + ratioName(m.Name), v})
		}
	}
	// The native engine against llama.cpp's own CPU build on the same
	// GGUF and threads, the lowest over the prompt lengths.
	for _, m := range r.Models {
		n, l := m.engine(engineNative), m.engine(engineLlamaCpp)
		if n == nil || l == nil {
			continue
		}
		if v := lowestRatio(n.Decode, l.Decode); v > 0 {
			r.Ratios = append(r.Ratios, Ratio{"decode_native_vs_llamacpp", v})
		}
		if v := lowestRatio(n.Prefill, l.Prefill); v > 0 {
			r.Ratios = append(r.Ratios, Ratio{"prefill_native_vs_llamacpp", v})
		}
	}
	if q := r.Q4KM; q != nil && q.Error == "" && q.GGUFBytes > 0 {
		r.Ratios = append(r.Ratios, Ratio{"q4_k_m_bytes_vs_gguf", q.ratio()})
	}
	// The CPU engine's ranks over one rank, decode (and prefill) on the
	// synthetic model, the lowest over the prompt lengths.
	for _, m := range r.Models {
		c, c1 := m.engine(engineCPU), m.engine(engineCPU1)
		if c == nil || c1 == nil {
			continue
		}
		n, _ := c.Extra["ranks"].(int)
		if f, ok := c.Extra["ranks"].(float64); ok {
			n = int(f)
		}
		if n < 2 {
			continue
		}
		if v := lowestRatio(c.Decode, c1.Decode); v > 0 {
			r.Ratios = append(r.Ratios, Ratio{fmt.Sprintf("cpu_rank_speedup_%d", n), v})
		}
		if v := lowestRatio(c.Prefill, c1.Prefill); v > 0 {
			r.Ratios = append(r.Ratios, Ratio{fmt.Sprintf("cpu_rank_speedup_prefill_%d", n), v})
		}
	}
}

// kernelRatios adds each kernel's ratio to its probe, and where it has a q4
// twin its rate per weight byte over q4's (perByteVsQ4).
func (r *Report) kernelRatios(prefix string, ks []result.Kernel) {
	for _, k := range ks {
		r.Ratios = append(r.Ratios, Ratio{prefix + ratioName(k.Name), k.Ratio})
		if v := perByteVsQ4(ks, k); v > 0 {
			r.Ratios = append(r.Ratios, Ratio{prefix + ratioName(k.Name) + "_per_byte_vs_q4", v})
		}
	}
}

// lowestRatio is the smallest a/b over the prompt lengths both have (0:
// none).
func lowestRatio(a, b []Point) float64 {
	low := 0.0
	for _, p := range a {
		if q := at(b, p.Len); q > 0 && p.TokS > 0 && (low == 0 || p.TokS/q < low) {
			low = p.TokS / q
		}
	}
	return low
}

// writeAdapter prints the adapter line of a kernel table, after prefix.
func writeAdapter(w io.Writer, prefix string, a result.Adapter, rf result.Roofline) {
	name := strings.TrimSpace(a.Vendor + " " + a.Architecture)
	if name == "" {
		name = "(no name given)"
	}
	fmt.Fprintf(w, "%sadapter %s%s: read probe %.2f GB/s over %s, FMA probe %.1f GFLOP/s, readback %.2f ms\n",
		prefix, name, map[bool]string{true: " (software adapter)"}[a.Fallback],
		rf.ReadGBps, bytesText(rf.ReadBytes), rf.FMAGFLOPs, rf.SyncMs)
}

// writeKernels prints a kernel table under title.
func writeKernels(w io.Writer, title string, ks []result.Kernel) {
	if len(ks) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s (ratio: to the read probe for GB/s, to the FMA probe for GFLOP/s; vs q4: GB/s of weights over q4's at the same shape):\n", title)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, k := range ks {
		vs := "-"
		if v := perByteVsQ4(ks, k); v > 0 {
			vs = fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%.3f ms\t%.3g %s\t%.3f\t%s\n", k.Name, k.Shape, k.Ms, k.Rate, k.Unit, k.Ratio, vs)
	}
	tw.Flush()
}

// perByteVsQ4 is k's rate in weight bytes over that of the q4 kernel of
// the same shape in ks (its Shape with the first word, the dtype, "q4"):
// the done line of K-quant decode, at least as fast per weight byte as q4.
// 0 where k is q4 or has no q4 twin, or is not timed in GB/s.
func perByteVsQ4(ks []result.Kernel, k result.Kernel) float64 {
	dt, rest, ok := strings.Cut(k.Shape, " ")
	if !ok || dt == "q4" || k.Unit != "GB/s" {
		return 0
	}
	for _, q := range ks {
		if q.Unit == k.Unit && q.Shape == "q4 "+rest && q.Rate > 0 {
			return k.Rate / q.Rate
		}
	}
	return 0
}

// writeText prints the short table and the ratio lines.
func (r *Report) writeText(w io.Writer) {
	fmt.Fprintf(w, "wasmllm bench (%s, load average %s at the start, %s at the end)\n", r.Machine, r.LoadAvg[0], r.LoadAvg[1])
	writeAdapter(w, "", r.Adapter, r.Roofline)
	writeKernels(w, "kernels", r.Kernels)
	if f := r.Firefox; f != nil {
		writeAdapter(w, "\nin Firefox: ", f.Adapter, f.Roofline)
		writeKernels(w, "kernels in Firefox", f.Kernels)
	}
	fmt.Fprintf(w, "\nmodels: tok/s, median of runs; prefill = prompt tokens / time to first token; decode after a prompt of that length;\n  per decode token (webgpu): dispatches, submits, buffer maps (1 = the sampler's readback alone), bytes read back, Go encoding ms, weight bytes bound and read,\n  the dispatches each layer of a decode step recorded (one number when every layer has as many), the fraction of decode steps\n  submitted before the previous step's token was read back (pipelined), the KV cache's type\n")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	head := "model\tengine\t"
	for _, l := range r.Prompts {
		head += fmt.Sprintf("pf%d\t", l)
	}
	for _, l := range r.Prompts {
		head += fmt.Sprintf("dec%d\t", l)
	}
	fmt.Fprintln(tw, head+"bw\tdisp/t\tsub/t\tmaps/t\treadB/t\tenc ms/t\tw bound/t\tw read/t\tdisp/layer\tahead\tkv\t")
	for _, m := range r.Models {
		for i, e := range m.Engines {
			name := ""
			if i == 0 {
				name = m.Name
			}
			row := name + "\t" + e.Engine + "\t"
			if e.Error != "" {
				fmt.Fprintln(tw, row+"failed: "+firstLine(e.Error)+"\t")
				continue
			}
			for _, l := range r.Prompts {
				row += num(at(e.Prefill, l)) + "\t"
			}
			for _, l := range r.Prompts {
				row += num(at(e.Decode, l)) + "\t"
			}
			row += num(e.DecodeBW) + "\t"
			if pt := e.PerToken; pt != nil {
				enc := "-"
				if pt.EncodeMs > 0 {
					enc = fmt.Sprintf("%.3f", pt.EncodeMs)
				}
				row += fmt.Sprintf("%.0f\t%.2f\t%.2f\t%.0f\t%s\t", pt.Dispatches, pt.Submits, pt.Maps, pt.BytesRead, enc)
			} else {
				row += "-\t-\t-\t-\t-\t"
			}
			// Every weight is bound by a step's program (each matrix once,
			// MoE experts whole); what it reads is ActiveBytes.
			if e.Engine == engineGPU && e.WeightBytes > 0 {
				row += bytesText(e.WeightBytes) + "\t" + bytesText(e.ActiveBytes) + "\t"
			} else {
				row += "-\t-\t"
			}
			row += layerText(e.LayerDispatches) + "\t"
			if e.StepsAhead != nil {
				row += fmt.Sprintf("%.2f\t", *e.StepsAhead)
			} else {
				row += "-\t"
			}
			if kv, _ := e.Extra["kv_dtype"].(string); kv != "" && e.Engine != engineCPU && e.Engine != engineCPU1 && e.Engine != engineNative {
				row += kv + "\t"
			} else {
				row += "-\t"
			}
			fmt.Fprintln(tw, row)
		}
	}
	tw.Flush()
	r.writeShapes(w)
	fmt.Fprintln(w, "\nload (ms from createEngine to ready, from the network and from Cache Storage; raw = reading the cached shards alone):")
	tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tshard bytes\tbackend\tnetwork\tcache\traw cache read\t")
	for _, m := range r.Models {
		switch l := m.Load; {
		case l == nil:
		case l.Error != "":
			fmt.Fprintf(tw, "%s\tfailed: %s\t\n", m.Name, firstLine(l.Error))
		default:
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f\t%s\t%.0f\t\n", m.Name, bytesText(l.Bytes), l.Backend, l.NetworkMs, num(l.CacheMs), l.RawCacheMs)
		}
	}
	tw.Flush()
	if k := r.KV; k != nil {
		fmt.Fprintf(w, "\nKV cache: stories260K's perplexity over %s (%d tokens): f32 %.4f, f16 %.4f, q8 %.4f\n",
			k.Text, k.Tokens, k.Perplexity["f32"], k.Perplexity["f16"], k.Perplexity["q8"])
		tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "at 32k tokens	f32	f16	q8	")
		for _, s := range k.Bytes32k {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", s.Name, bytesText(s.Bytes["f32"]), bytesText(s.Bytes["f16"]), bytesText(s.Bytes["q8"]))
		}
		tw.Flush()
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range r.Notes {
			fmt.Fprintln(w, "  - "+n)
		}
	}
	fmt.Fprintln(w)
	for _, x := range r.Ratios {
		fmt.Fprintf(w, "ratio %s %.4g\n", x.Name, x.Value)
	}
}

func num(v float64) string {
	switch {
	case v <= 0 || math.IsNaN(v):
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return s
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// layerText is the dispatches per layer: "11", or "11-12" when layers differ.
func layerText(ds []int) string {
	if len(ds) == 0 {
		return "-"
	}
	lo, hi := ds[0], ds[0]
	for _, d := range ds {
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// bigShape is a real model's decode-relevant shape.
type bigShape struct {
	name         string // ratio name
	layers       int
	moe          bool
	headBytes    int64  // the lm_head as the bench's q4 conversion keeps it (Q8 for a 70B's, as its GGUFs do)
	architecture string // the tiny model of its architecture
}

var bigShapes = []bigShape{
	{"llama31_8b", 32, false, 128256 * 4096 * 9 / 16, "tiny-llama3-q4_0"},
	{"qwen3_30b_a3b", 48, true, 151936 * 2048 * 9 / 16, "tiny-qwen3moe-q4_0"},
	{"deepseek_r1_distill_llama_70b", 80, false, 128256 * 8192 * 17 / 16, "tiny-llama3-q4_0"},
}

type projection struct {
	name       string
	dispatches int
}

// projections are the dispatches per decode token of real shapes on this
// adapter: a layer records what a layer of the tiny model of the same
// architecture recorded in this run (counted from its program, not from
// the op list), times the real layer count, plus the tiny model's other
// dispatches (embedding, lm_head, argmax), plus one per extra part the
// real lm_head splits into at the adapter's binding limit.
func (r *Report) projections() []projection {
	var out []projection
	for _, s := range bigShapes {
		var g *EngineReport
		for _, m := range r.Models {
			if m.Name == s.architecture {
				g = m.engine(engineGPU)
			}
		}
		if g == nil || len(g.LayerDispatches) == 0 || g.PerToken == nil || (g.Experts > 0) != s.moe {
			continue
		}
		layers := 0
		for _, d := range g.LayerDispatches {
			layers += d
		}
		other := int(math.Round(g.PerToken.Dispatches)) - layers
		parts := 1
		if lim := int64(r.Adapter.MaxStorageBufferBindingSize); lim > 0 {
			parts = int((s.headBytes + lim - 1) / lim)
		}
		per := slices.Max(g.LayerDispatches)
		out = append(out, projection{s.name, s.layers*per + other + parts - 1})
	}
	return out
}
