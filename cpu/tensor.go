package cpu

import (
	"encoding/binary"
	"fmt"

	"wasmllm/loader"
)

// tensor is the cpu backend's storage: f32 activations and dense weights,
// i32 ids, or quantised weight bytes read block by block.
type tensor struct {
	shape []int
	dtype loader.DType // F32, I32, or a quantised weight type
	f     []float32
	i     []int32
	q     []byte
	// planar layouts: offset of the scale plane in q.
	scales int
	// shard, for a weight split across ranks: q or f holds rows
	// [0, shard.bounds[1]) only, shape is the whole matrix's.
	shard *shard
	// stack, for a Mixed weight (StackRows), are its row blocks in order,
	// each a weight of its own type.
	stack []*tensor
}

func (t *tensor) Shape() []int { return t.shape }

func (t *tensor) cols() int { return t.shape[len(t.shape)-1] }

func (t *tensor) numel() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// quantised weight types the matmul reads directly.
func directType(d loader.DType) bool {
	switch d {
	case loader.Q8_0, loader.Q4_0, loader.Q4, loader.Q8:
		return true
	}
	return kquant(d)
}

// kquant reports the K-quant block types (256-element super-blocks), kept
// as ggml's blocks and read by a dot product per type (kquant.go).
func kquant(d loader.DType) bool {
	switch d {
	case loader.Q2_K, loader.Q3_K, loader.Q4_K, loader.Q5_K, loader.Q6_K:
		return true
	}
	return false
}

// blockRow is the bytes of row n of a ggml block-type weight with K columns.
func (w *tensor) blockRow(n, K int) []byte {
	rb := K / w.dtype.BlockElems() * w.dtype.BlockBytes()
	return w.q[n*rb : (n+1)*rb]
}

func upload(w *loader.Tensor) (*tensor, error) {
	if err := w.CheckSize(); err != nil {
		return nil, err
	}
	t := &tensor{shape: append([]int(nil), w.Shape...)}
	if len(t.shape) == 0 {
		t.shape = []int{1}
	}
	if directType(w.DType) && len(t.shape) >= 2 {
		t.dtype, t.q = w.DType, w.Data
		if w.DType == loader.Q4 || w.DType == loader.Q8 {
			per := 16
			if w.DType == loader.Q8 {
				per = 32
			}
			t.scales = (w.NumElements()/32*per + 3) &^ 3
		}
		return t, nil
	}
	if w.DType == loader.I32 {
		t.dtype = loader.I32
		t.i = make([]int32, w.NumElements())
		for k := range t.i {
			t.i[k] = int32(binary.LittleEndian.Uint32(w.Data[4*k:]))
		}
		return t, nil
	}
	f, err := w.F32()
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	t.dtype, t.f = loader.F32, f
	return t, nil
}

func f16(b []byte) float32 { return loader.F16ToF32(binary.LittleEndian.Uint16(b)) }

// dot returns row n of weight w (N, K) dotted with x (K).
func (w *tensor) dot(n int, x []float32) float32 {
	K := len(x)
	switch w.dtype {
	case loader.F32:
		return dotF32(w.f[n*K:(n+1)*K], x)
	case loader.Q8_0:
		return dotQ8_0(w.q[n*(K/32)*34:(n+1)*(K/32)*34], x)
	case loader.Q4_0:
		return dotQ4_0(w.q[n*(K/32)*18:(n+1)*(K/32)*18], x)
	case loader.Q8:
		g := n * (K / 32)
		return dotQ8(w.q[g*32:(g+K/32)*32], w.q[w.scales+2*g:], x)
	case loader.Q4:
		g := n * (K / 32)
		return dotQ4(w.q[g*16:(g+K/32)*16], w.q[w.scales+2*g:], x)
	case loader.Q2_K:
		return dotQ2K(w.blockRow(n, K), x)
	case loader.Q3_K:
		return dotQ3K(w.blockRow(n, K), x)
	case loader.Q4_K:
		return dotQ4K(w.blockRow(n, K), x)
	case loader.Q5_K:
		return dotQ5K(w.blockRow(n, K), x)
	case loader.Q6_K:
		return dotQ6K(w.blockRow(n, K), x)
	}
	panic("cpu: dot on " + w.dtype.String())
}

