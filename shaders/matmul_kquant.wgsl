// matmul_kquant: out (T, N) = x (T, K) · wᵀ for one row-part of a K-quant
// weight (Q2_K .. Q6_K as ggml's blocks, KTYPE; see common.wgsl's KQUANT
// section), K a multiple of 256.
//
// Entry gemv, the decode path (small T): a workgroup owns R = 8 weight rows
// and TB tokens; its WG threads stride along K kq_step() elements at a time
// (kq_dot per token: the eight rows' dot products, each activation loaded
// once for them), and the partial sums are reduced in shared memory. As
// matmul_gemv, a CPU adapter gets one subgroup per workgroup (gemvWG), whose
// threads take whole blocks. Every type's quants and scales are 16-byte
// loads (blocks padded to 16 bytes, gpu.KQuantBlockBytes), widened with
// unpack4x8unorm (q/255 for bytes q, the 255 applied to the sums: one
// rounding more than the f32 dot product, within the tests' 1e-5 of the
// row maximum).
// Grid (groups2D(ceil(rows/R)), ceil(T/TB)).
// Entry gemm, the prefill path: common.wgsl's GEMM tile, one BM×BN tile of
// out per workgroup. Grid (ceil(rows/BN), ceil(T/BM)).
// Rows past the part and tokens past T are clamped on load and skipped on
// store. With acc = 1 both add to out instead of storing.

//#define KQUANT
//#define GEMM_TILE
override KTYPE: u32 = 12u;
override WG: u32 = 64u; // gemv threads per workgroup, a power of two, at most MAXWG
override TB: u32 = 4u;  // gemv tokens per workgroup, at most MAXTB

const MAXWG: u32 = 64u;
const MAXTB: u32 = 4u;
const R: u32 = 8u; // gemv rows per workgroup: two quads (a, b)

struct Params {
    n: u32,    // N: columns of out, over all parts
    k: u32,    // K, a multiple of 256
    row0: u32, // first weight row of this part: its first column of out
    rows: u32, // weight rows in this part
    t: u32,    // T
    acc: u32,  // 1: add to out (a residual, FusedMatMul's Add), 0: store
}

@group(0) @binding(0) var<storage, read> w: array<u32>;          // (rows, K/256) KTYPE blocks (kq_block_bytes each)
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;    // (T, K) f32
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (T, N) f32
@group(0) @binding(3) var<storage, read> w4: array<vec4<u32>>;   // w again, as 16-byte chunks (gemv)
@group(0) @binding(4) var<uniform> p: Params;

var<workgroup> red: array<f32, MAXWG * MAXTB * R>; // gemv: (R, TB, WG) partial sums

// kq_step is the elements a GEMV thread dots at a time: a whole block on a
// CPU adapter (WG <= 8); on a GPU Q4_K's and Q5_K's 64 (one 32-byte run of
// quants: two sub-blocks, low and high nibbles), the other types' 128 (half
// a block).
fn kq_step() -> u32 {
    if (WG <= 8u) {
        return 256u;
    }
    return select(128u, 64u, KTYPE == 12u || KTYPE == 13u);
}

// kq_dot adds the dot products of one step (kq_step() elements from e of
// the blocks at bytes ba, rows row0..row0+3, and bq, rows row0+4..) with
// the activations at vec4 xo of x to pa and pb.
fn kq_dot(pa: ptr<function, vec4<f32>>, pb: ptr<function, vec4<f32>>, ba: vec4<u32>, bq: vec4<u32>, e: u32, xo: u32) {
    switch KTYPE {
        case 10u, 11u: { q23k_dot8(pa, pb, ba / 16u, bq / 16u, e, xo); }
        case 12u, 13u: { q45k_dot8(pa, pb, ba / 16u, bq / 16u, e, xo); }
        default: { q6k_dot8(pa, pb, ba / 16u, bq / 16u, e, xo); }
    }
}

// kq_u8 widens the four bytes of each word of v (one word per row) to
// q/255 and dots them with x4: Σ q·x / 255 for each row.
fn kq_u8(v: vec4<u32>, x4: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(dot(unpack4x8unorm(v.x), x4), dot(unpack4x8unorm(v.y), x4),
                     dot(unpack4x8unorm(v.z), x4), dot(unpack4x8unorm(v.w), x4));
}

