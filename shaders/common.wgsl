// common.wgsl: helpers appended to every kernel (after its own source);
// the GEMV section only to the kernels that define GEMV (see Build).
//
// Weight dtypes, as the WTYPE override constant of matmul-like kernels:
//   0 f32: array<f32>
//   1 f16: array<u32>, two halves per word (element 2i low, 2i+1 high)
//   2 q8:  values array<u32> (4 int8 per word), scales array<u32> (2 f16 per word),
//          value = scale[g] * q, one scale per group of 32
//   3 q4:  values array<u32> (8 nibbles per word), scales as q8; a group's 16
//          bytes keep ggml Q4_0's order: byte j holds element j (low nibble)
//          and element j+16 (high nibble); value = scale[g] * (q - 8)
const WTYPE_F32: u32 = 0u;
const WTYPE_F16: u32 = 1u;
const WTYPE_Q8: u32 = 2u;
const WTYPE_Q4: u32 = 3u;

// nan_as_inf reads a NaN as +Inf (by its bits: compilers may assume no NaN
// in comparisons), so that argmax and topk rank a non-finite logit first.
fn nan_as_inf(x: f32) -> f32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return bitcast<f32>(b & 0x7f800000u); // +Inf, not a const-expression (which may not be infinite)
    }
    return x;
}

// is_pos_inf reports whether x is +Inf, by its bits.
fn is_pos_inf(x: f32) -> bool {
    return bitcast<u32>(x) == 0x7f800000u;
}

// half_of returns half i of an array of packed f16 pairs, given its word.
fn half_of(word: u32, i: u32) -> f32 {
    let v = unpack2x16float(word);
    return select(v.x, v.y, (i & 1u) == 1u);
}

// i8x4 widens the four signed bytes of w (byte 0 first).
fn i8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(f32(i32(w << 24u) >> 24u), f32(i32(w << 16u) >> 24u),
                     f32(i32(w << 8u) >> 24u), f32(i32(w) >> 24u));
}

// q4_lo and q4_hi widen the low and high nibbles of the four bytes of w,
// minus 8: for word j (0..3) of a group, elements 4j..4j+3 and 16+4j..16+4j+3.
fn q4_lo(w: u32) -> vec4<f32> {
    return vec4<f32>(f32(w & 15u), f32((w >> 8u) & 15u), f32((w >> 16u) & 15u), f32((w >> 24u) & 15u)) - 8.0;
}
fn q4_hi(w: u32) -> vec4<f32> {
    return vec4<f32>(f32((w >> 4u) & 15u), f32((w >> 12u) & 15u), f32((w >> 20u) & 15u), f32((w >> 28u) & 15u)) - 8.0;
}

// The GEMV kernels (matmul_gemv, moe_gemv) widen quantised values without
// int-to-float conversions (an eighth of the FMA rate on some GPUs): the bits
// are placed at the top of an f32 mantissa under exponent 0, giving 1 + q/2^b
// for b bits q there (1 + u/256 for a byte u = q + 128). A dot product over
// them is Σx + Σqx/2^b, from which Σqx follows with the values' Σx, losing
// about b/2 bits to cancellation (the tests hold 1e-5 of the row maximum).
const MM_ONE: u32 = 0x3F800000u;

// mm_q4word is Σ(1 + n/2^b)·x over the nibbles n of one word w, the low
// ones (activations xl) and the high ones (xh), as (low, high, low, high)
// sums of bytes 0 and 2, 1 and 3: one shift places a byte's two nibbles at
// mantissa bits 15 and 19 (b = 8 and 4), so that a shift and an or serve
// two values. (Against a shift per nibble on SwiftShader: Q4_K's GEMV 1.5x
// faster, q4's down GEMV 1.14x.)
fn mm_q4word(w: u32, xl: vec4<f32>, xh: vec4<f32>) -> vec4<f32> {
    let m = vec4<u32>(MM_ONE | (15u << 15u), MM_ONE | (15u << 19u), MM_ONE | (15u << 15u), MM_ONE | (15u << 19u));
    let b0 = (w << 15u) | MM_ONE;
    let b1 = (w << 7u) | MM_ONE;
    let b2 = (w >> 1u) | MM_ONE;
    let b3 = (w >> 9u) | MM_ONE;
    let a = bitcast<vec4<f32>>(vec4<u32>(b0, b0, b1, b1) & m) * vec4<f32>(xl.x, xh.x, xl.y, xh.y);
    return fma(bitcast<vec4<f32>>(vec4<u32>(b2, b2, b3, b3) & m), vec4<f32>(xl.z, xh.z, xl.w, xh.w), a);
}

// mm_q8 gives 1 + u/256 for the four bytes u of q, u = value + 128 (the
// sign bits already flipped by the caller).
fn mm_q8(q: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(q << 15u, q << 7u, q >> 1u, q >> 9u) & vec4<u32>(0x007F8000u)) | vec4<u32>(MM_ONE));
}
fn mm_half4(a: u32, b: u32) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(a), unpack2x16float(b));
}

// MmX is the activations one 16-byte weight chunk of dtype wt multiplies:
// v0 for f32, v0..v1 for f16, v0..v3 for q8, v0..v7 for q4 (the rest
// unused), and the widening's terms (mm_xterms): off, and for q4 lo and hi,
// the sums of v0..v3 and v4..v7.
struct MmX {
    v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>,
    v4: vec4<f32>, v5: vec4<f32>, v6: vec4<f32>, v7: vec4<f32>,
    off: f32, lo: f32, hi: f32,
}

// mm_xterms sets x's widening terms: off is 8Σx for q4, 384Σx for q8, 0 for
// floats.
fn mm_xterms(wt: u32, x: ptr<function, MmX>) {
    let one = vec4<f32>(1.0);
    (*x).off = 0.0;
    if (wt == WTYPE_Q4) {
        (*x).lo = dot(((*x).v0 + (*x).v1) + ((*x).v2 + (*x).v3), one);
        (*x).hi = dot(((*x).v4 + (*x).v5) + ((*x).v6 + (*x).v7), one);
        (*x).off = 8.0 * ((*x).lo + (*x).hi);
    }
    if (wt == WTYPE_Q8) {
        (*x).off = 384.0 * dot(((*x).v0 + (*x).v1) + ((*x).v2 + (*x).v3), one);
    }
}

