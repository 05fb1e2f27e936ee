//go:build js

package gpu

import (
	"errors"
	"fmt"
	"math"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// kvCache is the WebGPU KV cache: per layer one K and one V buffer, each
// head-major (Hk, S, Dh), so that a (head, chunk) workgroup of the decode
// kernel and a K/V tile of the prefill kernel read one contiguous span.
// F16 caches pack pairs of halves in a word; a q8 cache (model.KVQ8)
// packs four int8 values in a word, (Hk, S, Dh/4) words, and then holds
// the scales plane, (Hk, S, Dh/KVB) f32, in the same buffer.
type kvCache struct {
	b                         *Backend
	layers, capacity, kvHeads int
	headDim                   int
	dtype                     loader.DType
	k, v                      []*webgpu.Buffer
	splits                    int              // NS of the decode kernel, fixed at creation
	lanes                     int              // LANES of the decode kernel, fixed at creation
	part                      *webgpu.Buffer   // flash-decoding partials, grown on demand
	old                       []*webgpu.Buffer // outgrown partials, still bound by cached programs
	freed                     bool
}

func (c *kvCache) Capacity() int { return c.capacity }
func (c *kvCache) KVHeads() int  { return c.kvHeads }
func (c *kvCache) HeadDim() int  { return c.headDim }

// DType is F32, F16 or model.KVQ8, the type the cache stores.
func (c *kvCache) DType() loader.DType { return c.dtype }

// NewKVCache implements model.Backend with an f32 cache.
func (b *Backend) NewKVCache(layers, capacity, kvHeads, headDim int) (model.KVCache, error) {
	return b.NewKVCacheOf(loader.F32, layers, capacity, kvHeads, headDim)
}

// NewKVCacheOf allocates a KV cache that stores keys and values as dt: F32,
// or F16 (packed with pack2x16float; half the memory and bandwidth, about
// 1e-3 relative error in attention outputs). The per-buffer limits are
// checked before anything is allocated; a cache that does not fit is a
// *KVCacheError. Free it with FreeKVCache.
func (b *Backend) NewKVCacheOf(dt loader.DType, layers, capacity, kvHeads, headDim int) (model.KVCache, error) {
	shapeErr := func(reason string) error {
		return &KVShapeError{Layers: layers, Capacity: capacity, KVHeads: kvHeads, HeadDim: headDim, DType: dt, Reason: reason}
	}
	switch dt {
	case loader.F32, loader.F16, model.KVQ8:
	default:
		return nil, shapeErr("the cache stores F32, F16 or Q8_0 (q8)")
	}
	if layers <= 0 || capacity <= 0 || kvHeads <= 0 || headDim <= 0 {
		return nil, shapeErr("every dimension must be positive")
	}
	if !headDimOK(headDim, dt) {
		return nil, shapeErr(fmt.Sprintf("the head dim must be a multiple of %d of at most %d", headDimStep(headDim, dt), maxHeadDim))
	}
	if layers > 1<<16 || kvHeads > 1<<16 {
		return nil, shapeErr("too many layers or heads")
	}
	rowBytes := uint64(model.KVRowBytes(dt, kvHeads, headDim))
	if uint64(capacity) > (1<<48)/rowBytes {
		return nil, shapeErr("too many positions")
	}
	per := uint64(capacity) * rowBytes
	total := per * 2 * uint64(layers)
	lim, name := b.d.Limits.MaxStorageBufferBindingSize, "maxStorageBufferBindingSize"
	if b.d.Limits.MaxBufferSize < lim {
		lim, name = b.d.Limits.MaxBufferSize, "maxBufferSize"
	}
	fail := func(limit string, need, have uint64, err error) error {
		return &KVCacheError{Layers: layers, Capacity: capacity, KVHeads: kvHeads, HeadDim: headDim, DType: dt,
			Limit: limit, Need: need, Have: have, Total: total, MaxCapacity: int(lim / rowBytes), Err: err}
	}
	if per > lim {
		return nil, fail(name, per, lim, nil)
	}
	c := &kvCache{b: b, layers: layers, capacity: capacity, kvHeads: kvHeads, headDim: headDim, dtype: dt,
		splits: b.tune.decodeSplits(capacity), lanes: b.tune.decodeLanes(headDim)}
	if dt == model.KVQ8 {
		c.lanes = 1 // the decode kernel reads q8 one thread a key
	}
	var done uint64
	for l := 0; l < layers; l++ {
		for _, kv := range []struct {
			name string
			dst  *[]*webgpu.Buffer
		}{{"K", &c.k}, {"V", &c.v}} {
			buf, err := b.d.CreateBuffer(fmt.Sprintf("kv cache %s layer %d", kv.name, l), per, webgpu.UsageStorage)
			if err != nil {
				c.destroy()
				var le *webgpu.LimitError
				var ge *webgpu.GPUError
				switch {
				case errors.As(err, &le):
					return nil, fail(le.Limit, le.Need, le.Have, err)
				case errors.As(err, &ge) && ge.Kind == "out-of-memory":
					return nil, fail("out-of-memory", total, done, err)
				}
				return nil, err
			}
			*kv.dst = append(*kv.dst, buf)
			done += per
		}
	}
	// Out-of-memory is reported asynchronously, when the error scopes settle.
	if err := b.d.Sync(); err != nil {
		c.destroy()
		var ge *webgpu.GPUError
		if errors.As(err, &ge) && ge.Kind == "out-of-memory" {
			return nil, fail("out-of-memory", total, 0, err)
		}
		return nil, err
	}
	return c, nil
}

func (c *kvCache) destroy() {
	for _, list := range [][]*webgpu.Buffer{c.k, c.v, c.old, {c.part}} {
		for _, buf := range list {
			if buf != nil {
				buf.Destroy()
			}
		}
	}
	c.k, c.v, c.old, c.part = nil, nil, nil, nil
}

// FreeKVCache releases a cache made by this backend (a model's
// *model.HybridCache too: its KV cache and its recurrent states);
// programs and bind groups that use it are dropped with it.
func (b *Backend) FreeKVCache(cache model.KVCache) {
	if g, ok := cache.(*model.GroupedCache); ok {
		for _, c := range g.Groups {
			b.FreeKVCache(c)
		}
		return
	}
	if h, ok := cache.(*model.HybridCache); ok {
		if h.KV != nil {
			b.FreeKVCache(h.KV)
		}
		for i := range h.Conv {
			b.Free(h.Conv[i])
			b.Free(h.State[i])
		}
		return
	}
	c, ok := cache.(*kvCache)
	if !ok || c.b != b || c.freed {
		return
	}
	if len(b.pending) > 0 {
		if err := b.flush(nil, nil, 0); err != nil {
			b.fail(err)
		}
	}
	c.freed = true
	c.destroy()
	b.dropCaches()
}

// decodeMaxT is the most tokens the flash-decoding path takes; larger
// batches use the tiled prefill kernel.
const decodeMaxT = 4

// cacheOf returns cache as this backend's, or records the op's error.
func (b *Backend) cacheOf(name string, cache model.KVCache, layer int) *kvCache {
	c, ok := cache.(*kvCache)
	if !ok || c.b != b {
		b.opErr(name, "the cache %T was not made by this backend", cache)
		return nil
	}
	if c.freed {
		b.opErr(name, "the cache was freed")
		return nil
	}
	if layer < 0 || layer >= c.layers {
		b.opErr(name, "layer %d of a cache of %d layers", layer, c.layers)
		return nil
	}
	return c
}

// Attend implements model.Backend: flash-decoding for decode batches
// (partial, then reduce), the tiled prefill kernel otherwise. The output
// gate (gated) is applied where the output is written (the reduce, the
// prefill kernel's store): no pass of its own.
func (b *Backend) Attend(out, qkv, pos model.Tensor, cache model.KVCache, layer, window int, gated bool) {
	c := b.cacheOf("Attend", cache, layer)
	if c == nil {
		return
	}
	o, q, p := tt(out), tt(qkv), tt(pos)
	Hk, Dh := c.kvHeads, c.headDim
	if q.buf == nil || q.dtype != loader.F32 || len(q.shape) != 2 || q.cols()%Dh != 0 {
		b.opErr("Attend", "qkv %s %v is not an f32 (T, (H+2Hk)*Dh) activation with Dh=%d", q.dtype, q.shape, Dh)
		return
	}
	T, C := q.rows(), q.cols()
	H := o.cols() / Dh // qkv's rows: [q], [q | k | v] or [q | k | v | gate]
	gate4 := uint32(0) // the gate's first vec4 in a row
	if gated {
		gate4 = uint32((H + 2*Hk) * Dh / 4)
		if (H+2*Hk)*Dh+H*Dh != C {
			b.opErr("Attend", "gated qkv width %d is not (2H+2Hk)*Dh with Hk=%d, Dh=%d", C, Hk, Dh)
			return
		}
	} else if C != H*Dh && C != (H+2*Hk)*Dh {
		b.opErr("Attend", "qkv width %d is neither H*Dh nor (H+2Hk)*Dh with H=%d (out's), Hk=%d, Dh=%d", C, H, Hk, Dh)
		return
	}
	if H <= 0 || H%Hk != 0 {
		b.opErr("Attend", "qkv width %d holds %d query heads, not a positive multiple of Hk=%d (Dh=%d)", C, H, Hk, Dh)
		return
	}
	if p.buf == nil || p.dtype != loader.I32 || p.numel() != T {
		b.opErr("Attend", "pos %s %v: want (%d) i32", p.dtype, p.shape, T)
		return
	}
	if o.buf == nil || o.dtype != loader.F32 || o.numel() != T*H*Dh {
		b.opErr("Attend", "out %s %v: want (%d, %d) f32", o.dtype, o.shape, T, H*Dh)
		return
	}
	if window < 0 {
		b.opErr("Attend", "sliding window %d", window)
		return
	}
	win := uint32(window) // a window as long as the cache is none
	if window >= c.capacity {
		win = 0
	}
	if T <= decodeMaxT && b.attnDecode(c, o, q, p, layer, T, C, H, win, gate4) {
		return
	}
	b.attnPrefill(c, o, q, p, layer, T, C, H, win, gate4)
}

func (c *kvCache) f16() float64 {
	if c.dtype == loader.F16 {
		return 1
	}
	return 0
}

// q8 is the KV_Q8 override: 1 for a q8 cache.
func (c *kvCache) q8() float64 {
	if c.dtype == model.KVQ8 {
		return 1
	}
	return 0
}

// decodeBatch is QB: the largest divisor of G of at most 8 (and at most
// 1024/Dh, which bounds the kernel's workgroup memory; at most 4 when
// lanes share a key, whose registers hold four queries), the query heads
// one decode workgroup scores against each key it loads.
func decodeBatch(G, Dh, lanes int) int {
	most := 8
	if lanes > 1 {
		most = 4
	}
	for qb := min(G, most, max(1, 1024/Dh)); qb > 1; qb-- {
		if G%qb == 0 {
			return qb
		}
	}
	return 1
}

// decodeSlices is S, the partials each decode workgroup writes per query:
// its 64 threads split the head's VU value units (Dh/4 vec4 in f32, Dh/8
// pairs of vec4 in f16 or for f32 heads of more than 256), and the keys
// among the 64/VU slices so formed.
func decodeSlices(Dh int, f16 bool) int {
	vu := Dh / 4
	if f16 || vu > decodeChunk {
		vu = Dh / 8
	}
	return decodeChunk / vu
}

// attnDecode records flash-decoding (partial, then reduce) and reports
// whether it could: its partials must fit one binding.
func (b *Backend) attnDecode(c *kvCache, o, q, p *tensor, layer, T, C, H int, window, gate4 uint32) bool {
	Hk, Dh := c.kvHeads, c.headDim
	G := H / Hk
	qb := decodeBatch(G, Dh, c.lanes)
	if c.dtype == model.KVQ8 {
		// at most 4: a q8 unit's 16 values take the registers of queries 4-7
		qb = decodeBatch(G, Dh, 2)
	}
	ns := c.splits
	if ns > b.d.Limits.MaxComputeWorkgroupsPerDimension || Hk*(G/qb) > b.d.Limits.MaxComputeWorkgroupsPerDimension {
		return false
	}
	S := decodeSlices(Dh, c.dtype == loader.F16)
	if c.dtype == model.KVQ8 {
		S = decodeChunk / (Dh / 16)
	}
	rows := uint64(T) * uint64(H) * uint64(ns) * uint64(S)
	need := rows * uint64(Dh/4+1) * 16
	lim := min(b.d.Limits.MaxStorageBufferBindingSize, b.d.Limits.MaxBufferSize)
	if need > lim {
		return false
	}
	if c.part == nil || c.part.Size() < need {
		buf, err := b.d.CreateBuffer("attention partials", need, webgpu.UsageStorage)
		if err != nil {
			return false
		}
		if c.part != nil {
			c.old = append(c.old, c.part)
		}
		c.part = buf
	}
	kp, err := use(b, kDecodePartial, constant{"DH", float64(Dh)}, constant{"QB", float64(qb)}, constant{"KV_F16", c.f16()}, constant{"KV_Q8", c.q8()}, constant{"LANES", float64(c.lanes)})
	if err != nil {
		b.fail(err)
		return true
	}
	kr, err := use(b, kDecodeReduce, constant{"DH", float64(Dh)})
	if err != nil {
		b.fail(err)
		return true
	}
	scale := float32(1 / math.Sqrt(float64(Dh)))
	stats := uint32(rows * uint64(Dh/4))
	kp.dispatch(b, decodeParams{Row4: uint32(C / 4), Heads: uint32(H), Group: uint32(G), Cap: uint32(c.capacity), NS: uint32(ns), Scale: scale, Stats: stats, NQB: uint32(G / qb), Slices: uint32(S), Window: window},
		ns, Hk*(G/qb), T, q.whole(), p.whole(), bind{buf: c.k[layer]}, bind{buf: c.v[layer]}, bind{buf: c.part})
	gq := bind{buf: b.dummy}
	if gate4 > 0 {
		gq = q.whole()
	}
	kr.dispatch(b, decodeReduceParams{Heads: uint32(H), Cap: uint32(c.capacity), NS: uint32(ns), Stats: stats, Slices: uint32(S), Row4: uint32(C / 4), Gate4: gate4},
		H, T, 1, bind{buf: c.part}, p.whole(), o.whole(), gq)
	return true
}

// prefillTiles are BQ and BK of attention_prefill.wgsl for a head dim:
// even (the kernel's threads take 2×2 blocks), at most 16, and a Q or K/V
// tile of at most 1024 floats.
func prefillTiles(Dh int) (bq, bk int) {
	bq = max(2, min(16, 1024/Dh)&^1)
	return bq, bq
}

func (b *Backend) attnPrefill(c *kvCache, o, q, p *tensor, layer, T, C, H int, window, gate4 uint32) {
	Hk, Dh := c.kvHeads, c.headDim
	G := H / Hk
	bq, bk := prefillTiles(Dh)
	k, err := use(b, kPrefill, constant{"DH", float64(Dh)}, constant{"BQ", float64(bq)}, constant{"BK", float64(bk)}, constant{"KV_F16", c.f16()}, constant{"KV_Q8", c.q8()})
	if err != nil {
		b.fail(err)
		return
	}
	rows := T * G
	scale := float32(1 / math.Sqrt(float64(Dh)))
	k.dispatch(b, prefillParams{Row4: uint32(C / 4), Heads: uint32(H), Group: uint32(G), Cap: uint32(c.capacity), Rows: uint32(rows), Scale: scale, Window: window, Gate4: gate4},
		(rows+bq-1)/bq, Hk, 1, q.whole(), p.whole(), bind{buf: c.k[layer]}, bind{buf: c.v[layer]}, o.whole())
}
