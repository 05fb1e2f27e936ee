package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"wasmllm/internal/testkit/synth"
	"wasmllm/model"
)

// tableShapes are the real shapes whose decode memory the bench tables:
// Qwen3.5's dense and MoE models beside Qwen3-1.7B, the attention model
// the small Qwen3.5 replaces. Each is computed from its synth.Shape (no
// file is written); the dispatches are measured (Report.fillShapes).
var tableShapes = []tableShape{
	{synth.Qwen3_1_7B, []string{"tiny-qwen3-q4_0"}},
	{synth.Qwen35_2B, []string{synthQwen35Name, "tiny-qwen35-q4_0"}},
	{synth.Qwen35_35BA3B, []string{synthQwen35MoEName, "tiny-qwen35moe-q4_0"}},
}

// tableShape is a real shape and the models of this run, best first,
// whose WebGPU decode step gives its dispatches per layer: a layer
// records what a layer of its kind records in a model of the same
// architecture, whatever its width.
type tableShape struct {
	shape    synth.Shape
	measured []string
}

// The contexts the table gives KV and state bytes at.
var shapeContexts = []int{4096, 32768}

// ShapeRow is one real shape's decode memory and traffic: its weights in
// q4 (the bench's quantisation), the KV cache in f16 (WebGPU's default)
// and the recurrent states in f32, as the engine allocates them.
type ShapeRow struct {
	Name            string `json:"name"`
	Arch            string `json:"arch"`
	Layers          int    `json:"layers"`
	DeltaNetLayers  int    `json:"deltanet_layers"`
	AttentionLayers int    `json:"attention_layers"`
	// Experts routed to of all (0: a dense MLP), and the shared expert.
	Experts      int  `json:"experts,omitempty"`
	ExpertsUsed  int  `json:"experts_used,omitempty"`
	SharedExpert bool `json:"shared_expert,omitempty"`
	// WeightBytes is every weight; ReadPerToken what a decode token reads
	// of them (one embedding row, the routed experts only).
	WeightBytes  int64 `json:"weight_bytes"`
	ReadPerToken int64 `json:"weight_read_per_token"`
	// KVBytesPerPos is the attention layers' keys and values of one
	// position; StateBytes the Gated DeltaNet layers' conv and recurrent
	// states, the same at any context.
	KVBytesPerPos int64 `json:"kv_bytes_per_pos"`
	StateBytes    int64 `json:"state_bytes"`
	// Memory is KV + state at each of Contexts; Read what a decode token
	// reads there (the weights it reads, every cached position's keys
	// and values, the states).
	Contexts []int   `json:"contexts"`
	Memory   []int64 `json:"kv_state_bytes"`
	Read     []int64 `json:"read_per_token"`
	// Dispatches are a WebGPU decode step's dispatches per layer by its
	// token mixer ("deltanet", "attention"; the layer's channel mixer
	// included), as recorded in the run of DispatchesFrom; nil when no
	// such model ran.
	Dispatches     map[string]int `json:"dispatches_per_layer,omitempty"`
	DispatchesFrom string         `json:"dispatches_from,omitempty"`
}