// kq_byte4 is byte i (0..15) of four rows' 16-byte chunks.
fn kq_byte4(k0: vec4<u32>, k1: vec4<u32>, k2: vec4<u32>, k3: vec4<u32>, i: u32) -> vec4<u32> {
    return (vec4<u32>(k0[i / 4u], k1[i / 4u], k2[i / 4u], k3[i / 4u]) >> vec4<u32>(8u * (i & 3u))) & vec4<u32>(255u);
}

// Q2_K, padded to 96 bytes: scales[16] (chunk 0), qs[64] (1..4), d and dmin
// (chunk 5's first word). Q3_K, padded to 112: hmask[32] (0..1), qs[64]
// (2..5), scales[12] and d (chunk 6). Half n of a block is qs chunks
// 2n, 2n+1 (after the first); value 32j + l of it (j 0..3, l 0..31) is bits
// 2j of qs byte l, Q3_K's bit 4n + j of hmask byte l its third bit, and its
// scale is 8n + 2j + l/16.

// q23k_dot8 is kq_dot for Q2_K and Q3_K; ha and hq are the blocks' first
// chunks. Quants and scales are 16-byte loads, each activation is loaded
// once for the eight rows.
fn q23k_dot8(pa: ptr<function, vec4<f32>>, pb: ptr<function, vec4<f32>>, ha: vec4<u32>, hq: vec4<u32>, e: u32, xo: u32) {
    let q3 = KTYPE == 11u;
    let ks = select(0u, 6u, q3); // the scales chunk
    let k0 = w4[ha.x + ks]; let k1 = w4[ha.y + ks]; let k2 = w4[ha.z + ks]; let k3 = w4[ha.w + ks];
    let k4 = w4[hq.x + ks]; let k5 = w4[hq.y + ks]; let k6 = w4[hq.z + ks]; let k7 = w4[hq.w + ks];
    var da: KqHalves; // d (and Q2_K's dmin)
    var db: KqHalves;
    if (q3) {
        da = kq_halves(k0.w, k1.w, k2.w, k3.w);
        db = kq_halves(k4.w, k5.w, k6.w, k7.w);
    } else {
        da = kq_halves(w4[ha.x + 5u].x, w4[ha.y + 5u].x, w4[ha.z + 5u].x, w4[ha.w + 5u].x);
        db = kq_halves(w4[hq.x + 5u].x, w4[hq.y + 5u].x, w4[hq.z + 5u].x, w4[hq.w + 5u].x);
    }
    let n0 = e / 128u;
    var suma = vec4<f32>(0.0);
    var sumb = vec4<f32>(0.0);
    for (var n = n0; n < n0 + kq_step() / 128u; n++) {
        for (var c = 0u; c < 2u; c++) {
            // the values l = 16c.. of each j: Σu·x/255 for each row
            var a0 = vec4<f32>(0.0);
            var a1 = vec4<f32>(0.0);
            var a2 = vec4<f32>(0.0);
            var a3 = vec4<f32>(0.0);
            var b0 = vec4<f32>(0.0);
            var b1 = vec4<f32>(0.0);
            var b2 = vec4<f32>(0.0);
            var b3 = vec4<f32>(0.0);
            var s0 = vec4<f32>(0.0);
            var s1 = vec4<f32>(0.0);
            var s2 = vec4<f32>(0.0);
            var s3 = vec4<f32>(0.0);
            let qo = select(1u, 2u, q3) + 2u * n + c;
            let v0 = w4[ha.x + qo]; let v1 = w4[ha.y + qo]; let v2 = w4[ha.z + qo]; let v3 = w4[ha.w + qo];
            let v4 = w4[hq.x + qo]; let v5 = w4[hq.y + qo]; let v6 = w4[hq.z + qo]; let v7 = w4[hq.w + qo];
            // Q3_K's hmask chunk c (not read for Q2_K)
            let m0 = w4[ha.x + c]; let m1 = w4[ha.y + c]; let m2 = w4[ha.z + c]; let m3 = w4[ha.w + c];
            let m4 = w4[hq.x + c]; let m5 = w4[hq.y + c]; let m6 = w4[hq.z + c]; let m7 = w4[hq.w + c];
            let xq = xo + 32u * (n - n0) + 4u * c;
            for (var i = 0u; i < 4u; i++) {
                let x0 = x[xq + i];
                let x1 = x[xq + 8u + i];
                let x2 = x[xq + 16u + i];
                let x3 = x[xq + 24u + i];
                s0 += x0;
                s1 += x1;
                s2 += x2;
                s3 += x3;
                q23k_word(&a0, &a1, &a2, &a3, vec4<u32>(v0[i], v1[i], v2[i], v3[i]), vec4<u32>(m0[i], m1[i], m2[i], m3[i]), 4u * n, x0, x1, x2, x3);
                q23k_word(&b0, &b1, &b2, &b3, vec4<u32>(v4[i], v5[i], v6[i], v7[i]), vec4<u32>(m4[i], m5[i], m6[i], m7[i]), 4u * n, x0, x1, x2, x3);
            }
            let t = vec4<f32>(dot(s0, vec4<f32>(1.0)), dot(s1, vec4<f32>(1.0)), dot(s2, vec4<f32>(1.0)), dot(s3, vec4<f32>(1.0)));
            let si = 8u * n + c; // scale of j: si + 2j
            suma += q23k_sum(da, k0, k1, k2, k3, si, a0, a1, a2, a3, t);
            sumb += q23k_sum(db, k4, k5, k6, k7, si, b0, b1, b2, b3, t);
        }
    }
    *pa += suma;
    *pb += sumb;
}

