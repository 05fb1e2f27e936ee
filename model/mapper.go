package model

import (
	"fmt"
	"slices"

	"wasmllm/loader"
)

// tensorSource reads a source's tensors under the source's own names.
type tensorSource interface {
	Tensor(name string) (*loader.Tensor, error)
	Has(name string) bool
}

// A tensorTable is one source format's names for the canonical tensors:
// for each canonical name (a Name* constant) the row it is made from. A
// canonical tensor without a row is absent from that format's weights
// (Check then names it when the config needs it).
type tensorTable map[string]tensorRow

// A tensorRow says how one canonical tensor is made from a source's
// tensors.
type tensorRow struct {
	// src are the source names of the parts, in the order they are
	// merged. In a per-layer tensor's row they take the layer index; in an
	// expert row, the layer and then the expert index.
	src []string
	// merge joins the parts; nil for one part, taken as it is.
	merge func(name string, parts []*loader.Tensor) (*loader.Tensor, error)
	// mergeC, when set instead, joins the parts with the config's sizes.
	mergeC func(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error)
	// experts: src are one expert's parts, merged by concatRows when there
	// are several, and the Config.Experts results are stacked (E, N, K).
	experts bool
	// optional: the source may lack the tensor, and then the weights do.
	optional bool
	// or, when set, is the row used instead when the source lacks this
	// row's first tensor (another layout of the same tensor).
	or *tensorRow
}

// one is a tensor stored whole under name.
func one(name string) tensorRow { return tensorRow{src: []string{name}} }

// optional is a tensor that name holds when the source has it.
func optional(name string) tensorRow { return tensorRow{src: []string{name}, optional: true} }

// rows is a tensor merged from names' rows, each part in its own type
// (stackRows).
func rows(names ...string) tensorRow {
	return tensorRow{src: names, merge: func(name string, parts []*loader.Tensor) (*loader.Tensor, error) {
		return stackRows(name, parts...)
	}}
}

// biases is a bias vector merged from names (concatBias).
func biases(names ...string) tensorRow {
	return tensorRow{src: names, merge: func(name string, parts []*loader.Tensor) (*loader.Tensor, error) {
		return concatBias(name, parts...)
	}}
}

// interleaved is an (E, N1+N2, K) tensor merged expert by expert from a
// (E, N1, K) and b (E, N2, K) (interleaveExperts).
func interleaved(a, b string) tensorRow {
	return tensorRow{src: []string{a, b}, merge: func(name string, parts []*loader.Tensor) (*loader.Tensor, error) {
		return interleaveExperts(name, parts[0], parts[1])
	}}
}

// withConfig is a tensor made from names by merge, which reads the
// config's sizes.
func withConfig(merge func(c *Config, name string, parts []*loader.Tensor) (*loader.Tensor, error), names ...string) tensorRow {
	return tensorRow{src: names, mergeC: merge}
}

// either is row a, or b where the source lacks a's first tensor.
func either(a, b tensorRow) tensorRow {
	a.or = &b
	return a
}

// perExpert is an (E, N, K) tensor stacked from one (N, K) matrix per
// expert, itself merged from names' rows when there are several.
func perExpert(names ...string) tensorRow { return tensorRow{src: names, experts: true} }

// mapTensors builds canonical weights from src's tensors by table: first
// the global tensors, then configure (nil: none), which may fill in the
// config from them and must leave it valid, since its layer and expert
// counts bound what is read next; then every layer's tensors. The result
// is checked with Check. A missing tensor is src's error, naming it; a
// failed merge is a *loader.FormatError naming file and the canonical
// tensor.
func mapTensors(file string, c Config, src tensorSource, table tensorTable, configure func(*Weights) error) (*Weights, error) {
	w := &Weights{Config: c, Tensors: map[string]*loader.Tensor{}, Source: file}
	for _, ct := range slices.Concat(headTensors, tailTensors) {
		if row, ok := table[ct.name]; ok && ct.in(&w.Config) {
			if err := w.mapTensor(src, ct.name, row); err != nil {
				return nil, err
			}
		}
	}
	if configure != nil {
		if err := configure(w); err != nil {
			return nil, err
		}
	}
	layer := func(l int, sp LayerSpec, set []layerTensor) error {
		for _, ct := range set {
			if row, ok := table[ct.name]; ok && ct.in(&sp) {
				if err := w.mapTensor(src, fmt.Sprintf(ct.name, l), row, l); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for l, sp := range w.Config.Specs() {
		if err := layer(l, sp, layerTensors); err != nil {
			return nil, err
		}
	}
	for l, sp := range w.Config.mtpLayers() {
		if err := layer(l, sp, layerTensors); err != nil {
			return nil, err
		}
		if err := layer(l, sp, mtpTensors); err != nil {
			return nil, err
		}
	}
	if err := w.Check(); err != nil {
		return nil, err
	}
	return w, nil
}

// mapTensor reads row's parts from src, their names formatted with index
// (the layer's, for a per-layer tensor), and stores their merge as name.
func (w *Weights) mapTensor(src tensorSource, name string, row tensorRow, index ...any) error {
	if row.or != nil && !src.Has(fmt.Sprintf(row.src[0], index...)) {
		return w.mapTensor(src, name, *row.or, index...)
	}
	if row.optional && !src.Has(fmt.Sprintf(row.src[0], index...)) {
		return nil
	}
	mergeErr := func(err error) error {
		return &loader.FormatError{File: w.Source, Field: "tensor " + name, Offset: -1, Err: err}
	}
	var t *loader.Tensor
	if !row.experts {
		parts, err := readParts(src, row.src, index)
		if err != nil {
			return err
		}
		if t = parts[0]; row.merge != nil {
			if t, err = row.merge(name, parts); err != nil {
				return mergeErr(err)
			}
		} else if row.mergeC != nil {
			if t, err = row.mergeC(&w.Config, name, parts); err != nil {
				return mergeErr(err)
			}
		}
	} else {
		each := make([]*loader.Tensor, w.Config.Experts)
		for e := range each {
			parts, err := readParts(src, row.src, append(index, e))
			if err != nil {
				return err
			}
			if each[e] = parts[0]; len(parts) > 1 {
				if each[e], err = concatRows(fmt.Sprintf("%s expert %d", name, e), parts...); err != nil {
					return mergeErr(err)
				}
			}
		}
		var err error
		if t, err = stackExperts(name, each); err != nil {
			return mergeErr(err)
		}
	}
	t.Name = name
	w.Tensors[name] = t
	return nil
}

// readParts reads the tensors names from src, formatted with index. The
// slice is new: a lazy merge keeps it.
func readParts(src tensorSource, names []string, index []any) ([]*loader.Tensor, error) {
	parts := make([]*loader.Tensor, len(names))
	for i, n := range names {
		t, err := src.Tensor(fmt.Sprintf(n, index...))
		if err != nil {
			return nil, err
		}
		parts[i] = t
	}
	return parts, nil
}
