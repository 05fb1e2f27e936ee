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
// are placed at the top of an f32 mantissa under exponent 0, giving 1 + q/16
// for a nibble and 1 + u/256 for a byte u = q + 128. A dot product over them
// is Σx + Σqx/16 (or /256), from which the chunk's Σ(q-8)x (or Σqx) follows
// with the chunk's Σx, losing about two bits to cancellation (the tests hold
// 1e-5 of the row maximum).
const MM_ONE: u32 = 0x3F800000u;

// mm_q4lo and mm_q4hi give 1 + q/16 for the low and high nibbles of w's
// four bytes.
fn mm_q4lo(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(w << 19u, w << 11u, w << 3u, w >> 5u) & vec4<u32>(0x00780000u)) | vec4<u32>(MM_ONE));
}
fn mm_q4hi(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(w << 15u, w << 7u, w >> 1u, w >> 9u) & vec4<u32>(0x00780000u)) | vec4<u32>(MM_ONE));
}
// mm_q8 gives 1 + u/256 for w's four bytes, where u = q + 128 (w's sign
// bits already flipped by the caller).
fn mm_q8(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(w << 15u, w << 7u, w >> 1u, w >> 9u) & vec4<u32>(0x007F8000u)) | vec4<u32>(MM_ONE));
}
fn mm_half4(a: u32, b: u32) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(a), unpack2x16float(b));
}

// MmX is the activations one 16-byte weight chunk of dtype wt multiplies:
// v0 for f32, v0..v1 for f16, v0..v3 for q8, v0..v7 for q4 (the rest
// unused), and off, the widening's term (see mm_xoff).
struct MmX {
    v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>,
    v4: vec4<f32>, v5: vec4<f32>, v6: vec4<f32>, v7: vec4<f32>,
    off: f32,
}

// mm_xoff returns x's widening term: 24Σx for q4, 384Σx for q8, 0 for floats.
fn mm_xoff(wt: u32, x: MmX) -> f32 {
    if (wt == WTYPE_Q4) {
        return 24.0 * dot((x.v0 + x.v1) + (x.v2 + x.v3) + (x.v4 + x.v5) + (x.v6 + x.v7), vec4<f32>(1.0));
    }
    if (wt == WTYPE_Q8) {
        return 384.0 * dot((x.v0 + x.v1) + (x.v2 + x.v3), vec4<f32>(1.0));
    }
    return 0.0;
}

// mm_dot is the dot product of weight chunk q (dtype wt) with x, before the
// scale: for q4 16Σ(1+q/16)x, so that Σ(q-8)x = mm_dot - x.off; for q8
// 256Σ(1+u/256)x, so that Σqx = mm_dot - x.off; for floats the dot itself.
// A q4 chunk is one group: word j holds elements 4j..4j+3 (low nibbles) and
// 16+4j..16+4j+3 (high); a q8 chunk is half a group.
fn mm_dot(wt: u32, q: vec4<u32>, x: MmX) -> f32 {
    if (wt == WTYPE_Q4) {
        return 16.0 * (dot(mm_q4lo(q.x), x.v0) + dot(mm_q4hi(q.x), x.v4)
                     + dot(mm_q4lo(q.y), x.v1) + dot(mm_q4hi(q.y), x.v5)
                     + dot(mm_q4lo(q.z), x.v2) + dot(mm_q4hi(q.z), x.v6)
                     + dot(mm_q4lo(q.w), x.v3) + dot(mm_q4hi(q.w), x.v7));
    }
    if (wt == WTYPE_Q8) {
        let u = q ^ vec4<u32>(0x80808080u);
        return 256.0 * (dot(mm_q8(u.x), x.v0) + dot(mm_q8(u.y), x.v1) + dot(mm_q8(u.z), x.v2) + dot(mm_q8(u.w), x.v3));
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
// that defines GEMV declares both).
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
    v.off = mm_xoff(WTYPE, v);
    return v;
}
//#endif

fn silu(x: f32) -> f32 {
    return x / (1.0 + exp(-x));
}
