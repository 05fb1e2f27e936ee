#include "textflag.h"

// The AVX2 kernels of simd_amd64.go. Each keeps the plain-Go loop's order
// of operations (tensor.go, backend.go): four lanes per row, a multiply
// and an add rounded on their own (no FMA), so both give the same bits. A
// ymm register holds two rows' four lanes, [row a | row b], so every
// 128-bit lane is one row's f32x4, as in the wasm SIMD128 kernels.

// shuf<>: for group g (0..3), VPSHUFB moves byte 4g+i of each 128-bit lane
// to the top byte of dword i (the others zero); VPSRAD $24 then
// sign-extends it.
DATA shuf<>+0x00(SB)/4, $0x00808080
DATA shuf<>+0x04(SB)/4, $0x01808080
DATA shuf<>+0x08(SB)/4, $0x02808080
DATA shuf<>+0x0c(SB)/4, $0x03808080
DATA shuf<>+0x10(SB)/4, $0x00808080
DATA shuf<>+0x14(SB)/4, $0x01808080
DATA shuf<>+0x18(SB)/4, $0x02808080
DATA shuf<>+0x1c(SB)/4, $0x03808080
DATA shuf<>+0x20(SB)/4, $0x04808080
DATA shuf<>+0x24(SB)/4, $0x05808080
DATA shuf<>+0x28(SB)/4, $0x06808080
DATA shuf<>+0x2c(SB)/4, $0x07808080
DATA shuf<>+0x30(SB)/4, $0x04808080
DATA shuf<>+0x34(SB)/4, $0x05808080
DATA shuf<>+0x38(SB)/4, $0x06808080
DATA shuf<>+0x3c(SB)/4, $0x07808080
DATA shuf<>+0x40(SB)/4, $0x08808080
DATA shuf<>+0x44(SB)/4, $0x09808080
DATA shuf<>+0x48(SB)/4, $0x0a808080
DATA shuf<>+0x4c(SB)/4, $0x0b808080
DATA shuf<>+0x50(SB)/4, $0x08808080
DATA shuf<>+0x54(SB)/4, $0x09808080
DATA shuf<>+0x58(SB)/4, $0x0a808080
DATA shuf<>+0x5c(SB)/4, $0x0b808080
DATA shuf<>+0x60(SB)/4, $0x0c808080
DATA shuf<>+0x64(SB)/4, $0x0d808080
DATA shuf<>+0x68(SB)/4, $0x0e808080
DATA shuf<>+0x6c(SB)/4, $0x0f808080
DATA shuf<>+0x70(SB)/4, $0x0c808080
DATA shuf<>+0x74(SB)/4, $0x0d808080
DATA shuf<>+0x78(SB)/4, $0x0e808080
DATA shuf<>+0x7c(SB)/4, $0x0f808080
GLOBL shuf<>(SB), RODATA|NOPTR, $128

// func cpuid(eax, ecx uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eax+0(FP), AX
	MOVL ecx+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv0() uint32
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, ret+0(FP)
	RET

// PROD: Y3 = float(sign-extended byte group of src) * x[off:off+4] in
// both lanes.
#define PROD(mask, src, xo, dst) \
	VPSHUFB mask, src, dst; \
	VPSRAD $24, dst, dst; \
	VCVTDQ2PS dst, dst; \
	VBROADCASTF128 xo, Y4; \
	VMULPS Y4, dst, dst

// LANES: Y8 = the four lanes of one block of 32 signed values (bytes 0..15
// of each row in Y1, 16..31 in Y2) against x at DX, summed in Go's order.
#define LANES \
	PROD(Y10, Y1, 0(DX), Y3); \
	VADDPS Y3, Y9, Y8; \
	PROD(Y11, Y1, 16(DX), Y5); \
	VADDPS Y5, Y8, Y8; \
	PROD(Y12, Y1, 32(DX), Y6); \
	VADDPS Y6, Y8, Y8; \
	PROD(Y13, Y1, 48(DX), Y7); \
	VADDPS Y7, Y8, Y8; \
	PROD(Y10, Y2, 64(DX), Y3); \
	VADDPS Y3, Y8, Y8; \
	PROD(Y11, Y2, 80(DX), Y5); \
	VADDPS Y5, Y8, Y8; \
	PROD(Y12, Y2, 96(DX), Y6); \
	VADDPS Y6, Y8, Y8; \
	PROD(Y13, Y2, 112(DX), Y7); \
	VADDPS Y7, Y8, Y8

// SCALE: Y0 += Y8 * [d of row a (R14) x4 | d of row b (R14+R11) x4].
#define SCALE \
	VPBROADCASTW (R14), X5; \
	VPBROADCASTW (R14)(R11*1), X6; \
	VPUNPCKLQDQ X6, X5, X5; \
	VCVTPH2PS X5, Y5; \
	VMULPS Y5, Y8, Y8; \
	VADDPS Y8, Y0, Y0

