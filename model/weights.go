package model

import (
	"fmt"
	"slices"
	"sort"

	"wasmllm/loader"
)

// Weights is a model's config and its canonical tensors on the host. From
// FromGGUFLazy and FromHFLazy the tensors are lazy: their data is read when
// loaded (see loader.Tensor.Load).
type Weights struct {
	Config  Config
	Tensors map[string]*loader.Tensor
	// Uploaded holds tensors already on the backend, uploaded straight from
	// their bytes elsewhere (the browser writes shard bytes into GPU
	// buffers). Their entries in Tensors carry name, dtype and shape but no
	// Data, and Build takes them from here instead of uploading.
	Uploaded map[string]Tensor
	// Source names where the weights came from, for messages.
	Source string
	// PerLayerOnHost keeps Gemma 4's per-layer embedding table
	// (NamePLEmbed, its bytes in Tensors) in host memory: Build does not
	// upload it, and each forward gathers its tokens' rows on the host
	// (perlayer_host.go).
	PerLayerOnHost bool
}

// Names returns the tensor names in a stable order.
func (w *Weights) Names() []string {
	names := make([]string, 0, len(w.Tensors))
	for n := range w.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Get returns a tensor, or a typed error naming the source when it is missing.
func (w *Weights) Get(name string) (*loader.Tensor, error) {
	t, ok := w.Tensors[name]
	if !ok {
		return nil, &loader.FormatError{File: w.Source, Field: "tensor " + name, Offset: -1, Err: loader.ErrNotFound}
	}
	return t, nil
}

// Check verifies that every tensor the config needs is present with the
// right shape and a consistent byte size.
func (w *Weights) Check() error {
	c := &w.Config
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", w.Source, err)
	}
	for name, shape := range c.tensors() {
		if shape == nil {
			continue // optional: rope_freqs, checked below
		}
		t, err := w.Get(name)
		if err != nil {
			return err
		}
		if !slices.Equal(t.Shape, shape) {
			return &loader.FormatError{File: w.Source, Field: "tensor " + name + " shape", Offset: -1,
				Err: fmt.Errorf("%w: got %v, want %v", loader.ErrCorrupt, t.Shape, shape)}
		}
		if _, ok := w.Uploaded[name]; ok && t.Data == nil {
			continue
		}
		if err := w.checkSize(t); err != nil {
			return &loader.FormatError{File: w.Source, Field: "tensor " + name, Offset: -1, Err: err}
		}
	}
	if t, ok := w.Tensors[NameRopeFreqs]; ok && t.NumElements() != c.HeadDim/2 {
		return &loader.FormatError{File: w.Source, Field: "tensor " + NameRopeFreqs + " shape", Offset: -1,
			Err: fmt.Errorf("%w: %d elements, want %d", loader.ErrCorrupt, t.NumElements(), c.HeadDim/2)}
	}
	return nil
}

// checkSize is t.CheckSize, skipping the row blocks of a Mixed tensor
// that are on the backend already (Uploaded).
func (w *Weights) checkSize(t *loader.Tensor) error {
	if t.DType != loader.Mixed {
		return t.CheckSize()
	}
	for _, p := range t.Stack {
		if _, ok := w.Uploaded[p.Name]; ok && p.Data == nil {
			continue
		}
		if err := p.CheckSize(); err != nil {
			return err
		}
	}
	return nil
}