// shapeRows computes each shape's row (no dispatches).
func shapeRows(shapes []tableShape) ([]ShapeRow, error) {
	var rows []ShapeRow
	for _, ts := range shapes {
		s := ts.shape
		c := s.Config()
		all, perToken, err := s.Bytes()
		if err != nil {
			return nil, err
		}
		kv := kvBytesPerPos(&c, 2)
		row := ShapeRow{Name: s.Name, Arch: s.Arch, Layers: c.Layers, AttentionLayers: c.AttentionLayers(),
			DeltaNetLayers: c.Layers - c.AttentionLayers(), Experts: c.Experts, ExpertsUsed: c.ExpertsUsed,
			SharedExpert: c.SharedExpertFFN > 0, WeightBytes: all, ReadPerToken: perToken,
			KVBytesPerPos: kv, StateBytes: c.StateBytes(), Contexts: shapeContexts}
		for _, n := range shapeContexts {
			mem := kv*int64(n) + row.StateBytes
			row.Memory = append(row.Memory, mem)
			row.Read = append(row.Read, perToken+mem)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// kvBytesPerPos is the keys and values of one position over the layers
// that keep them (attention layers), at elt bytes a value.
func kvBytesPerPos(c *model.Config, elt int64) int64 {
	return 2 * int64(c.AttentionLayers()) * int64(c.KVHeads) * int64(c.HeadDim) * elt
}

// fillShapes sets each row's dispatches from the first of its measured
// models whose WebGPU run recorded a decode step's layers.
func (r *Report) fillShapes() {
	for i := range r.Shapes {
		row := &r.Shapes[i]
		row.Dispatches, row.DispatchesFrom = nil, ""
		for _, name := range measuredFor(row.Name) {
			var g *EngineReport
			for _, m := range r.Models {
				if m.Name == name {
					g = m.engine(engineGPU)
				}
			}
			if g == nil || len(g.LayerDispatches) == 0 {
				continue
			}
			row.Dispatches = dispatchesByKind(g.LayerDispatches, g.LayerTypes)
			row.DispatchesFrom = name
			break
		}
	}
}

// measuredFor is the models a shape's dispatches come from.
func measuredFor(name string) []string {
	for _, ts := range tableShapes {
		if ts.shape.Name == name {
			return ts.measured
		}
	}
	return nil
}

// dispatchesByKind is the most dispatches a layer of each token mixer
// recorded: "deltanet" for types' linear_attention layers, "attention"
// for the others (every layer when types is nil).
func dispatchesByKind(per []int, types []string) map[string]int {
	out := map[string]int{}
	for l, n := range per {
		kind := "attention"
		if l < len(types) && types[l] == model.LayerLinearAttention {
			kind = "deltanet"
		}
		out[kind] = max(out[kind], n)
	}
	return out
}

// writeShapes is the table of shapes.
func (r *Report) writeShapes(w io.Writer) {
	if len(r.Shapes) == 0 {
		return
	}
	fmt.Fprintln(w, "\nshapes: decode memory and traffic of real models (q4 weights, f16 KV, f32 recurrent states; computed, no file written);\n  layers DeltaNet/attention; KV per position; state (Gated DeltaNet, any context); KV + state and a decode token's reads\n  (weights + KV + state) at each context; WebGPU dispatches per layer by token mixer, recorded in this run on the model named")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	head := "shape\tlayers\tffn\tweights\tw read/t\tkv/pos\tstate\t"
	for _, n := range shapeContexts {
		head += fmt.Sprintf("kv+state %s\t", ctxText(n))
	}
	for _, n := range shapeContexts {
		head += fmt.Sprintf("read/t %s\t", ctxText(n))
	}
	fmt.Fprintln(tw, head+"disp deltanet\tdisp attention\tmeasured on\t")
	for _, s := range r.Shapes {
		ffn := "dense"
		if s.Experts > 0 {
			ffn = fmt.Sprintf("%d of %d", s.ExpertsUsed, s.Experts)
			if s.SharedExpert {
				ffn += " + shared"
			}
		}
		row := fmt.Sprintf("%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t", s.Name, s.DeltaNetLayers, s.AttentionLayers, ffn,
			bytesText(s.WeightBytes), bytesText(s.ReadPerToken), bytesText(s.KVBytesPerPos), bytesText(s.StateBytes))
		for _, m := range s.Memory {
			row += bytesText(m) + "\t"
		}
		for _, m := range s.Read {
			row += bytesText(m) + "\t"
		}
		for _, k := range []string{"deltanet", "attention"} {
			if n, ok := s.Dispatches[k]; ok {
				row += fmt.Sprint(n) + "\t"
			} else {
				row += "-\t"
			}
		}
		fmt.Fprintln(tw, row+dashIfEmpty(s.DispatchesFrom)+"\t")
	}
	tw.Flush()
}

func ctxText(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%dk", n/1024)
	}
	return fmt.Sprint(n)
}

func dashIfEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// hybridShapes are the Qwen3.5-shaped synthetic models the bench runs
// (beside the Llama-3.2-1B-shaped one): each real shape at full width but
// cut to fit a browser's heap and the bench's time: one period of layers
// (three Gated DeltaNet, one attention) on a software adapter, and the
// MoE's experts cut to a few (a layer's dispatches and a token's routed
// reads do not depend on how many experts there are to choose from).
func hybridShapes(software bool) []synth.Shape {
	dense, moe := synth.Qwen35_2B, synth.Qwen35_35BA3B
	moe.Layers, moe.Experts = 4, 32
	if software {
		dense.Layers, moe.Experts = 4, 16
	}
	return []synth.Shape{dense, moe}
}

// hybridName is the synthetic model's name for shape s.
func hybridName(s synth.Shape) string {
	if s.Experts > 0 {
		return synthQwen35MoEName
	}
	return synthQwen35Name
}

// The synthetic Qwen3.5 models' names.
const (
	synthQwen35Name    = "synthetic-qwen35-2b-q4"
	synthQwen35MoEName = "synthetic-qwen35moe-35b-a3b-q4"
)
