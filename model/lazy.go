package model

import "wasmllm/loader"

// FromGGUFLazy is FromGGUF with every tensor left in g's file: its Data is
// nil and its Load reads it (a merged tensor's Load reads and merges its
// parts), so that a caller going tensor by tensor holds one at a time. g
// must stay open while tensors are loaded.
func FromGGUFLazy(g *loader.GGUF) (*Weights, error) { return fromGGUF(g, lazyGGUF{g}, LoadOptions{}) }

// FromGGUFLazyOptions is FromGGUFLazy reading what o asks for beyond the
// trunk.
func FromGGUFLazyOptions(g *loader.GGUF, o LoadOptions) (*Weights, error) {
	return fromGGUF(g, lazyGGUF{g}, o)
}

// FromHFLazy is FromHF with the tensors left in the safetensors files, as
// FromGGUFLazy leaves them; close releases the files.
func FromHFLazy(dir string) (w *Weights, close func() error, err error) {
	return FromHFLazyOptions(dir, LoadOptions{})
}

// FromHFLazyOptions is FromHFLazy reading what o asks for beyond the
// trunk.
func FromHFLazyOptions(dir string, o LoadOptions) (w *Weights, close func() error, err error) {
	c, st, err := openHF(dir, o)
	if err != nil {
		return nil, nil, err
	}
	table, src := hfSource(c, lazySafetensors{st})
	if w, err = mapTensors(dir, *c, src, table, nil); err != nil {
		st.Close()
		return nil, nil, err
	}
	return w, st.Close, nil
}

type lazyGGUF struct{ *loader.GGUF }

func (g lazyGGUF) Tensor(name string) (*loader.Tensor, error) { return g.LazyTensor(name) }

type lazySafetensors struct{ *loader.Safetensors }

func (s lazySafetensors) Tensor(name string) (*loader.Tensor, error) { return s.LazyTensor(name) }
