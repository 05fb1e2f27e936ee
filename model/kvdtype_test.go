package model_test

import (
	"errors"
	"testing"

	"wasmllm/cpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// typedCache is a cache of f16Backend.
type typedCache struct {
	model.KVCache
	dt loader.DType
}

func (c typedCache) DType() loader.DType { return c.dt }

// f16Backend is the CPU backend plus model.KVCacheAllocator, recording its calls.
type f16Backend struct {
	*cpu.Backend
	calls []loader.DType
}

func (b *f16Backend) NewKVCacheOf(dt loader.DType, layers, capacity, kvHeads, headDim int) (model.KVCache, error) {
	b.calls = append(b.calls, dt)
	c, err := b.NewKVCache(layers, capacity, kvHeads, headDim)
	return typedCache{c, dt}, err
}

// TestNewCacheOf: F32 is NewCache; F16 goes to a KVCacheAllocator and,
// on a backend without one, is an F32 cache; other types are ErrKVDType.
func TestNewCacheOf(t *testing.T) {
	w := loadWeights(t, "../testdata/models/stories260K.gguf")
	m, err := model.Build(cpu.New(1), w)
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []loader.DType{loader.F32, loader.F16} {
		c, err := m.NewCacheOf(dt, 16)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.(*cpu.KVCache); !ok || model.KVDTypeOf(c) != loader.F32 || c.Capacity() != 16 {
			t.Errorf("CPU backend, %v: %T of %v", dt, c, model.KVDTypeOf(c))
		}
	}
	if _, err := m.NewCacheOf(loader.Q8_0, 16); !errors.Is(err, model.ErrKVDType) {
		t.Errorf("Q8_0: %v", err)
	}

	fb := &f16Backend{Backend: cpu.New(1)}
	m, err = model.Build(fb, loadWeights(t, "../testdata/models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.NewCacheOf(loader.F16, 16)
	if err != nil {
		t.Fatal(err)
	}
	if model.KVDTypeOf(c) != loader.F16 || len(fb.calls) != 1 || c.HeadDim() != m.Config.HeadDim || c.KVHeads() != m.Config.KVHeads {
		t.Errorf("allocator: %T of %v, calls %v", c, model.KVDTypeOf(c), fb.calls)
	}
	if c, _ := m.NewCacheOf(loader.F32, 16); model.KVDTypeOf(c) != loader.F32 || len(fb.calls) != 1 {
		t.Errorf("F32 went to the allocator: calls %v", fb.calls)
	}
}
