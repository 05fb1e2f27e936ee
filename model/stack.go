package model

import (
	"fmt"
	"strings"

	"wasmllm/loader"
)

// RowStacker is an optional Backend interface: a backend whose MatMul reads
// a weight made of row blocks in different types (a loader.Mixed tensor,
// such as Q4_K_M's attn_qkv: Q4_K q and k rows, Q6_K v rows), each block in
// its own type. Both backends have it; elsewhere a Mixed weight is widened
// to F32 before Upload.
type RowStacker interface {
	// StackRows makes one weight (ΣN_i, K) of the uploaded weights parts,
	// each (N_i, K), in order; the result owns them (Free frees them).
	// Only MatMul reads it.
	StackRows(parts []Tensor) (Tensor, error)
}

// uploadStack uploads the Mixed weight t: its parts in their own types,
// stacked (RowStacker), where the backend stacks and only MatMul reads the
// weight; widened to F32 otherwise (an MoE's weights). A part already on
// the backend (Weights.Uploaded, by its own name) is taken from there.
func uploadStack(b Backend, w *Weights, name string, t *loader.Tensor) (Tensor, error) {
	rs, ok := b.(RowStacker)
	if !ok || !matmulOnly(name) {
		wide, err := t.Widened()
		if err != nil {
			return nil, fmt.Errorf("%s: widening %s: %w", w.Source, name, err)
		}
		bt, err := b.Upload(wide)
		if err != nil {
			return nil, fmt.Errorf("%s: uploading %s: %w", w.Source, name, err)
		}
		return bt, nil
	}
	parts := make([]Tensor, 0, len(t.Stack))
	for _, p := range t.Stack {
		bt, ok := w.Uploaded[p.Name]
		if !ok {
			var err error
			if bt, err = b.Upload(p); err != nil {
				for _, q := range parts {
					b.Free(q)
				}
				return nil, fmt.Errorf("%s: uploading %s (rows of %s): %w", w.Source, p.Name, name, err)
			}
		}
		parts = append(parts, bt)
	}
	st, err := rs.StackRows(parts)
	if err != nil {
		return nil, fmt.Errorf("%s: stacking %s: %w", w.Source, name, err)
	}
	return st, nil
}

// matmulOnly reports whether the weight name is read by MatMul alone (not
// by MoE: the shared expert's and the experts' weights).
func matmulOnly(name string) bool {
	return !strings.Contains(name, "_exps.") && !strings.Contains(name, "_shexp.")
}

// StackPartName is the name a converted folder gives row block i of the
// Mixed tensor name (manifest.TensorInfo.Stack).
func StackPartName(name string, i int) string { return fmt.Sprintf("%s#%d", name, i) }

// IsStackPart reports whether name is a row block's name (StackPartName).
func IsStackPart(name string) bool { return strings.Contains(name, "#") }
