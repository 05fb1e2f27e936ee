package gpu

import (
	"fmt"

	"wasmllm/loader"
)

// K-quant blocks in GPU memory are ggml's bytes, block after block, except
// that the blocks whose size is not a multiple of 16 are padded with zeros
// (Q2_K 84 -> 96 bytes, Q3_K 110 -> 112, Q6_K 210 -> 224): every block then
// starts on 16 bytes, and so do the runs of quants, scales and high bits
// the GEMV reads as 16-byte loads. The values are unchanged, so
// dequantisation stays bit-identical to ggml's.
var kquantGPUBlock = map[loader.DType]int{loader.Q2_K: 96, loader.Q3_K: 112, loader.Q6_K: 224}

// KQuantBlockBytes is the bytes one block (256 values) of K-quant dt takes
// in GPU memory.
func KQuantBlockBytes(dt loader.DType) int {
	if gb, ok := kquantGPUBlock[dt]; ok {
		return gb
	}
	return dt.BlockBytes()
}

// PadKQuant returns K-quant blocks src of dt in the GPU layout: src itself
// when that is ggml's, else a padded copy.
func PadKQuant(dt loader.DType, src []byte) ([]byte, error) {
	gb, bb := KQuantBlockBytes(dt), dt.BlockBytes()
	if gb == bb {
		return src, nil
	}
	if len(src)%bb != 0 {
		return nil, fmt.Errorf("gpu: %d bytes of %s blocks: not a whole number of %d-byte blocks", len(src), dt, bb)
	}
	dst := make([]byte, len(src)/bb*gb)
	padBlocks(dst, src, bb, gb)
	return dst, nil
}

// padBlocks copies the bb-byte blocks of src to gb-byte slots of dst.
func padBlocks(dst, src []byte, bb, gb int) {
	for i := 0; i*bb < len(src); i++ {
		copy(dst[i*gb:i*gb+bb], src[i*bb:(i+1)*bb])
	}
}