// q23k_word adds one qs word (v) of each of four rows, its values j dotted
// with xj, to aj (Σu·x/255 per row): u the two bits, and for Q3_K the third
// from hmask word h's bit hs + j.
fn q23k_word(a0: ptr<function, vec4<f32>>, a1: ptr<function, vec4<f32>>, a2: ptr<function, vec4<f32>>, a3: ptr<function, vec4<f32>>,
             v: vec4<u32>, h: vec4<u32>, hs: u32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) {
    let m = vec4<u32>(0x03030303u);
    var u0 = v & m;
    var u1 = (v >> vec4<u32>(2u)) & m;
    var u2 = (v >> vec4<u32>(4u)) & m;
    var u3 = (v >> vec4<u32>(6u)) & m;
    if (KTYPE == 11u) {
        let hh = h >> vec4<u32>(hs);
        let b = vec4<u32>(0x04040404u);
        u0 |= (hh << vec4<u32>(2u)) & b;
        u1 |= (hh << vec4<u32>(1u)) & b;
        u2 |= hh & b;
        u3 |= (hh >> vec4<u32>(1u)) & b;
    }
    *a0 += kq_u8(u0, x0);
    *a1 += kq_u8(u1, x1);
    *a2 += kq_u8(u2, x2);
    *a3 += kq_u8(u3, x3);
}

// q23k_sum is four rows' sum over the values j, from their scales chunks
// (k0..k3), the scale index si (+ 2j), Σu·x/255 (a0..a3) and the
// activations' sums t (one per j): Q2_K d·Σ sc·Σu·x - dmin·Σ m·Σx (sc and
// m a scale byte's nibbles), Q3_K d·Σ sc·Σ(u-4)·x (sc signed 6 bits).
fn q23k_sum(dm: KqHalves, k0: vec4<u32>, k1: vec4<u32>, k2: vec4<u32>, k3: vec4<u32>, si: u32,
            a0: vec4<f32>, a1: vec4<f32>, a2: vec4<f32>, a3: vec4<f32>, t: vec4<f32>) -> vec4<f32> {
    var q = vec4<f32>(0.0);
    var m = vec4<f32>(0.0);
    for (var j = 0u; j < 4u; j++) {
        let a = select(select(a0, a1, j == 1u), select(a2, a3, j == 3u), j >= 2u);
        let i = si + 2u * j;
        if (KTYPE == 11u) {
            let lo = (kq_byte4(k0, k1, k2, k3, i % 8u) >> vec4<u32>(4u * (i / 8u))) & vec4<u32>(15u);
            let hi = (kq_byte4(k0, k1, k2, k3, 8u + i % 4u) >> vec4<u32>(2u * (i / 4u))) & vec4<u32>(3u);
            q += vec4<f32>(vec4<i32>(lo | (hi << vec4<u32>(4u))) - 32) * (255.0 * a - 4.0 * t[j]);
        } else {
            let b = kq_byte4(k0, k1, k2, k3, i);
            q += vec4<f32>(b & vec4<u32>(15u)) * (255.0 * a);
            m += vec4<f32>(b >> vec4<u32>(4u)) * t[j];
        }
    }
    return dm.d * q - dm.m * m;
}