// mm_dot is the dot product of weight chunk q (dtype wt) with x, before the
// scale: for q4 Σqx, so that Σ(q-8)x = mm_dot - x.off; for q8
// 256Σ(1+u/256)x, so that Σqx = mm_dot - x.off; for floats the dot itself.
// A q4 chunk is one group: word j holds elements 4j..4j+3 (low nibbles) and
// 16+4j..16+4j+3 (high); a q8 chunk is half a group.
fn mm_dot(wt: u32, q: vec4<u32>, x: MmX) -> f32 {
    if (wt == WTYPE_Q4) {
        var a = mm_q4word(q.x, x.v0, x.v4);
        var b = mm_q4word(q.y, x.v1, x.v5);
        a += mm_q4word(q.z, x.v2, x.v6);
        b += mm_q4word(q.w, x.v3, x.v7);
        let f = a + b;
        return 256.0 * ((f.x + f.z) - x.lo) + 16.0 * ((f.y + f.w) - x.hi);
    }
    if (wt == WTYPE_Q8) {
        let u = q ^ vec4<u32>(0x80808080u);
        var s = mm_q8(u.x) * x.v0;
        s = fma(mm_q8(u.y), x.v1, s);
        s = fma(mm_q8(u.z), x.v2, s);
        s = fma(mm_q8(u.w), x.v3, s);
        return 256.0 * dot(s, vec4<f32>(1.0));
    }
    if (wt == WTYPE_F16) {
        return dot(mm_half4(q.x, q.y), x.v0) + dot(mm_half4(q.z, q.w), x.v1);
    }
    return dot(bitcast<vec4<f32>>(q), x.v0);
}

// mm_xpc is the activation vec4s one 16-byte chunk of dtype wt multiplies.
fn mm_xpc(wt: u32) -> u32 {
    switch wt {
        case 0u: { return 1u; }
        case 1u: { return 2u; }
        case 2u: { return 4u; }
        default: { return 8u; }
    }
}

//#if GEMV
// mm_x loads the activations of one chunk from vec4 o of x, the kernel's
// array<vec4<f32>> of activations, for its weights of dtype WTYPE (a kernel
// that defines GEMV declares both, and nw, the RMSNorm weight of mm_norm).
fn mm_x(o: u32) -> MmX {
    var v: MmX;
    v.v0 = x[o];
    if (WTYPE != WTYPE_F32) {
        v.v1 = x[o + 1u];
    }
    if (WTYPE == WTYPE_Q8 || WTYPE == WTYPE_Q4) {
        v.v2 = x[o + 2u];
        v.v3 = x[o + 3u];
    }
    if (WTYPE == WTYPE_Q4) {
        v.v4 = x[o + 4u];
        v.v5 = x[o + 5u];
        v.v6 = x[o + 6u];
        v.v7 = x[o + 7u];
    }
    mm_xterms(WTYPE, &v);
    return v;
}

// mm_norm multiplies a chunk's activations by the RMSNorm weight from vec4
// o of nw (the kernel's array<vec4<f32>>) on, recomputes the widening term,
// and returns their Σx² (before the weight).
fn mm_norm(xc: ptr<function, MmX>, o: u32) -> f32 {
    var v = *xc;
    var s = dot(v.v0, v.v0);
    v.v0 *= nw[o];
    if (WTYPE != WTYPE_F32) {
        s += dot(v.v1, v.v1);
        v.v1 *= nw[o + 1u];
    }
    if (WTYPE == WTYPE_Q8 || WTYPE == WTYPE_Q4) {
        s += dot(v.v2, v.v2) + dot(v.v3, v.v3);
        v.v2 *= nw[o + 2u];
        v.v3 *= nw[o + 3u];
    }
    if (WTYPE == WTYPE_Q4) {
        s += dot(v.v4, v.v4) + dot(v.v5, v.v5) + dot(v.v6, v.v6) + dot(v.v7, v.v7);
        v.v4 *= nw[o + 4u];
        v.v5 *= nw[o + 5u];
        v.v6 *= nw[o + 6u];
        v.v7 *= nw[o + 7u];
    }
    mm_xterms(WTYPE, &v);
    *xc = v;
    return s;
}
//#endif

fn silu(x: f32) -> f32 {
    return x / (1.0 + exp(-x));
}

