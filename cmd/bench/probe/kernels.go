//go:build js

package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"wasmllm/cmd/bench/internal/result"
	"wasmllm/gpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// kernelBench times the backend's hot ops through the public model.Backend
// API: each timed submit holds `calls` repeats of one op and ends in a
// 4-byte readback.
type kernelBench struct {
	be   *gpu.Backend
	t    *timer
	rng  *rand.Rand
	sync model.Tensor
	dst  []float32
	rf   *result.Roofline
	log  func(string, ...any)
	out  []result.Kernel
}

// time returns the milliseconds of one call of issue and the calls per
// timed submit.
func (k *kernelBench) time(issue func()) (float64, int, error) {
	read := func() error { return k.be.ReadF32(k.sync, k.dst) }
	issue() // compile and record
	if err := read(); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	issue()
	if err := read(); err != nil {
		return 0, 0, err
	}
	calls := k.t.calls(time.Since(start), 512)
	ms, err := k.t.best(func() error {
		for range calls {
			issue()
		}
		return read()
	})
	return ms / float64(calls), calls, err
}

// bandwidth records a kernel that reads bytes per call, against the read
// probe.
func (k *kernelBench) bandwidth(name, shape string, bytes int64, issue func()) error {
	ms, calls, err := k.time(issue)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	gbps := float64(bytes) / ms / 1e6
	k.log("%s %s: %.3f ms, %.2f GB/s, %.2f of the read probe", name, shape, ms, gbps, gbps/k.rf.ReadGBps)
	k.out = append(k.out, result.Kernel{Name: name, Shape: shape, Unit: "GB/s", Rate: gbps, Ratio: gbps / k.rf.ReadGBps,
		Ms: ms, Bytes: bytes, Calls: calls})
	return nil
}

// weight makes a random F32, planar Q4 or Q8, or Q4_K or Q6_K (ggml's
// blocks) weight whose values stay small.
func (k *kernelBench) weight(dt loader.DType, shape ...int) (model.Tensor, int64, error) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	cols := shape[len(shape)-1]
	if dt == loader.F32 {
		data := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits((k.rng.Float32()*2-1)/float32(cols)))
		}
		w, err := k.be.Upload(&loader.Tensor{Name: fmt.Sprintf("bench f32 %v", shape), DType: dt, Shape: shape, Data: data})
		return w, int64(len(data)), err
	}
	size, err := dt.Size(n)
	if err != nil {
		return nil, 0, err
	}
	data := make([]byte, size)
	if dt.BlockElems() == 256 { // the K-quants
		k.kquantBlocks(dt, data, cols)
		w, err := k.be.Upload(&loader.Tensor{Name: fmt.Sprintf("bench %s %v", dt, shape), DType: dt, Shape: shape, Data: data})
		return w, int64(size), err
	}
	q := n / 2
	if dt == loader.Q8 {
		q = n
	}
	plane := (q + 3) &^ 3
	for i := 0; i+8 <= plane; i += 8 {
		binary.LittleEndian.PutUint64(data[i:], k.rng.Uint64())
	}
	scale := 0.5 / float32(cols)
	for g := 0; g < n/32; g++ {
		binary.LittleEndian.PutUint16(data[plane+2*g:], loader.F32ToF16(scale*(0.5+k.rng.Float32())))
	}
	w, err := k.be.Upload(&loader.Tensor{Name: fmt.Sprintf("bench %s %v", dt, shape), DType: dt, Shape: shape, Data: data})
	return w, int64(size), err
}

func (k *kernelBench) input(shape ...int) model.Tensor {
	x := k.be.NewF32(shape...)
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = k.rng.Float32()*2 - 1
	}
	k.be.WriteF32(x, v)
	return x
}

// gemv times MatMul at T=1 on an (N, K) weight.
func (k *kernelBench) gemv(name string, dt loader.DType, N, K int) error {
	w, bytes, err := k.weight(dt, N, K)
	if err != nil {
		return err
	}
	x, o := k.input(1, K), k.be.NewF32(1, N)
	defer k.free(w, x, o)
	return k.bandwidth(name, fmt.Sprintf("%s N=%d K=%d", dt, N, K), bytes, func() { k.be.MatMul(o, x, w, model.MatMulFusion{}) })
}

// gemm times MatMul at T tokens against the FMA probe.
func (k *kernelBench) gemm(name string, dt loader.DType, T, N, K int) error {
	w, _, err := k.weight(dt, N, K)
	if err != nil {
		return err
	}
	x, o := k.input(T, K), k.be.NewF32(T, N)
	defer k.free(w, x, o)
	return k.compute(name, fmt.Sprintf("%s T=%d N=%d K=%d", dt, T, N, K), 2*float64(T)*float64(N)*float64(K), func() { k.be.MatMul(o, x, w, model.MatMulFusion{}) })
}