// Q4_K: d, dmin (f16), scales[12], qs[128]: nine 16-byte chunks. Chunk
// 1 + 2i + c holds bytes 16c.. of the quants of sub-blocks 2i (low
// nibbles) and 2i+1 (high nibbles). Q5_K has qh[32] (chunks 1 and 2) before
// qs: bits 2i and 2i+1 of its byte l are the fifth bits of value l of
// sub-blocks 2i and 2i+1.

// q45k_dot8 is kq_dot for Q4_K and Q5_K; ha and hq are the blocks' first
// chunks. Each row's first chunk (d, dmin and the scales) is loaded once a
// step, its quants as 16-byte loads, each activation once for the eight
// rows.
fn q45k_dot8(pa: ptr<function, vec4<f32>>, pb: ptr<function, vec4<f32>>, ha: vec4<u32>, hq: vec4<u32>, e: u32, xo: u32) {
    let h0 = w4[ha.x]; let h1 = w4[ha.y]; let h2 = w4[ha.z]; let h3 = w4[ha.w];
    let h4 = w4[hq.x]; let h5 = w4[hq.y]; let h6 = w4[hq.z]; let h7 = w4[hq.w];
    let da = kq_halves(h0.x, h1.x, h2.x, h3.x);
    let db = kq_halves(h4.x, h5.x, h6.x, h7.x);
    let i0 = e / 64u;
    let qs = select(1u, 3u, KTYPE == 13u); // the first quants chunk
    for (var i = i0; i < i0 + kq_step() / 64u; i++) {
        var qa0 = vec4<f32>(0.0); // rows a, low nibbles (sub-block 2i): Σq·x/255
        var qa1 = vec4<f32>(0.0); // rows a, high nibbles (2i+1)
        var qb0 = vec4<f32>(0.0);
        var qb1 = vec4<f32>(0.0);
        var s0 = vec4<f32>(0.0); // the activations of sub-block 2i, for the mins
        var s1 = vec4<f32>(0.0);
        for (var c = 0u; c < 2u; c++) {
            let o = qs + 2u * i + c;
            let v0 = w4[ha.x + o]; let v1 = w4[ha.y + o]; let v2 = w4[ha.z + o]; let v3 = w4[ha.w + o];
            let v4 = w4[hq.x + o]; let v5 = w4[hq.y + o]; let v6 = w4[hq.z + o]; let v7 = w4[hq.w + o];
            // Q5_K's qh chunk 1 + c (not read for Q4_K)
            let g0 = w4[ha.x + 1u + c]; let g1 = w4[ha.y + 1u + c]; let g2 = w4[ha.z + 1u + c]; let g3 = w4[ha.w + 1u + c];
            let g4 = w4[hq.x + 1u + c]; let g5 = w4[hq.y + 1u + c]; let g6 = w4[hq.z + 1u + c]; let g7 = w4[hq.w + 1u + c];
            let xb = xo + 16u * (i - i0) + 4u * c;
            let xl0 = x[xb]; let xl1 = x[xb + 1u]; let xl2 = x[xb + 2u]; let xl3 = x[xb + 3u];
            let xh0 = x[xb + 8u]; let xh1 = x[xb + 9u]; let xh2 = x[xb + 10u]; let xh3 = x[xb + 11u];
            q45k_word(&qa0, &qa1, vec4<u32>(v0.x, v1.x, v2.x, v3.x), vec4<u32>(g0.x, g1.x, g2.x, g3.x), 2u * i, xl0, xh0);
            q45k_word(&qb0, &qb1, vec4<u32>(v4.x, v5.x, v6.x, v7.x), vec4<u32>(g4.x, g5.x, g6.x, g7.x), 2u * i, xl0, xh0);
            q45k_word(&qa0, &qa1, vec4<u32>(v0.y, v1.y, v2.y, v3.y), vec4<u32>(g0.y, g1.y, g2.y, g3.y), 2u * i, xl1, xh1);
            q45k_word(&qb0, &qb1, vec4<u32>(v4.y, v5.y, v6.y, v7.y), vec4<u32>(g4.y, g5.y, g6.y, g7.y), 2u * i, xl1, xh1);
            q45k_word(&qa0, &qa1, vec4<u32>(v0.z, v1.z, v2.z, v3.z), vec4<u32>(g0.z, g1.z, g2.z, g3.z), 2u * i, xl2, xh2);
            q45k_word(&qb0, &qb1, vec4<u32>(v4.z, v5.z, v6.z, v7.z), vec4<u32>(g4.z, g5.z, g6.z, g7.z), 2u * i, xl2, xh2);
            q45k_word(&qa0, &qa1, vec4<u32>(v0.w, v1.w, v2.w, v3.w), vec4<u32>(g0.w, g1.w, g2.w, g3.w), 2u * i, xl3, xh3);
            q45k_word(&qb0, &qb1, vec4<u32>(v4.w, v5.w, v6.w, v7.w), vec4<u32>(g4.w, g5.w, g6.w, g7.w), 2u * i, xl3, xh3);
            s0 += (xl0 + xl1) + (xl2 + xl3);
            s1 += (xh0 + xh1) + (xh2 + xh3);
        }
        let t0 = dot(s0, vec4<f32>(1.0));
        let t1 = dot(s1, vec4<f32>(1.0));
        *pa += q4k_sum(da, q4k_scales(h0, i), q4k_scales(h1, i), q4k_scales(h2, i), q4k_scales(h3, i), qa0, qa1, t0, t1);
        *pb += q4k_sum(db, q4k_scales(h4, i), q4k_scales(h5, i), q4k_scales(h6, i), q4k_scales(h7, i), qb0, qb1, t0, t1);
    }
}

