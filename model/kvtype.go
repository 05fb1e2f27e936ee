package model

import "wasmllm/loader"

// KVQ8 is the DType of the 8-bit KV cache: each block of KVQ8Block(Dh)
// values of a head row as int8 q with one f32 scale d (value = d·q,
// d = max|x|/127, q = round(x/d)), as ggml's Q8_0 but with an f32 scale
// and blocks that never cross a head. The tag is loader.Q8_0; its name in
// the options is "q8".
const KVQ8 = loader.Q8_0

// KVQ8Block is the values per scale of a q8 cache with head dim headDim:
// 32 where headDim is a multiple of 32, else the whole head row (so a
// block never spans two heads; stories260K's heads of 8 are one block).
func KVQ8Block(headDim int) int {
	if headDim%32 == 0 {
		return 32
	}
	return headDim
}

// KVRowBytes is the bytes one position of one layer takes in a cache of
// type dt: its keys or its values (kvHeads·headDim values), not both; 0
// for a type no cache stores. A q8 row is its int8 values and an f32
// scale per block.
func KVRowBytes(dt loader.DType, kvHeads, headDim int) int64 {
	n := int64(kvHeads) * int64(headDim)
	switch dt {
	case loader.F32:
		return 4 * n
	case loader.F16:
		return 2 * n
	case KVQ8:
		return n + 4*n/int64(KVQ8Block(headDim))
	}
	return 0
}

// KVDTypeName is the name of a cache type in the options ("f32", "f16",
// "q8"); ParseKVDType reads it back.
func KVDTypeName(dt loader.DType) string {
	switch dt {
	case loader.F16:
		return "f16"
	case KVQ8:
		return "q8"
	}
	return "f32"
}

// ParseKVDType reads a cache type's name: "f32", "f16" or "q8" ("q8_0"
// too); ok is false for any other.
func ParseKVDType(s string) (dt loader.DType, ok bool) {
	switch s {
	case "f32":
		return loader.F32, true
	case "f16":
		return loader.F16, true
	case "q8", "q8_0":
		return KVQ8, true
	}
	return 0, false
}
