package cpu

import (
	"fmt"

	"wasmllm/loader"
	"wasmllm/model"
)

// KVCache holds the keys and values, (S, Hk, Dh) per layer, in its type:
// F32 in K and V; F16 in K16 and V16; model.KVQ8 as int8 values in K8 and
// V8 with one f32 scale per block of model.KVQ8Block(Dh) values in KS and
// VS ((S, Hk, Dh/block)). RoPEKV stores in that type and Attend reads it
// there, as the reference StoreKV says.
type KVCache struct {
	K, V          [][]float32
	K16, V16      [][]uint16
	K8, V8        [][]int8
	KS, VS        [][]float32
	dtype         loader.DType
	block         int // values per q8 scale
	capacity      int
	kvHeads, head int
}

// Capacity implements model.KVCache.
func (c *KVCache) Capacity() int { return c.capacity }

// KVHeads implements model.KVCache.
func (c *KVCache) KVHeads() int { return c.kvHeads }

// HeadDim implements model.KVCache.
func (c *KVCache) HeadDim() int { return c.head }

// DType implements model.KVCacheTyped: F32, F16 or model.KVQ8.
func (c *KVCache) DType() loader.DType { return c.dtype }

// NewKVCache implements model.Backend with an f32 cache.
func (b *Backend) NewKVCache(layers, capacity, kvHeads, headDim int) (model.KVCache, error) {
	return b.NewKVCacheOf(loader.F32, layers, capacity, kvHeads, headDim)
}

// NewKVCacheOf implements model.KVCacheAllocator: a cache of F32, F16 or
// model.KVQ8 values.
func (b *Backend) NewKVCacheOf(dt loader.DType, layers, capacity, kvHeads, headDim int) (model.KVCache, error) {
	if layers <= 0 || capacity <= 0 || kvHeads <= 0 || headDim <= 0 {
		return nil, fmt.Errorf("cpu: KV cache of %d layers, %d positions, %d heads of %d", layers, capacity, kvHeads, headDim)
	}
	row := model.KVRowBytes(dt, kvHeads, headDim)
	if row == 0 {
		return nil, fmt.Errorf("%w, not %v", model.ErrKVDType, dt)
	}
	if layers > 1<<16 || kvHeads > 1<<16 || headDim > 1<<16 || int64(capacity) > (1<<40)/(row*2*int64(layers)) {
		return nil, fmt.Errorf("cpu: KV cache of %d layers of %d positions of %d bytes is too large", layers, capacity, 2*row)
	}
	per := capacity * kvHeads * headDim
	c := &KVCache{dtype: dt, capacity: capacity, kvHeads: kvHeads, head: headDim, block: model.KVQ8Block(headDim)}
	for l := 0; l < layers; l++ {
		switch dt {
		case loader.F32:
			c.K, c.V = append(c.K, make([]float32, per)), append(c.V, make([]float32, per))
		case loader.F16:
			c.K16, c.V16 = append(c.K16, make([]uint16, per)), append(c.V16, make([]uint16, per))
		case model.KVQ8:
			c.K8, c.V8 = append(c.K8, make([]int8, per)), append(c.V8, make([]int8, per))
			c.KS, c.VS = append(c.KS, make([]float32, per/c.block)), append(c.VS, make([]float32, per/c.block))
		}
	}
	return c, nil
}

// store writes the rows k and v (Hk·Dh values each) at position p of
// layer, in the cache's type.
func (c *KVCache) store(layer, p int, k, v []float32) {
	w := c.kvHeads * c.head
	switch c.dtype {
	case loader.F32:
		copy(c.K[layer][p*w:(p+1)*w], k)
		copy(c.V[layer][p*w:(p+1)*w], v)
	case loader.F16:
		for i := range w {
			c.K16[layer][p*w+i] = loader.F32ToF16(k[i])
			c.V16[layer][p*w+i] = loader.F32ToF16(v[i])
		}
	case model.KVQ8:
		nb := w / c.block
		QuantizeKVQ8(c.K8[layer][p*w:(p+1)*w], c.KS[layer][p*nb:(p+1)*nb], k[:w], c.block)
		QuantizeKVQ8(c.V8[layer][p*w:(p+1)*w], c.VS[layer][p*nb:(p+1)*nb], v[:w], c.block)
	}
}

// kvDot is q · the key of head kh at position j of layer, in the
// cache's type (F16 and q8; F32 takes attnTask's own loop). A q8 key is
// summed block by block, each block's sum of q·int8 times its scale.
func (c *KVCache) kvDot(layer, j, kh int, q []float32) float32 {
	Dh := c.head
	base := (j*c.kvHeads + kh) * Dh
	var dot float32
	if c.dtype == loader.F16 {
		k := c.K16[layer][base : base+Dh]
		for d, x := range q {
			dot += x * loader.F16ToF32(k[d])
		}
		return dot
	}
	k, s := c.K8[layer][base:base+Dh], c.KS[layer][base/c.block:]
	for b := 0; b*c.block < Dh; b++ {
		var acc float32
		for i, x := range q[b*c.block : (b+1)*c.block] {
			acc += x * float32(k[b*c.block+i])
		}
		dot += acc * s[b]
	}
	return dot
}

// kvAdd adds w · the value of head kh at position j of layer to o.
func (c *KVCache) kvAdd(o []float32, w float32, layer, j, kh int) {
	Dh := c.head
	base := (j*c.kvHeads + kh) * Dh
	if c.dtype == loader.F16 {
		v := c.V16[layer][base : base+Dh]
		for d := range o {
			o[d] += w * loader.F16ToF32(v[d])
		}
		return
	}
	v, s := c.V8[layer][base:base+Dh], c.VS[layer][base/c.block:]
	for b := 0; b*c.block < Dh; b++ {
		ws := w * s[b]
		for i := b * c.block; i < (b+1)*c.block; i++ {
			o[i] += ws * float32(v[i])
		}
	}
}