// q45k_word adds one quant word (v) of each of four rows, its low nibbles
// dotted with xl and its high ones with xh, to q0 and q1; for Q5_K with
// the fifth bits from qh word g's bits gs and gs + 1.
fn q45k_word(q0: ptr<function, vec4<f32>>, q1: ptr<function, vec4<f32>>, v: vec4<u32>, g: vec4<u32>, gs: u32, xl: vec4<f32>, xh: vec4<f32>) {
    let m = vec4<u32>(0x0f0f0f0fu);
    var lo = v & m;
    var hi = (v >> vec4<u32>(4u)) & m;
    if (KTYPE == 13u) {
        let gg = g >> vec4<u32>(gs);
        let b = vec4<u32>(0x10101010u);
        lo |= (gg << vec4<u32>(4u)) & b;
        hi |= (gg << vec4<u32>(3u)) & b;
    }
    *q0 += kq_u8(lo, xl);
    *q1 += kq_u8(hi, xh);
}

// kq_halves is four rows' f16 pairs (d, dmin): .d the first, .m the second.
struct KqHalves {
    d: vec4<f32>,
    m: vec4<f32>,
}

fn kq_halves(w0: u32, w1: u32, w2: u32, w3: u32) -> KqHalves {
    let m0 = unpack2x16float(w0);
    let m1 = unpack2x16float(w1);
    let m2 = unpack2x16float(w2);
    let m3 = unpack2x16float(w3);
    return KqHalves(vec4<f32>(m0.x, m1.x, m2.x, m3.x), vec4<f32>(m0.y, m1.y, m2.y, m3.y));
}