// gelu_tanh is GELU's tanh form (Hugging Face's gelu_pytorch_tanh),
// 0.5x(1 + tanh(u)) with u = sqrt(2/π)(x + 0.044715x³), written as
// x·sigmoid(2u): no cancellation near 0 and no overflow far from it (WGSL's
// tanh is sinh/cosh, which has both).
fn gelu_tanh(x: f32) -> f32 {
    let u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

//#if KQUANT
// K-quant weights, for the kernels that define KQUANT (matmul_kquant,
// embed_kquant, moe_kquant): ggml's super-blocks of 256 elements kept as
// they are, one row of K elements = K/256 blocks of kq_block_bytes(), rows
// back to back, in the kernel's array<u32> w; KTYPE is ggml's type id (10
// Q2_K, 11 Q3_K, 12 Q4_K, 13 Q5_K, 14 Q6_K). Q2_K's, Q3_K's and Q6_K's
// blocks are padded with zeros to 96, 112 and 224 bytes on upload
// (gpu.KQuantBlockBytes), so that every block starts on 16 bytes. The arithmetic is
// ggml's dequantize_row_* (see loader/dequant_k.go), in f32.
fn kq_block_bytes() -> u32 {
    switch KTYPE {
        case 10u: { return 96u; }
        case 11u: { return 112u; }
        case 12u: { return 144u; }
        case 13u: { return 176u; }
        default: { return 224u; }
    }
}

// kq_byte is byte o of w.
fn kq_byte(o: u32) -> u32 {
    return (w[o >> 2u] >> ((o & 3u) * 8u)) & 0xffu;
}

// kq_word is bytes o..o+3 of w (o even), byte o lowest.
fn kq_word(o: u32) -> u32 {
    let s = (o & 3u) * 8u;
    let lo = w[o >> 2u];
    if (s == 0u) {
        return lo;
    }
    return (lo >> s) | (w[(o >> 2u) + 1u] << (32u - s));
}

// kq_half is the f16 at byte o of w (o even).
fn kq_half(o: u32) -> f32 {
    return unpack2x16float(w[o >> 2u] >> ((o & 2u) * 8u)).x;
}

fn kq_bytes4(v: u32) -> vec4<u32> {
    return vec4<u32>(v & 255u, (v >> 8u) & 255u, (v >> 16u) & 255u, v >> 24u);
}

// kq_scale_min_k4 is the 6-bit scale and min of sub-block j (0..7) of the
// Q4_K/Q5_K scales field at byte s (ggml's get_scale_min_k4).
fn kq_scale_min_k4(s: u32, j: u32) -> vec2<f32> {
    if (j < 4u) {
        return vec2<f32>(f32(kq_byte(s + j) & 63u), f32(kq_byte(s + j + 4u) & 63u));
    }
    let b = kq_byte(s + j + 4u);
    return vec2<f32>(f32((b & 15u) | ((kq_byte(s + j - 4u) >> 6u) << 4u)),
                     f32((b >> 4u) | ((kq_byte(s + j) >> 6u) << 4u)));
}

// kq_scale_q3 is the signed 6-bit scale k (0..15) of the Q3_K scales field
// at byte s, minus 32.
fn kq_scale_q3(s: u32, k: u32) -> f32 {
    let b = kq_byte(s + k % 8u);
    let lo = select(b & 15u, b >> 4u, k >= 8u);
    let hi = (kq_byte(s + 8u + k % 4u) >> (2u * (k / 4u))) & 3u;
    return f32(i32(lo | (hi << 4u)) - 32);
}

// kq_get4 dequantises elements e..e+3 (e a multiple of 4, below 256) of the
// block at byte base.
fn kq_get4(base: u32, e: u32) -> vec4<f32> {
    switch KTYPE {
        case 10u: { // Q2_K: scales[16], qs[64], d, dmin
            let h = e / 128u;
            let j = (e % 128u) / 32u;
            let l = e % 32u;
            let q = (kq_bytes4(kq_word(base + 16u + 32u * h + l)) >> vec4<u32>(2u * j)) & vec4<u32>(3u);
            let sc = kq_byte(base + 8u * h + 2u * j + l / 16u);
            let dl = kq_half(base + 80u) * f32(sc & 15u);
            let ml = kq_half(base + 82u) * f32(sc >> 4u);
            return dl * vec4<f32>(q) - ml;
        }
        case 11u: { // Q3_K: hmask[32], qs[64], scales[12], d
            let h = e / 128u;
            let j = (e % 128u) / 32u;
            let l = e % 32u;
            let q = (kq_bytes4(kq_word(base + 32u + 32u * h + l)) >> vec4<u32>(2u * j)) & vec4<u32>(3u);
            let m = (kq_bytes4(kq_word(base + l)) >> vec4<u32>(4u * h + j)) & vec4<u32>(1u);
            let qv = vec4<f32>(vec4<i32>(q) - 4 * (vec4<i32>(1) - vec4<i32>(m)));
            let dl = kq_half(base + 108u) * kq_scale_q3(base + 96u, 8u * h + 2u * j + l / 16u);
            return dl * qv;
        }
        case 12u, 13u: { // Q4_K: d, dmin, scales[12], qs[128]; Q5_K: qh[32] before qs
            let i = e / 64u;
            let l = e % 32u;
            let hi = (e % 64u) >= 32u;
            let j = 2u * i + select(0u, 1u, hi);
            let qoff = select(16u, 48u, KTYPE == 13u);
            let b = kq_bytes4(kq_word(base + qoff + 32u * i + l));
            var q = select(b & vec4<u32>(15u), b >> vec4<u32>(4u), hi);
            if (KTYPE == 13u) {
                q |= ((kq_bytes4(kq_word(base + 16u + l)) >> vec4<u32>(j)) & vec4<u32>(1u)) << vec4<u32>(4u);
            }
            let sm = kq_scale_min_k4(base + 4u, j);
            return (kq_half(base) * sm.x) * vec4<f32>(q) - kq_half(base + 2u) * sm.y;
        }
        default: { // Q6_K: ql[128], qh[64], int8 scales[16], d
            let h = e / 128u;
            let k = (e % 128u) / 32u;
            let l = e % 32u;
            let ql = kq_bytes4(kq_word(base + 64u * h + l + (k & 1u) * 32u));
            let lo = select(ql & vec4<u32>(15u), ql >> vec4<u32>(4u), k >= 2u);
            let qh = (kq_bytes4(kq_word(base + 128u + 32u * h + l)) >> vec4<u32>(2u * k)) & vec4<u32>(3u);
            let q = vec4<i32>(lo | (qh << vec4<u32>(4u))) - 32;
            let sc = f32(i32(kq_byte(base + 192u + 8u * h + 2u * k + l / 16u) << 24u) >> 24u);
            return (kq_half(base + 208u) * sc) * vec4<f32>(q);
        }
    }
}

//#endif

//#if KQUANT_DOT
// The K-quant dot products, for the kernels that define KQUANT_DOT
// (matmul_kquant's gemv, moe_kquant): kq_rows dots up to four activation
// rows with a workgroup's 8 or 16 weight rows, token by token and row by
// row. It reads the blocks through the kernel's w4 (array<vec4<u32>>, its
// w again) and the activations through its x (array<vec4<f32>>); WG is its
// threads per workgroup. Every type's quants and scales are 16-byte loads
// (blocks padded to 16 bytes, gpu.KQuantBlockBytes), widened in the f32
// mantissa as matmul_gemv's are (MM_ONE): a few roundings more than the
// f32 dot product, within the tests' 1e-5 of the row maximum.

// KQ_ACC is kq_rows' sums: 16 rows of up to four activation rows.
const KQ_ACC: u32 = 64u;

// kq_rows' step: a thread dots 64 values of a block, its sub-step s
// (0..3), row by row (kq_row), so that no more than one row's chunks are
// live. A byte's two nibbles or 2-bit values are widened two a shift
// (mm_q4word, q2k_word), Q3_K's and Q5_K's high bits as sums of their own
// (q3k_high, q5k_high), Q6_K's 6-bit values one a shift (kq_wide), and
// summed with fma. The word-by-word calls are written out: one helper per
// pair with a constant switch ran Q2_K and Q3_K at 0.8-0.9x in two (noisy)
// A/B rounds on SwiftShader. Sub-step s of Q4_K and Q5_K is sub-blocks 2s and
// 2s+1; of the others, values 16g.. of each quarter j (32j..32j+31) of
// half h, s = 2h + g.

// KqX is a sub-step's activations: four runs of 16 (v0..v3, v4..v7, ...),
// for Q4_K/Q5_K the two sub-blocks' 32 each, for the others quarter j's 16
// values g; t holds each run's sum.
struct KqX {
    v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>,
    v4: vec4<f32>, v5: vec4<f32>, v6: vec4<f32>, v7: vec4<f32>,
    v8: vec4<f32>, v9: vec4<f32>, v10: vec4<f32>, v11: vec4<f32>,
    v12: vec4<f32>, v13: vec4<f32>, v14: vec4<f32>, v15: vec4<f32>,
    t: vec4<f32>,
}

// kq_x loads sub-step s's activations of the block whose first activation
// vec4 is o.
fn kq_x(o: u32, s: u32) -> KqX {
    var q = o + 16u * s; // Q4_K, Q5_K: 64 consecutive values
    var r = 4u;          // vec4s from one run to the next
    if (KTYPE != 12u && KTYPE != 13u) {
        q = o + 32u * (s / 2u) + 4u * (s % 2u);
        r = 8u;
    }
    var v: KqX;
    v.v0 = x[q]; v.v1 = x[q + 1u]; v.v2 = x[q + 2u]; v.v3 = x[q + 3u];
    v.v4 = x[q + r]; v.v5 = x[q + r + 1u]; v.v6 = x[q + r + 2u]; v.v7 = x[q + r + 3u];
    v.v8 = x[q + 2u * r]; v.v9 = x[q + 2u * r + 1u]; v.v10 = x[q + 2u * r + 2u]; v.v11 = x[q + 2u * r + 3u];
    v.v12 = x[q + 3u * r]; v.v13 = x[q + 3u * r + 1u]; v.v14 = x[q + 3u * r + 2u]; v.v15 = x[q + 3u * r + 3u];
    let one = vec4<f32>(1.0);
    v.t = vec4<f32>(dot((v.v0 + v.v1) + (v.v2 + v.v3), one), dot((v.v4 + v.v5) + (v.v6 + v.v7), one),
                    dot((v.v8 + v.v9) + (v.v10 + v.v11), one), dot((v.v12 + v.v13) + (v.v14 + v.v15), one));
    return v;
}

// kq_wide gives 1 + u/2^b for the b-bit values u (b at most 6) of q's
// four bytes, as mm_q8 does for bytes.
fn kq_wide(q: u32, b: u32) -> vec4<f32> {
    let m = ((1u << b) - 1u) << (23u - b);
    return bitcast<vec4<f32>>((vec4<u32>(q << (23u - b), q << (15u - b), q << (7u - b), q >> (b + 1u)) & vec4<u32>(m)) | vec4<u32>(MM_ONE));
}

// kq_fma4 is Σ(1 + u/2^b)·x over four words of b-bit values u and the
// activations x0..x3 (16 values).
fn kq_fma4(u: vec4<u32>, b: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) -> f32 {
    var a = kq_wide(u.x, b) * x0;
    a = fma(kq_wide(u.y, b), x1, a);
    a = fma(kq_wide(u.z, b), x2, a);
    a = fma(kq_wide(u.w, b), x3, a);
    return dot(a, vec4<f32>(1.0));
}

// kq_row is one row's dot product over sub-step s of the block whose first
// chunk is hb, with the activations xs.
fn kq_row(hb: u32, s: u32, xs: ptr<function, KqX>) -> f32 {
    switch KTYPE {
        case 10u, 11u: { return q23k_row(hb, s, xs); }
        case 12u, 13u: { return q45k_row(hb, s, xs); }
        default: { return q6k_row(hb, s, xs); }
    }
}

// kq_rows adds the dot products of rows ra, rb (and with nq = 4 rc, rd:
// quads of row indices, each row K values) with nt activation rows of x,
// the first at vec4 xo and the rest xr vec4s apart (row t clamped to tl),
// to acc[16t + r] (r counting the quads' rows in turn): this thread's
// share, sub-steps lid, lid+WG, ...
fn kq_rows(acc: ptr<function, array<f32, KQ_ACC>>, ra: vec4<u32>, rb: vec4<u32>, rc: vec4<u32>, rd: vec4<u32>, nq: u32,
           nt: u32, tl: u32, k: u32, xo: u32, xr: u32, lid: u32) {
    let kb = k / 256u;
    let bc = kq_block_bytes() / 16u;
    for (var t = 0u; t < nt; t++) {
        let xt = xo + min(t, tl) * xr;
        var a = array<f32, 16>();
        for (var c = lid; c < k / 64u; c += WG) {
            let blk = c / 4u;
            var xs = kq_x(xt + 64u * blk, c % 4u);
            for (var r = 0u; r < 4u * nq; r++) {
                let q = select(select(ra, rb, r >= 4u), select(rc, rd, r >= 12u), r >= 8u);
                a[r] += kq_row((q[r % 4u] * kb + blk) * bc, c % 4u, &xs);
            }
        }
        for (var r = 0u; r < 16u; r++) {
            (*acc)[16u * t + r] = a[r];
        }
    }
}

// kq_quad is acc[i..i+3].
fn kq_quad(acc: ptr<function, array<f32, KQ_ACC>>, i: u32) -> vec4<f32> {
    return vec4<f32>((*acc)[i], (*acc)[i + 1u], (*acc)[i + 2u], (*acc)[i + 3u]);
}

// Q4_K: d, dmin (f16), scales[12], qs[128]: nine 16-byte chunks. Chunk
// 1 + 2i + c holds bytes 16c.. of the quants of sub-blocks 2i (low
// nibbles) and 2i+1 (high nibbles). Q5_K has qh[32] (chunks 1 and 2) before
// qs: bits 2i and 2i+1 of its byte l are the fifth bits of value l of
// sub-blocks 2i and 2i+1.

// q45k_row is kq_row for Q4_K and Q5_K (fifth bits from qh: bits 2s and
// 2s+1 of its byte l for value l of sub-blocks 2s and 2s+1):
// Σq·x = 2^b(Σ(1+q/2^b)·x - Σx).
fn q45k_row(hb: u32, s: u32, xs: ptr<function, KqX>) -> f32 {
    let h = w4[hb];
    let qo = hb + select(1u, 3u, KTYPE == 13u) + 2u * s;
    let v0 = w4[qo];
    let v1 = w4[qo + 1u];
    // the nibbles word by word, both sub-blocks at once (mm_q4word): sums
    // (low, high, low, high)
    var fa = mm_q4word(v0.x, (*xs).v0, (*xs).v8);
    var fb = mm_q4word(v0.y, (*xs).v1, (*xs).v9);
    fa += mm_q4word(v0.z, (*xs).v2, (*xs).v10);
    fb += mm_q4word(v0.w, (*xs).v3, (*xs).v11);
    fa += mm_q4word(v1.x, (*xs).v4, (*xs).v12);
    fb += mm_q4word(v1.y, (*xs).v5, (*xs).v13);
    fa += mm_q4word(v1.z, (*xs).v6, (*xs).v14);
    fb += mm_q4word(v1.w, (*xs).v7, (*xs).v15);
    let f = fa + fb;
    let t0 = (*xs).t.x + (*xs).t.y;
    let t1 = (*xs).t.z + (*xs).t.w;
    var q0 = 256.0 * ((f.x + f.z) - t0); // Σq·x, sub-block 2s
    var q1 = 16.0 * ((f.y + f.w) - t1);  // 2s+1
    if (KTYPE == 13u) {
        // Q5_K's fifth bits (16 each) as their own sums (q5k_high)
        let g0 = w4[hb + 1u] >> vec4<u32>(2u * s);
        let g1 = w4[hb + 2u] >> vec4<u32>(2u * s);
        var ha = q5k_high(g0.x, (*xs).v0, (*xs).v8);
        var hc = q5k_high(g0.y, (*xs).v1, (*xs).v9);
        ha += q5k_high(g0.z, (*xs).v2, (*xs).v10);
        hc += q5k_high(g0.w, (*xs).v3, (*xs).v11);
        ha += q5k_high(g1.x, (*xs).v4, (*xs).v12);
        hc += q5k_high(g1.y, (*xs).v5, (*xs).v13);
        ha += q5k_high(g1.z, (*xs).v6, (*xs).v14);
        hc += q5k_high(g1.w, (*xs).v7, (*xs).v15);
        let e = ha + hc;
        q0 += 64.0 * ((e.x + e.z) - t0);
        q1 += 32.0 * ((e.y + e.w) - t1);
    }
    let sc = q4k_scales(h, s);
    let dm = unpack2x16float(h.x);
    return dm.x * (sc.x * q0 + sc.y * q1) - dm.y * (sc.z * t0 + sc.w * t1);
}

// q5k_high is mm_q4word for Q5_K's fifth bits: qh word w shifted by 2s, its
// byte k's bits 0 and 1 those of value 4i+k of sub-blocks 2s and 2s+1,
// placed at mantissa bits 21 and 22 (b = 2 and 1).
fn q5k_high(w: u32, xl: vec4<f32>, xh: vec4<f32>) -> vec4<f32> {
    let m = vec4<u32>(MM_ONE | (1u << 21u), MM_ONE | (1u << 22u), MM_ONE | (1u << 21u), MM_ONE | (1u << 22u));
    let b0 = (w << 21u) | MM_ONE;
    let b1 = (w << 13u) | MM_ONE;
    let b2 = (w << 5u) | MM_ONE;
    let b3 = (w >> 3u) | MM_ONE;
    let a = bitcast<vec4<f32>>(vec4<u32>(b0, b0, b1, b1) & m) * vec4<f32>(xl.x, xh.x, xl.y, xh.y);
    return fma(bitcast<vec4<f32>>(vec4<u32>(b2, b2, b3, b3) & m), vec4<f32>(xl.z, xh.z, xl.w, xh.w), a);
}

// q4k_scales is the 6-bit scales and mins of sub-blocks 2i and 2i+1 of
// the Q4_K block whose first 16 bytes are h (d and dmin, scales[12]), as
// (scale 2i, scale 2i+1, min 2i, min 2i+1): ggml's get_scale_min_k4 for
// all four bytes of a word at once, then the pair i picks.
fn q4k_scales(h: vec4<u32>, i: u32) -> vec4<f32> {
    let sc_lo = h.y & 0x3f3f3f3fu; // sub-blocks 0..3
    let mn_lo = h.z & 0x3f3f3f3fu;
    let sc_hi = (h.w & 0x0f0f0f0fu) | ((h.y >> 2u) & 0x30303030u); // 4..7
    let mn_hi = ((h.w >> 4u) & 0x0f0f0f0fu) | ((h.z >> 2u) & 0x30303030u);
    let sh = 16u * (i & 1u);
    let sc = select(sc_lo, sc_hi, i >= 2u) >> sh;
    let mn = select(mn_lo, mn_hi, i >= 2u) >> sh;
    return vec4<f32>(f32(sc & 255u), f32((sc >> 8u) & 255u), f32(mn & 255u), f32((mn >> 8u) & 255u));
}

// Q6_K, padded to 224 bytes (14 16-byte chunks): ql[128] (chunks 0..7),
// qh[64] (8..11), int8 scales[16] (12), d (chunk 13's first half). Half h
// of the block is ql chunks 4h.. (quarters 0 and 2: low and high nibbles)
// and 4h+2.. (quarters 1 and 3), qh chunks 8+2h.. (quarter k's two bits at
// bit 2k), scales 8h..8h+7 (quarter k, values 16g..: scale 8h + 2k + g).

// q6k_row is kq_row for Q6_K: quarter j's values u = q + 32 are ql's
// nibbles (chunk 4h+g: quarters 0, 2; 4h+g+2: 1, 3) with bits 2j of qh
// (chunk 8+2h+g) above; Σ(u-32)·x = 64(Σ(1+u/64)·x - Σx) - 32Σx.
fn q6k_row(hb: u32, s: u32, xs: ptr<function, KqX>) -> f32 {
    let h = s / 2u;
    let g = s % 2u;
    let la = w4[hb + 4u * h + g];
    let lb = w4[hb + 4u * h + g + 2u];
    let qh = w4[hb + 8u + 2u * h + g];
    let sc = w4[hb + 12u];
    let d = unpack2x16float(w4[hb + 13u].x).x;
    let lo = vec4<u32>(0x0f0f0f0fu);
    let hi = vec4<u32>(0x30303030u);
    let f0 = kq_fma4((la & lo) | ((qh << vec4<u32>(4u)) & hi), 6u, (*xs).v0, (*xs).v1, (*xs).v2, (*xs).v3);
    let f1 = kq_fma4((lb & lo) | ((qh << vec4<u32>(2u)) & hi), 6u, (*xs).v4, (*xs).v5, (*xs).v6, (*xs).v7);
    let f2 = kq_fma4(((la >> vec4<u32>(4u)) & lo) | (qh & hi), 6u, (*xs).v8, (*xs).v9, (*xs).v10, (*xs).v11);
    let f3 = kq_fma4(((lb >> vec4<u32>(4u)) & lo) | ((qh >> vec4<u32>(2u)) & hi), 6u, (*xs).v12, (*xs).v13, (*xs).v14, (*xs).v15);
    // scale of quarter j: int8 8h + 2j + g, word 2h + j/2, byte 2(j%2) + g
    let w0 = select(sc.x, sc.z, h == 1u);
    let w1 = select(sc.y, sc.w, h == 1u);
    let sv = vec4<f32>(vec4<i32>(vec4<u32>(w0 << (24u - 8u * g), w0 << (8u - 8u * g), w1 << (24u - 8u * g), w1 << (8u - 8u * g))) >> vec4<u32>(24u));
    let t = (*xs).t;
    return d * dot(sv, 64.0 * vec4<f32>(f0, f1, f2, f3) - 96.0 * t);
}

// Q2_K, padded to 96 bytes: scales[16] (chunk 0), qs[64] (1..4), d and dmin
// (chunk 5's first word). Q3_K, padded to 112: hmask[32] (0..1), qs[64]
// (2..5), scales[12] and d (chunk 6). Half n of a block is qs chunks
// 2n, 2n+1 (after the first); value 32j + l of it (j 0..3, l 0..31) is bits
// 2j of qs byte l, Q3_K's bit 4n + j of hmask byte l its third bit, and its
// scale is 8n + 2j + l/16.

// q23k_row is kq_row for Q2_K and Q3_K: quarter j's values are bits 2j of
// the qs bytes (chunk 1+2h+g, Q3_K's 2+2h+g), Q3_K's with bit 4h + j of
// the hmask bytes (chunk g) as a third; Σu·x = 2^b(Σ(1+u/2^b)·x - Σx).
// Q2_K: d·Σ sc·Σu·x - dmin·Σ m·Σx (sc, m a scale byte's nibbles); Q3_K:
// d·Σ sc·Σ(u-4)·x (sc signed 6 bits).
fn q23k_row(hb: u32, s: u32, xs: ptr<function, KqX>) -> f32 {
    let h = s / 2u;
    let g = s % 2u;
    let q3 = KTYPE == 11u;
    let v = w4[hb + select(1u, 2u, q3) + 2u * h + g];
    let t = (*xs).t;
    // Σu·x of each quarter, word by word, the four quarters at once
    // (q2k_word); Q3_K's third bits as a second sum (q3k_high), Σ4h·x
    var fa = q2k_word(v.x, (*xs).v0, (*xs).v4, (*xs).v8, (*xs).v12);
    var fb = q2k_word(v.y, (*xs).v1, (*xs).v5, (*xs).v9, (*xs).v13);
    fa += q2k_word(v.z, (*xs).v2, (*xs).v6, (*xs).v10, (*xs).v14);
    fb += q2k_word(v.w, (*xs).v3, (*xs).v7, (*xs).v11, (*xs).v15);
    var qx = vec4<f32>(16.0, 4.0, 16.0, 4.0) * ((fa + fb) - t);
    if (q3) {
        let hh = w4[hb + g] >> vec4<u32>(4u * h);
        var ha = q3k_high(hh.x, (*xs).v0, (*xs).v4, (*xs).v8, (*xs).v12);
        var hc = q3k_high(hh.y, (*xs).v1, (*xs).v5, (*xs).v9, (*xs).v13);
        ha += q3k_high(hh.z, (*xs).v2, (*xs).v6, (*xs).v10, (*xs).v14);
        hc += q3k_high(hh.w, (*xs).v3, (*xs).v7, (*xs).v11, (*xs).v15);
        qx += vec4<f32>(64.0, 32.0, 16.0, 8.0) * ((ha + hc) - t);
    }
    // scale j is byte 8h + 2j + g: bytes g and g+2 of words 2h (j = 0, 1)
    // and 2h + 1 (j = 2, 3) for Q2_K; Q3_K's 6-bit ones have their low
    // nibbles in bytes g + 2j (bits 4h..), their high bits in bytes
    // 8 + g + 2(j%2) (bits 2(2h + j/2)..)
    let sh = vec4<u32>(8u * g) + vec4<u32>(0u, 16u, 0u, 16u);
    if (q3) {
        let k = w4[hb + 6u];
        let lo = (vec4<u32>(k.x, k.x, k.y, k.y) >> (sh + vec4<u32>(4u * h))) & vec4<u32>(15u);
        let hi = (vec4<u32>(k.z) >> (sh + vec4<u32>(4u * h) + vec4<u32>(0u, 0u, 2u, 2u))) & vec4<u32>(3u);
        let sc = vec4<f32>(vec4<i32>(lo | (hi << vec4<u32>(4u))) - 32);
        return unpack2x16float(k.w).x * dot(sc, qx - 4.0 * t);
    }
    let k = w4[hb];
    let k0 = select(k.x, k.z, h == 1u);
    let k1 = select(k.y, k.w, h == 1u);
    let by = (vec4<u32>(k0, k0, k1, k1) >> sh) & vec4<u32>(255u);
    let dm = unpack2x16float(w4[hb + 5u].x);
    return dm.x * dot(vec4<f32>(by & vec4<u32>(15u)), qx) - dm.y * dot(vec4<f32>(by >> vec4<u32>(4u)), t);
}

// q2k_word is Σ(1 + u/2^b)·x over one Q2_K qs word w for each quarter j
// (component j): byte k is value 4i+k of every quarter (bits 2j), x_j that
// quarter's activations 4i... One shift places a byte's quarters 0 and 1
// (or 2 and 3) at mantissa bits 19 and 21, b = 4 and 2, so that a shift
// and an or serve two values (kq_wide: one value each); the rounding is
// then at most 2 bits more than kq_wide's for quarters 0 and 2.
fn q2k_word(w: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) -> vec4<f32> {
    let m = vec4<u32>(MM_ONE | (3u << 19u), MM_ONE | (3u << 21u), MM_ONE | (3u << 19u), MM_ONE | (3u << 21u));
    let l0 = (w << 19u) | MM_ONE; // byte 0's quarters 0, 1
    let h0 = (w << 15u) | MM_ONE; // and 2, 3
    let l1 = (w << 11u) | MM_ONE;
    let h1 = (w << 7u) | MM_ONE;
    let l2 = (w << 3u) | MM_ONE;
    let h2 = (w >> 1u) | MM_ONE;
    let l3 = (w >> 5u) | MM_ONE;
    let h3 = (w >> 9u) | MM_ONE;
    var a = bitcast<vec4<f32>>(vec4<u32>(l0, l0, h0, h0) & m) * vec4<f32>(x0.x, x1.x, x2.x, x3.x);
    a = fma(bitcast<vec4<f32>>(vec4<u32>(l1, l1, h1, h1) & m), vec4<f32>(x0.y, x1.y, x2.y, x3.y), a);
    a = fma(bitcast<vec4<f32>>(vec4<u32>(l2, l2, h2, h2) & m), vec4<f32>(x0.z, x1.z, x2.z, x3.z), a);
    return fma(bitcast<vec4<f32>>(vec4<u32>(l3, l3, h3, h3) & m), vec4<f32>(x0.w, x1.w, x2.w, x3.w), a);
}

// q3k_high is Σ(1 + h/2^b)·x over one Q3_K hmask word w (shifted to the
// block half's bits) for each quarter j: bit 8k + j is the third bit of
// value 4i+k of quarter j. One shift places a byte's four at mantissa
// bits 19..22, b = 4, 3, 2, 1.
fn q3k_high(w: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) -> vec4<f32> {
    let m = vec4<u32>(MM_ONE | (1u << 19u), MM_ONE | (1u << 20u), MM_ONE | (1u << 21u), MM_ONE | (1u << 22u));
    var a = bitcast<vec4<f32>>(vec4<u32>((w << 19u) | MM_ONE) & m) * vec4<f32>(x0.x, x1.x, x2.x, x3.x);
    a = fma(bitcast<vec4<f32>>(vec4<u32>((w << 11u) | MM_ONE) & m), vec4<f32>(x0.y, x1.y, x2.y, x3.y), a);
    a = fma(bitcast<vec4<f32>>(vec4<u32>((w << 3u) | MM_ONE) & m), vec4<f32>(x0.z, x1.z, x2.z, x3.z), a);
    return fma(bitcast<vec4<f32>>(vec4<u32>((w >> 5u) | MM_ONE) & m), vec4<f32>(x0.w, x1.w, x2.w, x3.w), a);
}
//#endif

//#if GEMM_TILE
// The prefill GEMM tile (matmul_gemm, matmul_kquant): a workgroup of GT
// threads computes a BM×BN tile of out (BM tokens by BN weight rows), each
// thread 8 tokens by 8 rows (tokens 4ty..4ty+3 and BM/2+4ty.., rows 4tx..
// and BN/2+4tx.. of the tile), so that every k of the inner loop reads 4
// vec4 from workgroup memory for 16 vec4 FMAs. Per step of BK along K the
// threads stage x (BM×BK) and the dequantised w (BN×BK) in workgroup memory
// (16 KiB, WebGPU's default limit), transposed ([k][row / 4]); thread i
// loads token i's and weight row i's BK values, four at a time, through
// the kernel's tile_x(t, k) and tile_w(n, k) (elements k..k+3, zero past
// K), with tokens past T and rows past the part clamped. The kernel's
// tile_put(t, n, v) stores out[t, n..n+3] where inside T and the part.
// The accumulators are named vectors: SwiftShader pays dearly for
// indexing a local array.
//
// With F16MATH (gpu.MathF16) the tiles are staged as f16 (half the workgroup memory,
// so BK = 64 per barrier pair) and multiplied in f16: each run of four k
// sums its products in f16 registers, which are then added to the f32
// accumulators (about 1e-3 relative error, as the f16 KV cache's).
const BM: u32 = 64u;
const BN: u32 = 64u;
const GT: u32 = 64u; // threads: one per tile row when staging
//#if F16MATH
const BK: u32 = 64u;
alias tile_t = f16;
//#else
const BK: u32 = 32u;
alias tile_t = f32;
//#endif

var<workgroup> xs: array<vec4<tile_t>, BK * BM / 4u>; // [k][token / 4]
var<workgroup> ws: array<vec4<tile_t>, BK * BN / 4u>; // [k][row / 4]

fn gemm_tile(rbase: u32, tbase: u32, lid: u32, T: u32, rows: u32, K: u32) {
    let lt = min(tbase + lid, T - 1u);
    let ln = min(rbase + lid, rows - 1u);
    let tx = lid % 8u;
    let ty = lid / 8u;
    var c0 = vec4<f32>(0.0); var c1 = vec4<f32>(0.0); var c2 = vec4<f32>(0.0); var c3 = vec4<f32>(0.0);
    var c4 = vec4<f32>(0.0); var c5 = vec4<f32>(0.0); var c6 = vec4<f32>(0.0); var c7 = vec4<f32>(0.0);
    var c8 = vec4<f32>(0.0); var c9 = vec4<f32>(0.0); var c10 = vec4<f32>(0.0); var c11 = vec4<f32>(0.0);
    var c12 = vec4<f32>(0.0); var c13 = vec4<f32>(0.0); var c14 = vec4<f32>(0.0); var c15 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < K; k0 += BK) {
        for (var j = 0u; j < BK; j += 4u) {
            // Zero past K (a step of 64 may run past a K of 32m).
            var xv = vec4<tile_t>(0.0);
            var wv = vec4<tile_t>(0.0);
            if (k0 + j < K) {
                xv = vec4<tile_t>(tile_x(lt, k0 + j));
                wv = vec4<tile_t>(tile_w(ln, k0 + j));
            }
            let o = j * (BM / 4u) + lid / 4u;
            let e = lid % 4u;
            xs[o][e] = xv.x;
            xs[o + BM / 4u][e] = xv.y;
            xs[o + BM / 2u][e] = xv.z;
            xs[o + 3u * BM / 4u][e] = xv.w;
            ws[o][e] = wv.x;
            ws[o + BN / 4u][e] = wv.y;
            ws[o + BN / 2u][e] = wv.z;
            ws[o + 3u * BN / 4u][e] = wv.w;
        }
        workgroupBarrier();
//#if F16MATH
        for (var k4 = 0u; k4 < BK; k4 += 4u) {
            var h0 = vec4<f16>(0.0); var h1 = vec4<f16>(0.0); var h2 = vec4<f16>(0.0); var h3 = vec4<f16>(0.0);
            var h4 = vec4<f16>(0.0); var h5 = vec4<f16>(0.0); var h6 = vec4<f16>(0.0); var h7 = vec4<f16>(0.0);
            var h8 = vec4<f16>(0.0); var h9 = vec4<f16>(0.0); var h10 = vec4<f16>(0.0); var h11 = vec4<f16>(0.0);
            var h12 = vec4<f16>(0.0); var h13 = vec4<f16>(0.0); var h14 = vec4<f16>(0.0); var h15 = vec4<f16>(0.0);
            for (var kk = k4; kk < k4 + 4u; kk++) {
                let a0 = xs[kk * (BM / 4u) + ty];
                let a1 = xs[kk * (BM / 4u) + BM / 8u + ty];
                let b0 = ws[kk * (BN / 4u) + tx];
                let b1 = ws[kk * (BN / 4u) + BN / 8u + tx];
                h0 += a0.x * b0; h1 += a0.y * b0; h2 += a0.z * b0; h3 += a0.w * b0;
                h4 += a0.x * b1; h5 += a0.y * b1; h6 += a0.z * b1; h7 += a0.w * b1;
                h8 += a1.x * b0; h9 += a1.y * b0; h10 += a1.z * b0; h11 += a1.w * b0;
                h12 += a1.x * b1; h13 += a1.y * b1; h14 += a1.z * b1; h15 += a1.w * b1;
            }
            c0 += vec4<f32>(h0); c1 += vec4<f32>(h1); c2 += vec4<f32>(h2); c3 += vec4<f32>(h3);
            c4 += vec4<f32>(h4); c5 += vec4<f32>(h5); c6 += vec4<f32>(h6); c7 += vec4<f32>(h7);
            c8 += vec4<f32>(h8); c9 += vec4<f32>(h9); c10 += vec4<f32>(h10); c11 += vec4<f32>(h11);
            c12 += vec4<f32>(h12); c13 += vec4<f32>(h13); c14 += vec4<f32>(h14); c15 += vec4<f32>(h15);
        }
//#else
        for (var kk = 0u; kk < BK; kk++) {
            let a0 = xs[kk * (BM / 4u) + ty];
            let a1 = xs[kk * (BM / 4u) + BM / 8u + ty];
            let b0 = ws[kk * (BN / 4u) + tx];
            let b1 = ws[kk * (BN / 4u) + BN / 8u + tx];
            c0 += a0.x * b0; c1 += a0.y * b0; c2 += a0.z * b0; c3 += a0.w * b0;
            c4 += a0.x * b1; c5 += a0.y * b1; c6 += a0.z * b1; c7 += a0.w * b1;
            c8 += a1.x * b0; c9 += a1.y * b0; c10 += a1.z * b0; c11 += a1.w * b0;
            c12 += a1.x * b1; c13 += a1.y * b1; c14 += a1.z * b1; c15 += a1.w * b1;
        }
//#endif
        workgroupBarrier();
    }
    let t0 = tbase + 4u * ty;
    let t1 = t0 + BM / 2u;
    let n0 = rbase + 4u * tx;
    let n1 = n0 + BN / 2u;
    tile_put(t0, n0, c0); tile_put(t0 + 1u, n0, c1); tile_put(t0 + 2u, n0, c2); tile_put(t0 + 3u, n0, c3);
    tile_put(t0, n1, c4); tile_put(t0 + 1u, n1, c5); tile_put(t0 + 2u, n1, c6); tile_put(t0 + 3u, n1, c7);
    tile_put(t1, n0, c8); tile_put(t1 + 1u, n0, c9); tile_put(t1 + 2u, n0, c10); tile_put(t1 + 3u, n0, c11);
    tile_put(t1, n1, c12); tile_put(t1 + 1u, n1, c13); tile_put(t1 + 2u, n1, c14); tile_put(t1 + 3u, n1, c15);
}
//#endif