// STORE2: out[0], out[1] = (a0+a1)+(a2+a3) of each lane of Y0; next pair.
#define STORE2 \
	VHADDPS Y0, Y0, Y0; \
	VHADDPS Y0, Y0, Y0; \
	VMOVSS X0, (CX); \
	VEXTRACTF128 $1, Y0, X1; \
	VMOVSS X1, 4(CX); \
	ADDQ $8, CX; \
	LEAQ (SI)(R10*2), SI; \
	LEAQ (DI)(R11*2), DI

// func gemvQ4AVX2(q, s *byte, qBlk, sBlk, dq, ds uintptr, x, out *float32, pairs, nb int)
//
// Rows in pairs: row a's blocks at q (quants, 16 bytes each, qBlk apart)
// and s (f16 scales, sBlk apart), row b's dq and ds after them; the next
// pair 2dq and 2ds on. out gets 2 values a pair.
TEXT ·gemvQ4AVX2(SB), NOSPLIT, $0-80
	MOVQ q+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ qBlk+16(FP), R8
	MOVQ sBlk+24(FP), R9
	MOVQ dq+32(FP), R10
	MOVQ ds+40(FP), R11
	MOVQ out+56(FP), CX
	MOVQ pairs+64(FP), R12
	VMOVDQU shuf<>+0(SB), Y10
	VMOVDQU shuf<>+32(SB), Y11
	VMOVDQU shuf<>+64(SB), Y12
	VMOVDQU shuf<>+96(SB), Y13
	VXORPS Y9, Y9, Y9
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x08080808, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q4pair:
	VXORPS Y0, Y0, Y0
	MOVQ SI, AX
	MOVQ DI, R14
	MOVQ x+48(FP), DX
	MOVQ nb+72(FP), R13

q4block:
	VMOVDQU (AX), X1
	VINSERTI128 $1, (AX)(R10*1), Y1, Y1
	VPSRLW $4, Y1, Y2
	VPAND Y15, Y1, Y1
	VPAND Y15, Y2, Y2
	VPSUBB Y14, Y1, Y1
	VPSUBB Y14, Y2, Y2
	LANES
	SCALE
	ADDQ R8, AX
	ADDQ R9, R14
	ADDQ $128, DX
	DECQ R13
	JNZ q4block

	STORE2
	DECQ R12
	JNZ q4pair
	VZEROUPPER
	RET

// func gemvQ8AVX2(q, s *byte, qBlk, sBlk, dq, ds uintptr, x, out *float32, pairs, nb int)
//
// gemvQ4AVX2 for blocks of 32 int8 quants.
TEXT ·gemvQ8AVX2(SB), NOSPLIT, $0-80
	MOVQ q+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ qBlk+16(FP), R8
	MOVQ sBlk+24(FP), R9
	MOVQ dq+32(FP), R10
	MOVQ ds+40(FP), R11
	MOVQ out+56(FP), CX
	MOVQ pairs+64(FP), R12
	VMOVDQU shuf<>+0(SB), Y10
	VMOVDQU shuf<>+32(SB), Y11
	VMOVDQU shuf<>+64(SB), Y12
	VMOVDQU shuf<>+96(SB), Y13
	VXORPS Y9, Y9, Y9

q8pair:
	VXORPS Y0, Y0, Y0
	MOVQ SI, AX
	MOVQ DI, R14
	MOVQ x+48(FP), DX
	MOVQ nb+72(FP), R13

q8block:
	VMOVDQU (AX), X1
	VINSERTI128 $1, (AX)(R10*1), Y1, Y1
	VMOVDQU 16(AX), X2
	VINSERTI128 $1, 16(AX)(R10*1), Y2, Y2
	LANES
	SCALE
	ADDQ R8, AX
	ADDQ R9, R14
	ADDQ $128, DX
	DECQ R13
	JNZ q8block

	STORE2
	DECQ R12
	JNZ q8pair
	VZEROUPPER
	RET

// func dequantQ4AVX2(q, s *byte, qBlk, sBlk uintptr, dst *float32, nb int)
//
// dst[32b+j] = float(q_j - 8) * d for nb blocks (quants qBlk apart, f16
// scales sBlk apart): loader.Dequantize's product, one rounding.
TEXT ·dequantQ4AVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ qBlk+16(FP), R8
	MOVQ sBlk+24(FP), R9
	MOVQ dst+32(FP), CX
	MOVQ nb+40(FP), R13
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X15
	VPBROADCASTD X15, X15
	MOVL $0x08080808, AX
	VMOVD AX, X14
	VPBROADCASTD X14, X14

dq4block:
	VPBROADCASTW (DI), X5
	VCVTPH2PS X5, Y5
	VMOVDQU (SI), X1
	VPSRLW $4, X1, X2
	VPAND X15, X1, X1
	VPAND X15, X2, X2
	VPSUBB X14, X1, X1
	VPSUBB X14, X2, X2
	VPMOVSXBD X1, Y3
	VPSRLDQ $8, X1, X1
	VPMOVSXBD X1, Y4
	VPMOVSXBD X2, Y6
	VPSRLDQ $8, X2, X2
	VPMOVSXBD X2, Y7
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS Y5, Y3, Y3
	VMULPS Y5, Y4, Y4
	VMULPS Y5, Y6, Y6
	VMULPS Y5, Y7, Y7
	VMOVUPS Y3, (CX)
	VMOVUPS Y4, 32(CX)
	VMOVUPS Y6, 64(CX)
	VMOVUPS Y7, 96(CX)
	ADDQ R8, SI
	ADDQ R9, DI
	ADDQ $128, CX
	DECQ R13
	JNZ dq4block
	VZEROUPPER
	RET