// q4k_sum is four rows' sum over sub-blocks 2i and 2i+1, from Σq·x/255
// (q0, q1), the activations' sums (t0, t1) and each row's scales and mins
// (s0..s3 as q4k_scales gives them): d·(sc·Σq·x) - dmin·(m·Σx).
fn q4k_sum(dm: KqHalves, s0: vec4<f32>, s1: vec4<f32>, s2: vec4<f32>, s3: vec4<f32>, q0: vec4<f32>, q1: vec4<f32>, t0: f32, t1: f32) -> vec4<f32> {
    let sc0 = vec4<f32>(s0.x, s1.x, s2.x, s3.x);
    let sc1 = vec4<f32>(s0.y, s1.y, s2.y, s3.y);
    let mn0 = vec4<f32>(s0.z, s1.z, s2.z, s3.z);
    let mn1 = vec4<f32>(s0.w, s1.w, s2.w, s3.w);
    return dm.d * (sc0 * (255.0 * q0) + sc1 * (255.0 * q1)) - dm.m * (mn0 * t0 + mn1 * t1);
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

// q6k_dot8 is kq_dot for Q6_K; ha and hq are the blocks' first chunks.
// Each row's scales and d are loaded once a step, its quants as 16-byte
// loads, each activation once for the eight rows.
fn q6k_dot8(pa: ptr<function, vec4<f32>>, pb: ptr<function, vec4<f32>>, ha: vec4<u32>, hq: vec4<u32>, e: u32, xo: u32) {
    let sc0 = w4[ha.x + 12u]; let sc1 = w4[ha.y + 12u]; let sc2 = w4[ha.z + 12u]; let sc3 = w4[ha.w + 12u];
    let sc4 = w4[hq.x + 12u]; let sc5 = w4[hq.y + 12u]; let sc6 = w4[hq.z + 12u]; let sc7 = w4[hq.w + 12u];
    let da = kq_halves(w4[ha.x + 13u].x, w4[ha.y + 13u].x, w4[ha.z + 13u].x, w4[ha.w + 13u].x).d;
    let db = kq_halves(w4[hq.x + 13u].x, w4[hq.y + 13u].x, w4[hq.z + 13u].x, w4[hq.w + 13u].x).d;
    let h0 = e / 128u;
    var suma = vec4<f32>(0.0);
    var sumb = vec4<f32>(0.0);
    for (var h = h0; h < h0 + kq_step() / 128u; h++) {
        for (var g = 0u; g < 2u; g++) {
            // quarter k's 16 values g of each row as bytes u = q + 32:
            // Σ(u - 32)·x = 255·Σ(u/255)·x - 32·Σx
            var a0 = vec4<f32>(0.0);
            var a1 = vec4<f32>(0.0);
            var a2 = vec4<f32>(0.0);
            var a3 = vec4<f32>(0.0);
            var b0 = vec4<f32>(0.0);
            var b1 = vec4<f32>(0.0);
            var b2 = vec4<f32>(0.0);
            var b3 = vec4<f32>(0.0);
            var s0 = vec4<f32>(0.0);
            var s1 = vec4<f32>(0.0);
            var s2 = vec4<f32>(0.0);
            var s3 = vec4<f32>(0.0);
            let ql = 4u * h + g;     // + 2 for quarters 1 and 3
            let qh = 8u + 2u * h + g;
            let la0 = w4[ha.x + ql]; let la1 = w4[ha.y + ql]; let la2 = w4[ha.z + ql]; let la3 = w4[ha.w + ql];
            let la4 = w4[hq.x + ql]; let la5 = w4[hq.y + ql]; let la6 = w4[hq.z + ql]; let la7 = w4[hq.w + ql];
            let lb0 = w4[ha.x + ql + 2u]; let lb1 = w4[ha.y + ql + 2u]; let lb2 = w4[ha.z + ql + 2u]; let lb3 = w4[ha.w + ql + 2u];
            let lb4 = w4[hq.x + ql + 2u]; let lb5 = w4[hq.y + ql + 2u]; let lb6 = w4[hq.z + ql + 2u]; let lb7 = w4[hq.w + ql + 2u];
            let qh0 = w4[ha.x + qh]; let qh1 = w4[ha.y + qh]; let qh2 = w4[ha.z + qh]; let qh3 = w4[ha.w + qh];
            let qh4 = w4[hq.x + qh]; let qh5 = w4[hq.y + qh]; let qh6 = w4[hq.z + qh]; let qh7 = w4[hq.w + qh];
            let xq = xo + 32u * (h - h0) + 4u * g;
            for (var j = 0u; j < 4u; j++) {
                let x0 = x[xq + j];
                let x1 = x[xq + 8u + j];
                let x2 = x[xq + 16u + j];
                let x3 = x[xq + 24u + j];
                s0 += x0;
                s1 += x1;
                s2 += x2;
                s3 += x3;
                q6k_word(&a0, &a1, &a2, &a3, vec4<u32>(la0[j], la1[j], la2[j], la3[j]), vec4<u32>(lb0[j], lb1[j], lb2[j], lb3[j]),
                         vec4<u32>(qh0[j], qh1[j], qh2[j], qh3[j]), x0, x1, x2, x3);
                q6k_word(&b0, &b1, &b2, &b3, vec4<u32>(la4[j], la5[j], la6[j], la7[j]), vec4<u32>(lb4[j], lb5[j], lb6[j], lb7[j]),
                         vec4<u32>(qh4[j], qh5[j], qh6[j], qh7[j]), x0, x1, x2, x3);
            }
            let t = vec4<f32>(dot(s0, vec4<f32>(1.0)), dot(s1, vec4<f32>(1.0)), dot(s2, vec4<f32>(1.0)), dot(s3, vec4<f32>(1.0)));
            let si = 8u * h + g; // scale of quarter k: si + 2k
            suma += q6k_sum(sc0, sc1, sc2, sc3, si, a0, a1, a2, a3, t);
            sumb += q6k_sum(sc4, sc5, sc6, sc7, si, b0, b1, b2, b3, t);
        }
    }
    *pa += da * suma;
    *pb += db * sumb;
}

// q6k_word adds one word of ql (va: quarters 0 and 2; vb: 1 and 3) and of
// qh (vh) of each of four rows, dotted with quarter k's activations xk, to
// a0..a3 (Σu·x/255 per row, u = q + 32).
fn q6k_word(a0: ptr<function, vec4<f32>>, a1: ptr<function, vec4<f32>>, a2: ptr<function, vec4<f32>>, a3: ptr<function, vec4<f32>>,
            va: vec4<u32>, vb: vec4<u32>, vh: vec4<u32>, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>) {
    let lo = vec4<u32>(0x0f0f0f0fu);
    let hi = vec4<u32>(0x30303030u);
    *a0 += kq_u8((va & lo) | ((vh << vec4<u32>(4u)) & hi), x0);
    *a1 += kq_u8((vb & lo) | ((vh << vec4<u32>(2u)) & hi), x1);
    *a2 += kq_u8(((va >> vec4<u32>(4u)) & lo) | (vh & hi), x2);
    *a3 += kq_u8(((vb >> vec4<u32>(4u)) & lo) | ((vh >> vec4<u32>(2u)) & hi), x3);
}

// q6k_sum is four rows' Σ scale·Σ(u-32)·x over the quarters, from their
// scales chunks (sc0..sc3: 16 int8 each), the quarters' scale index si
// (+ 2k), Σu·x/255 (a0..a3) and the activations' sums t (one per quarter).
fn q6k_sum(sc0: vec4<u32>, sc1: vec4<u32>, sc2: vec4<u32>, sc3: vec4<u32>, si: u32,
           a0: vec4<f32>, a1: vec4<f32>, a2: vec4<f32>, a3: vec4<f32>, t: vec4<f32>) -> vec4<f32> {
    return q6k_scales(sc0, sc1, sc2, sc3, si) * (255.0 * a0 - 32.0 * t.x) +
        q6k_scales(sc0, sc1, sc2, sc3, si + 2u) * (255.0 * a1 - 32.0 * t.y) +
        q6k_scales(sc0, sc1, sc2, sc3, si + 4u) * (255.0 * a2 - 32.0 * t.z) +
        q6k_scales(sc0, sc1, sc2, sc3, si + 6u) * (255.0 * a3 - 32.0 * t.w);
}

// q6k_scales is int8 scale i (0..15) of four rows' scales chunks.
fn q6k_scales(sc0: vec4<u32>, sc1: vec4<u32>, sc2: vec4<u32>, sc3: vec4<u32>, i: u32) -> vec4<f32> {
    let sh = 24u - 8u * (i & 3u);
    let v = vec4<u32>(sc0[i / 4u], sc1[i / 4u], sc2[i / 4u], sc3[i / 4u]);
    return vec4<f32>(vec4<i32>(v << vec4<u32>(sh)) >> vec4<u32>(24u));
}

fn kq_w4(n: u32, k: u32) -> vec4<f32> {
    let bb = kq_block_bytes();
    return kq_get4((n * (p.k / 256u) + k / 256u) * bb, k % 256u);
}

@compute @workgroup_size(WG)
fn gemv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row0 = (wid.y * nwg.x + wid.x) * R;
    if (row0 >= p.rows) {
        return; // the whole workgroup: spare groups of a 2D dispatch
    }
    let tbase = wid.z * TB;
    let bb = kq_block_bytes();
    let kb = p.k / 256u;
    // token t's sums of rows row0..row0+3 (a) and row0+4..row0+7 (b),
    // named: SwiftShader pays dearly for indexing a local array
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var b0 = vec4<f32>(0.0);
    var b1 = vec4<f32>(0.0);
    var b2 = vec4<f32>(0.0);
    var b3 = vec4<f32>(0.0);
    let step = kq_step();
    let xr = p.k / 4u; // vec4s of x per token
    let ra = min(vec4<u32>(row0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.rows - 1u));
    let rb = min(vec4<u32>(row0) + vec4<u32>(4u, 5u, 6u, 7u), vec4<u32>(p.rows - 1u));
    for (var c = lid; c < p.k / step; c += WG) {
        let k = step * c;
        let e = k % 256u;
        let ba = (ra * kb + k / 256u) * bb;
        let bq = (rb * kb + k / 256u) * bb;
        kq_dot(&a0, &b0, ba, bq, e, min(tbase, p.t - 1u) * xr + k / 4u);
        if (TB > 1u) {
            kq_dot(&a1, &b1, ba, bq, e, min(tbase + 1u, p.t - 1u) * xr + k / 4u);
        }
        if (TB > 2u) {
            kq_dot(&a2, &b2, ba, bq, e, min(tbase + 2u, p.t - 1u) * xr + k / 4u);
        }
        if (TB > 3u) {
            kq_dot(&a3, &b3, ba, bq, e, min(tbase + 3u, p.t - 1u) * xr + k / 4u);
        }
    }
    for (var t = 0u; t < TB; t++) {
        let va = select(select(a0, a1, t == 1u), select(a2, a3, t == 3u), t >= 2u);
        let vb = select(select(b0, b1, t == 1u), select(b2, b3, t == 3u), t >= 2u);
        for (var r = 0u; r < R; r++) {
            red[(r * TB + t) * WG + lid] = select(va[r % 4u], vb[r % 4u], r >= 4u);
        }
    }
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            for (var i = 0u; i < R * TB; i++) {
                red[i * WG + lid] += red[i * WG + lid + h];
            }
        }
        workgroupBarrier();
    }
    for (var i = lid; i < R * TB; i += WG) { // WG may be under R*TB
        let r = i / TB;
        let t = i % TB;
        if (tbase + t < p.t && row0 + r < p.rows) {
            kq_put((tbase + t) * p.n + p.row0 + row0 + r, red[i * WG]);
        }
    }
}

@compute @workgroup_size(GT)
fn gemm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    gemm_tile(wid.x * BN, wid.y * BM, lid, p.t, p.rows, p.k);
}

fn tile_x(t: u32, k: u32) -> vec4<f32> {
    return x[(t * p.k + k) / 4u];
}

fn tile_w(n: u32, k: u32) -> vec4<f32> {
    return kq_w4(n, k);
}

fn tile_put(t: u32, n: u32, v: vec4<f32>) {
    kq_store(t, n, v);
}

// kq_store writes out[t, row0+n .. row0+n+3] where inside the part and T.
fn kq_store(t: u32, n: u32, v: vec4<f32>) {
    if (t >= p.t) {
        return;
    }
    let o = t * p.n + p.row0;
    for (var j = 0u; j < 4u; j++) {
        if (n + j < p.rows) {
            kq_put(o + n + j, v[j]);
        }
    }
}

// kq_put stores (or with p.acc adds) s at out[i].
fn kq_put(i: u32, s: f32) {
    if (p.acc == 1u) {
        out[i] += s;
    } else {
        out[i] = s;
    }
}