// compute records a kernel that does flops per call, against the FMA
// probe.
func (k *kernelBench) compute(name, shape string, flops float64, issue func()) error {
	ms, calls, err := k.time(issue)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	gflops := flops / ms / 1e6
	k.log("%s %s: %.3f ms, %.1f GFLOP/s, %.2f of the FMA probe", name, shape, ms, gflops, gflops/k.rf.FMAGFLOPs)
	k.out = append(k.out, result.Kernel{Name: name, Shape: shape, Unit: "GFLOP/s",
		Rate: gflops, Ratio: gflops / k.rf.FMAGFLOPs, Ms: ms, Flops: flops, Calls: calls})
	return nil
}

// attention times one layer's decode attention (T=1) at position ctx-1 of
// a cache of ctx positions of type dt, as the engine allocates it.
func (k *kernelBench) attention(name string, dt loader.DType, H, Hk, Dh, ctx int) error {
	cache, err := k.be.NewKVCacheOf(dt, 1, ctx, Hk, Dh)
	if err != nil {
		return err
	}
	defer k.be.FreeKVCache(cache)
	elt := int64(4)
	if c, ok := cache.(interface{ DType() loader.DType }); ok && c.DType() == loader.F16 {
		elt = 2
	}
	qkv, out, pos := k.input(1, (H+2*Hk)*Dh), k.be.NewF32(1, H*Dh), k.be.NewI32(1)
	defer k.free(qkv, out, pos)
	k.be.WriteI32(pos, []int32{int32(ctx - 1)})
	bytes := 2 * int64(ctx) * int64(Hk*Dh) * elt
	return k.bandwidth(name, fmt.Sprintf("H=%d Hk=%d Dh=%d ctx=%d kv=%d-byte", H, Hk, Dh, ctx, elt), bytes,
		func() { k.be.Attend(out, qkv, pos, cache, 0, 0, false) })
}

// moe times the MoE op on experts of type dt: the router, top-A and the
// chosen experts. At T=1 (a decode step: the A experts' GEMVs) against the
// read probe, the bytes being the router's and the chosen experts'
// weights; at more tokens (a prefill chunk: tiles on a GPU, entry by entry
// on a CPU adapter) against the FMA probe, the flops being the router's
// and the chosen experts' products.
func (k *kernelBench) moe(name string, dt loader.DType, T, D, E, A, F int) error {
	router, rb, err := k.weight(loader.F32, E, D)
	if err != nil {
		return err
	}
	gu, gb, err := k.weight(dt, E, 2*F, D)
	if err != nil {
		return err
	}
	dn, db, err := k.weight(dt, E, D, F)
	if err != nil {
		return err
	}
	norm, nb, err := k.weight(loader.F32, D)
	if err != nil {
		return err
	}
	res := k.input(T, D)
	defer k.free(norm, router, gu, dn, res)
	// the op Forward calls: the norm folded into the router, the experts'
	// sum added to the residual stream
	issue := func() { k.be.MoE(res, norm, 1e-5, router, gu, dn, A, true, model.MoEFusion{}) }
	if T == 1 {
		bytes := nb + rb + (gb+db)/int64(E)*int64(A)
		return k.bandwidth(name, fmt.Sprintf("%s D=%d E=%d A=%d F=%d", dt, D, E, A, F), bytes, issue)
	}
	flops := 2 * float64(T) * float64(D) * (float64(E) + 3*float64(A*F))
	return k.compute(name, fmt.Sprintf("%s T=%d D=%d E=%d A=%d F=%d", dt, T, D, E, A, F), flops, issue)
}

func (k *kernelBench) free(ts ...model.Tensor) {
	for _, t := range ts {
		k.be.Free(t)
	}
}

// kquantBlocks fills data with random K-quant blocks of 256 values:
// random quants and sub-block scales, and super-block scales (f16) that
// keep the values small.
func (k *kernelBench) kquantBlocks(dt loader.DType, data []byte, cols int) {
	for i := 0; i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], k.rng.Uint64())
	}
	for i := len(data) &^ 7; i < len(data); i++ {
		data[i] = byte(k.rng.Uint32())
	}
	d := loader.F32ToF16(0.02 / float32(cols))
	// the blocks' f16 super-block scales (d, dmin), at these byte offsets
	halves := map[loader.DType][]int{loader.Q2_K: {80, 82}, loader.Q3_K: {108}, loader.Q4_K: {0, 2}, loader.Q5_K: {0, 2}, loader.Q6_K: {208}}[dt]
	bb := dt.BlockBytes()
	for b := 0; b+bb <= len(data); b += bb {
		for _, o := range halves {
			binary.LittleEndian.PutUint16(data[b+o:], d)
		}
	}
}
