// common.wgsl: helpers appended to every kernel (after its own source).
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

// half_at returns half i of an array of packed f16 pairs, given its word.
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

fn silu(x: f32) -> f32 {
    return x / (1.0 + exp(-x));
}