// row dequantises row n of w (N, K) into dst (K).
func (w *tensor) row(n int, dst []float32) {
	K := len(dst)
	switch w.dtype {
	case loader.F32:
		copy(dst, w.f[n*K:(n+1)*K])
	case loader.Q8_0:
		loader.Dequantize(loader.Q8_0, w.q[n*(K/32)*34:(n+1)*(K/32)*34], dst)
	case loader.Q4_0:
		loader.Dequantize(loader.Q4_0, w.q[n*(K/32)*18:(n+1)*(K/32)*18], dst)
	case loader.Q8, loader.Q4:
		g := n * (K / 32)
		for b := 0; b < K/32; b++ {
			s := f16(w.q[w.scales+2*(g+b):])
			out := dst[b*32 : b*32+32]
			if w.dtype == loader.Q8 {
				q := w.q[(g+b)*32:]
				for j := range out {
					out[j] = float32(int8(q[j])) * s
				}
				continue
			}
			q := w.q[(g+b)*16:]
			for j := 0; j < 16; j++ {
				out[j] = float32(int(q[j]&0xf)-8) * s
				out[j+16] = float32(int(q[j]>>4)-8) * s
			}
		}
	default:
		if !kquant(w.dtype) {
			panic("cpu: row on " + w.dtype.String())
		}
		loader.Dequantize(w.dtype, w.blockRow(n, K), dst)
	}
}

func dotF32(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a) &^ 3
	b = b[:len(a)]
	for i := 0; i < n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for i := n; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// The quantised dot products keep four lanes, as one f32x4 register
// does: lane l sums, in order, a block's elements j ≡ l (mod 4); each
// block's lanes are scaled into four row accumulators, which are added
// pairwise at the end. The wasm SIMD kernels (cpu/internal/wasmsimd) do the
// same operations in the same order, so both give the same bits.

func dotQ8_0(q []byte, x []float32) float32 {
	var a0, a1, a2, a3 float32
	for b := 0; b < len(x)/32; b++ {
		blk := q[b*34 : b*34+34]
		p0, p1, p2, p3 := lanes8(blk[2:], x[b*32:])
		d := f16(blk)
		a0, a1, a2, a3 = a0+p0*d, a1+p1*d, a2+p2*d, a3+p3*d
	}
	return (a0 + a1) + (a2 + a3)
}

func dotQ4_0(q []byte, x []float32) float32 {
	var a0, a1, a2, a3 float32
	for b := 0; b < len(x)/32; b++ {
		blk := q[b*18 : b*18+18]
		p0, p1, p2, p3 := lanes4(blk[2:], x[b*32:])
		d := f16(blk)
		a0, a1, a2, a3 = a0+p0*d, a1+p1*d, a2+p2*d, a3+p3*d
	}
	return (a0 + a1) + (a2 + a3)
}

func dotQ8(q, scales []byte, x []float32) float32 {
	var a0, a1, a2, a3 float32
	for b := 0; b < len(x)/32; b++ {
		p0, p1, p2, p3 := lanes8(q[b*32:], x[b*32:])
		d := f16(scales[2*b:])
		a0, a1, a2, a3 = a0+p0*d, a1+p1*d, a2+p2*d, a3+p3*d
	}
	return (a0 + a1) + (a2 + a3)
}

func dotQ4(q, scales []byte, x []float32) float32 {
	var a0, a1, a2, a3 float32
	for b := 0; b < len(x)/32; b++ {
		p0, p1, p2, p3 := lanes4(q[b*16:], x[b*32:])
		d := f16(scales[2*b:])
		a0, a1, a2, a3 = a0+p0*d, a1+p1*d, a2+p2*d, a3+p3*d
	}
	return (a0 + a1) + (a2 + a3)
}

// lanes8 is the four lanes of 32 int8 weights against xs[:32].
func lanes8(qs []byte, xs []float32) (p0, p1, p2, p3 float32) {
	qs, xs = qs[:32], xs[:32]
	for j := 0; j < 32; j += 4 {
		p0 += float32(int8(qs[j])) * xs[j]
		p1 += float32(int8(qs[j+1])) * xs[j+1]
		p2 += float32(int8(qs[j+2])) * xs[j+2]
		p3 += float32(int8(qs[j+3])) * xs[j+3]
	}
	return
}

// lanes4 is the four lanes of 32 4-bit weights (ggml's order: the low
// nibbles of 16 bytes are elements 0-15, the high ones 16-31, offset by
// 8) against xs[:32].
func lanes4(qs []byte, xs []float32) (p0, p1, p2, p3 float32) {
	qs, xs = qs[:16], xs[:32]
	for j := 0; j < 16; j += 4 {
		p0 += float32(int(qs[j]&0xf)-8) * xs[j]
		p1 += float32(int(qs[j+1]&0xf)-8) * xs[j+1]
		p2 += float32(int(qs[j+2]&0xf)-8) * xs[j+2]
		p3 += float32(int(qs[j+3]&0xf)-8) * xs[j+3]
	}
	for j := 0; j < 16; j += 4 {
		p0 += float32(int(qs[j]>>4)-8) * xs[16+j]
		p1 += float32(int(qs[j+1]>>4)-8) * xs[16+j+1]
		p2 += float32(int(qs[j+2]>>4)-8) * xs[16+j+2]
		p3 += float32(int(qs[j+3]>>4)-8) * xs[16+j+3]
	}
	return
}