// func dequantQ8AVX2(q, s *byte, qBlk, sBlk uintptr, dst *float32, nb int)
//
// dequantQ4AVX2 for blocks of 32 int8 quants: float(q_j) * d.
TEXT ·dequantQ8AVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ qBlk+16(FP), R8
	MOVQ sBlk+24(FP), R9
	MOVQ dst+32(FP), CX
	MOVQ nb+40(FP), R13

dq8block:
	VPBROADCASTW (DI), X5
	VCVTPH2PS X5, Y5
	VPMOVSXBD (SI), Y3
	VPMOVSXBD 8(SI), Y4
	VPMOVSXBD 16(SI), Y6
	VPMOVSXBD 24(SI), Y7
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VCVTDQ2PS Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS Y5, Y3, Y3
	VMULPS Y5, Y4, Y4
	VMULPS Y5, Y6, Y6
	VMULPS Y5, Y7, Y7
	VMOVUPS Y3, (CX)
	VMOVUPS Y4, 32(CX)
	VMOVUPS Y6, 64(CX)
	VMOVUPS Y7, 96(CX)
	ADDQ R8, SI
	ADDQ R9, DI
	ADDQ $128, CX
	DECQ R13
	JNZ dq8block
	VZEROUPPER
	RET

// ACC(x, wa, wb, acca, accb): acca += wa*x, accb += wb*x (Y3, Y12 temps).
#define ACC(xv, acca, accb) \
	VMULPS xv, Y0, Y3; \
	VADDPS Y3, acca, acca; \
	VMULPS xv, Y1, Y12; \
	VADDPS Y12, accb, accb

// OUT4: the four rows' results of accumulators ra = [r0|r1], rb = [r2|r3]
// for one token, each (a0+a1)+(a2+a3), stored as out[0..3].
#define OUT4(ra, rb, xa, xb, dst) \
	VHADDPS rb, ra, ra; \
	VHADDPS ra, ra, ra; \
	VEXTRACTF128 $1, ra, X13; \
	VUNPCKLPS X13, xa, xa; \
	VMOVUPS xa, dst

// func gemm4x4AVX2(w, x, out *float32, K, ldo int)
//
// out[t*ldo+r] = w[r] · x[t] for rows r < 4 of w (K apart) and tokens
// t < 4 of x (K apart), each in dotF32's order; K a multiple of 4.
TEXT ·gemm4x4AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ out+16(FP), CX
	MOVQ K+24(FP), R8
	MOVQ ldo+32(FP), R12
	MOVQ R8, R13
	SHRQ $2, R13   // K/4 steps
	SHLQ $2, R8    // row stride in bytes
	LEAQ (R8)(R8*2), R9
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R11
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

g44loop:
	VMOVUPS (SI), X0
	VINSERTF128 $1, (SI)(R8*1), Y0, Y0
	VMOVUPS (SI)(R8*2), X1
	VINSERTF128 $1, (SI)(R9*1), Y1, Y1
	VBROADCASTF128 (DX), Y2
	ACC(Y2, Y4, Y5)
	VBROADCASTF128 (DX)(R8*1), Y14
	ACC(Y14, Y6, Y7)
	VBROADCASTF128 (DX)(R8*2), Y15
	ACC(Y15, Y8, Y9)
	VBROADCASTF128 (DX)(R9*1), Y2
	ACC(Y2, Y10, Y11)
	ADDQ $16, SI
	ADDQ $16, DX
	DECQ R13
	JNZ g44loop

	OUT4(Y4, Y5, X4, X5, (CX))
	OUT4(Y6, Y7, X6, X7, (CX)(R12*1))
	OUT4(Y8, Y9, X8, X9, (CX)(R12*2))
	OUT4(Y10, Y11, X10, X11, (CX)(R11*1))
	VZEROUPPER
	RET

// func gemm4x1AVX2(w, x, out *float32, K int)
//
// out[r] = w[r] · x for rows r < 4 of w (K apart), in dotF32's order.
TEXT ·gemm4x1AVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ out+16(FP), CX
	MOVQ K+24(FP), R8
	MOVQ R8, R13
	SHRQ $2, R13
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5

g41loop:
	VMOVUPS (SI), X0
	VINSERTF128 $1, (SI)(R8*1), Y0, Y0
	VMOVUPS (SI)(R8*2), X1
	VINSERTF128 $1, (SI)(R9*1), Y1, Y1
	VBROADCASTF128 (DX), Y2
	ACC(Y2, Y4, Y5)
	ADDQ $16, SI
	ADDQ $16, DX
	DECQ R13
	JNZ g41loop

	OUT4(Y4, Y5, X4, X5, (CX))
	VZEROUPPER
	RET
