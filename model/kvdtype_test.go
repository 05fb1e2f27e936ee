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

// plainBackend is a backend without model.KVCacheAllocator.
type plainBackend struct{ model.Backend }

// TestNewCacheOf: F32 is NewCache; F16 and q8 go to a KVCacheAllocator
// (the CPU backend is one) and, on a backend without one, are an F32
// cache; other types are ErrKVDType.
func TestNewCacheOf(t *testing.T) {
	w := loadWeights(t, "../testdata/models/stories260K.gguf")
	m, err := model.Build(cpu.New(1), w)
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []loader.DType{loader.F32, loader.F16, model.KVQ8} {
		c, err := m.NewCacheOf(dt, 16)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := c.(*cpu.KVCache); !ok || model.KVDTypeOf(c) != dt || c.Capacity() != 16 {
			t.Errorf("CPU backend, %v: %T of %v", dt, c, model.KVDTypeOf(c))
		}
	}
	if _, err := m.NewCacheOf(loader.Q4_0, 16); !errors.Is(err, model.ErrKVDType) {
		t.Errorf("Q4_0: %v", err)
	}
	pm, err := model.Build(plainBackend{cpu.New(1)}, loadWeights(t, "../testdata/models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dt := range []loader.DType{loader.F16, model.KVQ8} {
		if c, err := pm.NewCacheOf(dt, 16); err != nil || model.KVDTypeOf(c) != loader.F32 {
			t.Errorf("a backend without an allocator, %v: %v, %v", dt, c, err)
		}
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

// TestKVRowBytes: the bytes of one position's keys (or values) of one
// layer in each type, and the names the options use.
func TestKVRowBytes(t *testing.T) {
	for _, c := range []struct {
		dt         loader.DType
		hk, dh     int
		want       int64
		name       string
		block      int
		nameParsed bool
	}{
		{loader.F32, 8, 128, 8 * 128 * 4, "f32", 32, true},
		{loader.F16, 8, 128, 8 * 128 * 2, "f16", 32, true},
		{model.KVQ8, 8, 128, 8*128 + 8*4*4, "q8", 32, true}, // 1.125 bytes a value
		{model.KVQ8, 4, 8, 4*8 + 4*4, "q8", 8, true},        // stories260K: a scale a head
		{model.KVQ8, 2, 80, 2*80 + 2*4, "q8", 80, true},
		{loader.Q4_0, 8, 128, 0, "f32", 32, false},
	} {
		if got := model.KVRowBytes(c.dt, c.hk, c.dh); got != c.want {
			t.Errorf("KVRowBytes(%v, %d, %d) = %d, want %d", c.dt, c.hk, c.dh, got, c.want)
		}
		if got := model.KVQ8Block(c.dh); got != c.block {
			t.Errorf("KVQ8Block(%d) = %d, want %d", c.dh, got, c.block)
		}
		if got := model.KVDTypeName(c.dt); got != c.name {
			t.Errorf("KVDTypeName(%v) = %q, want %q", c.dt, got, c.name)
		}
		if dt, ok := model.ParseKVDType(c.name); ok != true || (c.nameParsed && dt != c.dt) {
			t.Errorf("ParseKVDType(%q) = %v, %v", c.name, dt, ok)
		}
	}
	if _, ok := model.ParseKVDType("q4"); ok {
		t.Error("ParseKVDType(q4) ok")
	}
}
