package cpu

import (
	"math"

	"wasmllm/loader"
	"wasmllm/model"
)

// QuantizeKVQ8 stores the values x (a multiple of block) as the 8-bit KV
// cache does (model.KVQ8): per block of block values, the scale
// d = max|x|/127 and q = round(x·(1/d)) (half away from zero, clamped to
// ±127), q 0 where d is 0. q has len(x) values, d one per block.
func QuantizeKVQ8(q []int8, d []float32, x []float32, block int) {
	for b := 0; b*block < len(x); b++ {
		blk := x[b*block : (b+1)*block]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		s := amax / 127
		d[b] = s
		var id float32
		if s != 0 {
			id = 1 / s
		}
		for i, v := range blk {
			r := math.Round(float64(v * id))
			q[b*block+i] = int8(max(-127, min(127, r)))
		}
	}
}

// DequantizeKVQ8 is x = d·q, per block of block values.
func DequantizeKVQ8(x []float32, q []int8, d []float32, block int) {
	for i := range x {
		x[i] = d[i/block] * float32(q[i])
	}
}

// StoreKV replaces the key or value rows x (of heads of headDim) by what
// a cache of type dt keeps of them: x itself (F32), each value rounded to
// f16 (F16), or quantised to q8 and back (model.KVQ8). It is the
// reference of RoPEKV's store into a typed cache: Attend over a typed
// cache is Attend over the rows StoreKV gives.
func StoreKV(x []float32, dt loader.DType, headDim int) {
	switch dt {
	case loader.F16:
		for i, v := range x {
			x[i] = loader.F16ToF32(loader.F32ToF16(v))
		}
	case model.KVQ8:
		block := model.KVQ8Block(headDim)
		q, d := make([]int8, len(x)), make([]float32, len(x)/block)
		QuantizeKVQ8(q, d, x, block)
		DequantizeKVQ8(x, q, d, block)
	}
}
