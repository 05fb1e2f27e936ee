package convert

import (
	"fmt"
	"slices"
	"strings"

	"wasmllm/loader"
	"wasmllm/model"
)

// Quantisation modes of -quant.
const (
	quantKeep = "keep" // each source type to the nearest kernel layout (keepTarget)
	quantQ4   = "q4"   // matrices as q4 (Q4_0 math); the output head as q8, as llama-quantize does
	quantQ8   = "q8"   // matrices as q8 (Q8_0 math)
	quantF16  = "f16"  // matrices as F16
)

// DefaultQuant is -quant's default: every weight lossless where a kernel
// layout allows.
const DefaultQuant = quantKeep

// CheckQuant checks a quantisation mode.
func CheckQuant(q string) error {
	switch q {
	case quantKeep, quantQ4, quantQ8, quantF16:
		return nil
	}
	return fmt.Errorf("-quant %q: want keep, q4, q8 or f16", q)
}

// keepTarget is the layout -quant keep writes for a source type: the
// kernels read F32, F16, q4, q8 and the K-quants Q2_K..Q6_K as ggml's
// blocks. Lossless where one exists (F32, F16, BF16 widened to F32, Q4_0 ->
// q4, Q8_0 -> q8, every K-quant as it is); the other block types are
// re-quantised with no fewer bits than they had: 4-bit Q4_1 to q4, 5-bit
// Q5_0 and Q5_1 to q8.
func keepTarget(d loader.DType) (loader.DType, bool) {
	switch d {
	case loader.F32, loader.BF16:
		return loader.F32, true
	case loader.F16:
		return loader.F16, true
	case loader.Q4_0, loader.Q4_1:
		return loader.Q4, true
	case loader.Q8_0, loader.Q5_0, loader.Q5_1:
		return loader.Q8, true
	case loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K:
		return d, true
	}
	return 0, false
}

// isKQuant reports the K-quant block types, which -quant keep writes as
// they are.
func isKQuant(d loader.DType) bool {
	k, ok := keepTarget(d)
	return ok && k == d && d.Quantized()
}

// precision orders the output layouts by bits per weight.
func precision(d loader.DType) int {
	switch d {
	case loader.Q4:
		return 1
	case loader.Q8:
		return 2
	case loader.F16:
		return 3
	}
	return 4
}

// alwaysF32 reports the tensors kept in F32 whatever -quant says: norms,
// rope_freqs and the MoE router (as llama-quantize keeps them).
func alwaysF32(name string, t *loader.Tensor) bool {
	return len(t.Shape) <= 1 || name == model.NameRopeFreqs || strings.HasSuffix(name, ".ffn_gate_inp.weight")
}

// isHead reports the output projection: output.weight, or the token
// embedding when it is tied.
func isHead(name string, c *model.Config) bool {
	return name == model.NameLMHead || c.TiedEmbeddings && name == model.NameEmbed
}

// plan is the conversion of one tensor.
type plan struct {
	dst      loader.DType
	lossless bool   // the written values equal the source's dequantised values bit for bit
	note     string // why dst differs from what -quant asked, if it does
	// stack, when dst is loader.Mixed, is each row block's plan (-quant
	// keep of a merge whose parts differ in type: each kept in its own).
	stack []plan
}

// planTensor picks the output layout of canonical tensor t. parts lists the
// source types merged into it, when known (a merge of mixed types that
// package model widens to F32, such as an MoE's experts of mixed types:
// -quant keep then uses the most precise of the parts' own targets instead
// of writing F32; Q4_0 with Q8_0 rows it merges as Q8_0 exactly). A Mixed
// tensor (row blocks in their own types) is planned by planStack.
func planTensor(quant string, c *model.Config, t *loader.Tensor, parts []loader.DType) (plan, error) {
	if t.DType == loader.Mixed {
		return planStack(quant, c, t)
	}
	src := t.DType
	if !loader.CanDequantize(src) || src == loader.Q4 || src == loader.Q8 {
		return plan{}, fmt.Errorf("%w: cannot convert %s", loader.ErrUnsupported, src)
	}
	var p plan
	switch {
	case alwaysF32(t.Name, t):
		p.dst = loader.F32
	case quant == quantKeep:
		d, ok := keepTarget(src)
		if !ok {
			return plan{}, fmt.Errorf("%w: no kernel layout for %s", loader.ErrUnsupported, src)
		}
		if src == loader.F32 && len(parts) > 0 && slices.ContainsFunc(parts, isKQuant) {
			// a merge of mixed K-quants (Q4_K_M's q, k and Q6_K v) has
			// no one block type holding all its rows: F32 keeps it exact
			p.note = "merges mixed K-quant types: F32, lossless"
		} else if src == loader.F32 && len(parts) > 0 {
			d = 0
			for _, pt := range parts {
				pd, ok := keepTarget(pt)
				if !ok {
					return plan{}, fmt.Errorf("%w: no kernel layout for %s", loader.ErrUnsupported, pt)
				}
				if d == 0 || precision(pd) > precision(d) {
					d = pd
				}
			}
		}
		p.dst = d
	case quant == quantQ4 && isHead(t.Name, c):
		p.dst = loader.Q8
	case quant == quantQ4:
		p.dst = loader.Q4
	case quant == quantQ8:
		p.dst = loader.Q8
	default:
		p.dst = loader.F16
	}
	if (p.dst == loader.Q4 || p.dst == loader.Q8) && t.Cols()%32 != 0 {
		p.note = fmt.Sprintf("rows of %d are not whole groups of 32: F16", t.Cols())
		p.dst = loader.F16
		if src == loader.F32 && quant == quantKeep {
			p.dst = loader.F32
		}
	}
	p.lossless = p.dst == loader.F32 || p.dst == src ||
		src == loader.Q4_0 && (p.dst == loader.Q4 || p.dst == loader.Q8) ||
		src == loader.Q8_0 && p.dst == loader.Q8
	return p, nil
}

// planStack plans a Mixed tensor (row blocks in their own types): with
// -quant keep each block keeps its type's layout (keepTarget) and the
// tensor stays stacked; other modes re-quantise the whole matrix, planned
// as the F32 it widens to (Convert widens it before encoding).
func planStack(quant string, c *model.Config, t *loader.Tensor) (plan, error) {
	if quant != quantKeep || alwaysF32(t.Name, t) {
		wide := &loader.Tensor{Name: t.Name, DType: loader.F32, Shape: t.Shape}
		p, err := planTensor(quant, c, wide, nil)
		p.lossless = p.lossless && p.dst == loader.F32
		return p, err
	}
	p := plan{dst: loader.Mixed, lossless: true}
	for _, b := range t.Stack {
		bp, err := planTensor(quant, c, b, nil)
		if err != nil {
			return plan{}, err
		}
		p.lossless = p.lossless && bp.lossless
		p.stack = append(p.stack, bp)
	}
	return p, nil
}

// dstSize is the bytes t takes written as p plans.
func (p plan) dstSize(t *loader.Tensor) (int, error) {
	if p.dst != loader.Mixed {
		return p.dst.Size(t.NumElements())
	}
	n := 0
	for i, b := range t.Stack {
		s, err := p.stack[i].dst.Size(b.NumElements())
		if err != nil {
			return 0, err
		}
		n += s
	}
	return n, nil
}
