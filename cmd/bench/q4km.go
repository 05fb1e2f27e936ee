package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"wasmllm/internal/testkit/synth"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
)

// Q4KMReport is the synthetic Llama-3.2-1B in llama-quantize's Q4_K_M mix
// (synth.Llama32_1B_Q4KM: Q4_K, with attn_v and ffn_down Q6_K on the
// "more bits" layers and the tied head Q6_K), converted with -quant keep:
// the weight bytes a decode token reads from the folder against the
// GGUF's (ratio q4_k_m_bytes_vs_gguf), what the same folder read when a
// merge of mixed types was widened to F32, and a short native run of it.
type Q4KMReport struct {
	File   string `json:"file"`
	Layers int    `json:"layers"`
	// GGUFBytes and FolderBytes are the weight bytes one decode token
	// reads (every matrix, the embedding only as the tied head).
	GGUFBytes   int64 `json:"gguf_bytes"`
	FolderBytes int64 `json:"folder_bytes"`
	// WidenedBytes is FolderBytes had each stacked tensor been F32 (the
	// converter before row blocks).
	WidenedBytes int64         `json:"widened_bytes"`
	Stacked      int           `json:"stacked_tensors"`
	Native       *EngineReport `json:"native,omitempty"`
	Error        string        `json:"error,omitempty"`
}

// q4KM writes, converts and measures the Q4_K_M synthetic model, with as
// many layers as the q4 one.
func (r *benchRun) q4KM() error {
	if !r.o.Synthetic || r.o.Short {
		return nil
	}
	layers := r.o.SynthLayers
	if layers <= 0 {
		layers = synth.Llama32_1B.Layers
		if r.rep.software() {
			layers = 1
		}
	}
	s := synth.Llama32_1B_Q4KM
	s.Layers = layers
	name := synthName + "_k_m"
	path := filepath.Join(r.models, fmt.Sprintf("%s-%dL.gguf", name, layers))
	q := &Q4KMReport{File: path, Layers: layers}
	r.rep.Q4KM = q
	if _, err := os.Stat(path); err != nil {
		logf("writing %s", path)
		if err := synth.Write(path, filepath.Join(r.root, "testdata/models/tiny-llama3-q4_0.gguf"), s); err != nil {
			q.Error = err.Error()
			return nil
		}
	}
	m := &benchModel{name: name, gguf: path, synthetic: true, decode: 8}
	if err := prepareModel(r.ctx, m, r.root, r.models, r.convBin, []int{16}, 1, 256, false); err != nil {
		q.Error = err.Error()
		return nil
	}
	if err := q.measure(path, filepath.Join(r.models, name)); err != nil {
		q.Error = err.Error()
		return nil
	}
	r.note("%s (%d layers): weight bytes per decode token %d, %.4f of the GGUF's %d, with %d q/k/v stacked in their parts' types (widened to F32 as the converter did before: %d, %.4f)",
		name, layers, q.FolderBytes, q.ratio(), q.GGUFBytes, q.Stacked, q.WidenedBytes, float64(q.WidenedBytes)/float64(q.GGUFBytes))
	if r.runs("native") {
		q.Native = native(r.ctx, m, 1, 256, min(time.Until(r.deadline)/10, 2*time.Minute))
	}
	return nil
}

func (q *Q4KMReport) ratio() float64 { return float64(q.FolderBytes) / float64(q.GGUFBytes) }

// measure sums the weight bytes a decode token reads from the GGUF at path
// and from its converted folder dir.
func (q *Q4KMReport) measure(path, dir string) error {
	g, err := loader.OpenGGUF(path)
	if err != nil {
		return err
	}
	defer g.Close()
	man, err := manifest.Read(dir)
	if err != nil {
		return err
	}
	tied := man.Config.TiedEmbeddings
	perToken := func(name string) bool { return tied || name != model.NameEmbed }
	for _, ti := range g.Tensors {
		if perToken(ti.Name) {
			q.GGUFBytes += ti.Size
		}
	}
	for i := range man.Tensors {
		ti := &man.Tensors[i]
		if !perToken(ti.Name) {
			continue
		}
		if len(ti.Stack) > 0 {
			q.Stacked++
			n := int64(4)
			for _, d := range ti.Shape {
				n *= int64(d)
			}
			q.WidenedBytes += n
			continue
		}
		q.FolderBytes += ti.Bytes
		if !model.IsStackPart(ti.Name) {
			q.WidenedBytes += ti.Bytes
		}
	}
	if q.GGUFBytes == 0 {
		return fmt.Errorf("%s: no weights", path)
	}
	return nil
}
