package loader

import (
	"fmt"
	"strings"
)

// DType is an element type. Values below 1000 are ggml's own type ids, so a
// GGUF tensor's type maps to a DType unchanged; the planar shard layouts the
// kernels read have ids of their own.
type DType uint32

// ggml types (ggml.h enum ggml_type).
const (
	F32  DType = 0
	F16  DType = 1
	Q4_0 DType = 2
	Q4_1 DType = 3
	Q5_0 DType = 6
	Q5_1 DType = 7
	Q8_0 DType = 8
	Q8_1 DType = 9
	Q2_K DType = 10
	Q3_K DType = 11
	Q4_K DType = 12
	Q5_K DType = 13
	Q6_K DType = 14
	Q8_K DType = 15
	I8   DType = 24
	I16  DType = 25
	I32  DType = 26
	I64  DType = 27
	F64  DType = 28
	BF16 DType = 30
)

// Shard layouts (see planar.go): each row of K elements is K/32 groups; all
// quantised values of the tensor come first, then all scales, each plane
// 4-byte aligned.
const (
	// Q4 is 4-bit weights (value = d*(q-8), as Q4_0) then f16 scales.
	Q4 DType = 1000
	// Q8 is int8 weights (value = d*q, as Q8_0) then f16 scales.
	Q8 DType = 1001
)

type typeInfo struct {
	name       string
	blockElems int // elements per block
	blockBytes int // bytes per block
}

var typeInfos = map[DType]typeInfo{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	F64:  {"F64", 1, 8},
	I8:   {"I8", 1, 1},
	I16:  {"I16", 1, 2},
	I32:  {"I32", 1, 4},
	I64:  {"I64", 1, 8},
	Q4_0: {"Q4_0", 32, 18},
	Q4_1: {"Q4_1", 32, 20},
	Q5_0: {"Q5_0", 32, 22},
	Q5_1: {"Q5_1", 32, 24},
	Q8_0: {"Q8_0", 32, 34},
	Q8_1: {"Q8_1", 32, 36},
	Q2_K: {"Q2_K", 256, 84},
	Q3_K: {"Q3_K", 256, 110},
	Q4_K: {"Q4_K", 256, 144},
	Q5_K: {"Q5_K", 256, 176},
	Q6_K: {"Q6_K", 256, 210},
	Q8_K: {"Q8_K", 256, 292},
	Q4:   {"q4", 32, 18},
	Q8:   {"q8", 32, 34},
}

func (d DType) String() string {
	if d == Mixed {
		return "mixed"
	}
	if ti, ok := typeInfos[d]; ok {
		return ti.name
	}
	return fmt.Sprintf("DType(%d)", uint32(d))
}

// Known reports whether d is a type this package can size.
func (d DType) Known() bool { _, ok := typeInfos[d]; return ok }

// BlockElems is the number of elements in one quantisation block (1 for plain types).
func (d DType) BlockElems() int { return typeInfos[d].blockElems }

// BlockBytes is the number of bytes one block occupies.
func (d DType) BlockBytes() int { return typeInfos[d].blockBytes }

// Quantized reports whether d is a block-quantised type.
func (d DType) Quantized() bool { return d.BlockElems() > 1 }

// ParseDType maps a name such as "q4_0", "Q8_0", "f16" or "q4" to its DType.
func ParseDType(s string) (DType, bool) {
	if strings.EqualFold(s, "mixed") {
		return Mixed, true
	}
	for d, ti := range typeInfos {
		if strings.EqualFold(ti.name, s) {
			return d, true
		}
	}
	return 0, false
}

// RowBytes returns the byte size of n elements of a ggml type d, or an error
// when n is not a whole number of blocks or d is unknown. Planar types have no
// per-row size; use Size.
func (d DType) RowBytes(n int) (int, error) {
	ti, ok := typeInfos[d]
	if !ok {
		return 0, fmt.Errorf("%w: dtype %d", ErrUnsupported, uint32(d))
	}
	if n < 0 || n%ti.blockElems != 0 {
		return 0, fmt.Errorf("%w: %d elements is not a multiple of the %s block size %d", ErrCorrupt, n, ti.name, ti.blockElems)
	}
	return n / ti.blockElems * ti.blockBytes, nil
}

// Size returns the byte size of a tensor of n elements of type d. For the
// planar layouts it is the quantised plane plus the scale plane, each padded
// to 4 bytes.
func (d DType) Size(n int) (int, error) {
	switch d {
	case Q4, Q8:
		if n < 0 || n%32 != 0 {
			return 0, fmt.Errorf("%w: %d elements is not a multiple of the %s group size 32", ErrCorrupt, n, d)
		}
		q := n / 2
		if d == Q8 {
			q = n
		}
		return align4(q) + align4(n/32*2), nil
	}
	return d.RowBytes(n)
}

func align4(n int) int { return (n + 3) &^ 3 }
