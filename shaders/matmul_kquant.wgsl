// matmul_kquant: out (T, N) = x (T, K) · wᵀ for one row-part of a K-quant
// weight (Q2_K .. Q6_K as ggml's blocks, KTYPE; see common.wgsl's KQUANT
// section), K a multiple of 256.
//
// Entry gemv, the decode path (small T): a workgroup owns R weight rows and
// TB tokens; its WG threads stride along K kq_step() elements at a time
// (kq_dot4 per token: the four rows' dot products, each activation loaded
// once for them), and the partial sums are reduced in shared memory. As matmul_gemv,
// a CPU adapter gets one subgroup per workgroup (gemvWG). Grid
// (groups2D(ceil(rows/R)), ceil(T/TB)).
// Entry gemm, the prefill path: common.wgsl's GEMM tile, one BM×BN tile of
// out per workgroup. Grid (ceil(rows/BN), ceil(T/BM)).
// Rows past the part and tokens past T are clamped on load and skipped on
// store. With acc = 1 both add to out instead of storing.

//#define KQUANT
//#define GEMM_TILE
override KTYPE: u32 = 12u;
override WG: u32 = 64u; // gemv threads per workgroup, a power of two, at most MAXWG
override TB: u32 = 4u;  // gemv tokens per workgroup, at most MAXTB
override R: u32 = 4u;   // gemv rows per workgroup: MAXR (kq_dot4 takes four)

const MAXWG: u32 = 64u;
const MAXTB: u32 = 4u;
const MAXR: u32 = 4u;

struct Params {
    n: u32,    // N: columns of out, over all parts
    k: u32,    // K, a multiple of 256
    row0: u32, // first weight row of this part: its first column of out
    rows: u32, // weight rows in this part
    t: u32,    // T
    acc: u32,  // 1: add to out (a residual, FusedMatMul's Add), 0: store
}

@group(0) @binding(0) var<storage, read> w: array<u32>;          // (rows, K/256) KTYPE blocks, ggml's bytes
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;    // (T, K) f32
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (T, N) f32
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> red: array<f32, MAXWG * MAXTB * MAXR>; // gemv: (R, TB, WG) partial sums

// kq_w4 is elements k..k+3 (k a multiple of 4) of weight row n of the part.
// kq_step is the elements a GEMV thread dots at a time: Q4_K's 64 of one
// 32-byte run of quants (two sub-blocks, low and high nibbles), Q6_K's 128
// of one half block, 32 (eight kq_get4) for the other types.
fn kq_step() -> u32 {
    switch KTYPE {
        case 12u: { return 64u; }
        case 14u: { return 128u; }
        default: { return 32u; }
    }
}

// kq_dot4 is the dot products of elements e..e+kq_step()-1 of the four
// blocks at bytes bases (one per row) with the activations at vec4 xo of x.
// Q4_K and Q6_K read each block's scales once a step and each quant word
// once, and each activation once for the four rows.
fn kq_dot4(bases: vec4<u32>, e: u32, xo: u32) -> vec4<f32> {
    if (KTYPE == 12u) { // Q4_K: d, dmin, scales[12], qs[128]
        let i = e / 64u;
        let wb = bases / 4u; // 144-byte blocks are 4-byte aligned
        let m0 = unpack2x16float(w[wb.x]);
        let m1 = unpack2x16float(w[wb.y]);
        let m2 = unpack2x16float(w[wb.z]);
        let m3 = unpack2x16float(w[wb.w]);
        let a0 = kq_scale_min_k4(bases.x + 4u, 2u * i); let b0 = kq_scale_min_k4(bases.x + 4u, 2u * i + 1u);
        let a1 = kq_scale_min_k4(bases.y + 4u, 2u * i); let b1 = kq_scale_min_k4(bases.y + 4u, 2u * i + 1u);
        let a2 = kq_scale_min_k4(bases.z + 4u, 2u * i); let b2 = kq_scale_min_k4(bases.z + 4u, 2u * i + 1u);
        let a3 = kq_scale_min_k4(bases.w + 4u, 2u * i); let b3 = kq_scale_min_k4(bases.w + 4u, 2u * i + 1u);
        let qw = wb + vec4<u32>(4u + 8u * i);
        var q0 = vec4<f32>(0.0); // low nibbles (sub-block 2i), per row
        var q1 = vec4<f32>(0.0); // high (2i+1)
        var s0 = vec4<f32>(0.0);
        var s1 = vec4<f32>(0.0);
        for (var q = 0u; q < 8u; q++) {
            let xl = x[xo + q];
            let xh = x[xo + 8u + q];
            let v = vec4<u32>(w[qw.x + q], w[qw.y + q], w[qw.z + q], w[qw.w + q]);
            q0 += vec4<f32>(dot(kq_nib4(v.x, 0u), xl), dot(kq_nib4(v.y, 0u), xl), dot(kq_nib4(v.z, 0u), xl), dot(kq_nib4(v.w, 0u), xl));
            q1 += vec4<f32>(dot(kq_nib4(v.x, 4u), xh), dot(kq_nib4(v.y, 4u), xh), dot(kq_nib4(v.z, 4u), xh), dot(kq_nib4(v.w, 4u), xh));
            s0 += xl;
            s1 += xh;
        }
        let one = vec4<f32>(1.0);
        let d = vec4<f32>(m0.x, m1.x, m2.x, m3.x);
        let dmin = vec4<f32>(m0.y, m1.y, m2.y, m3.y);
        let sc0 = vec4<f32>(a0.x, a1.x, a2.x, a3.x);
        let sc1 = vec4<f32>(b0.x, b1.x, b2.x, b3.x);
        let mn0 = vec4<f32>(a0.y, a1.y, a2.y, a3.y);
        let mn1 = vec4<f32>(b0.y, b1.y, b2.y, b3.y);
        return d * (sc0 * q0 + sc1 * q1) - dmin * (mn0 * dot(s0, one) + mn1 * dot(s1, one));
    }
    if (KTYPE == 14u) { // Q6_K: ql[128], qh[64], int8 scales[16], d
        let h = e / 128u;
        let la = bases + vec4<u32>(64u * h);        // ql of quarters 0 (low) and 2 (high)
        let lb = la + vec4<u32>(32u);               // ql of quarters 1 and 3
        let hb = bases + vec4<u32>(128u + 32u * h); // qh: quarter k at bits 2k
        let sb = bases + vec4<u32>(192u + 8u * h);  // scale of quarter k, half g: sb + 2k + g
        var sum = vec4<f32>(0.0);
        for (var g = 0u; g < 2u; g++) {
            var a0 = vec4<f32>(0.0);
            var a1 = vec4<f32>(0.0);
            var a2 = vec4<f32>(0.0);
            var a3 = vec4<f32>(0.0);
            for (var q = 4u * g; q < 4u * g + 4u; q++) {
                let x0 = x[xo + q];
                let x1 = x[xo + 8u + q];
                let x2 = x[xo + 16u + q];
                let x3 = x[xo + 24u + q];
                let o = 4u * q;
                let va = vec4<u32>(kq_word(la.x + o), kq_word(la.y + o), kq_word(la.z + o), kq_word(la.w + o));
                let vb = vec4<u32>(kq_word(lb.x + o), kq_word(lb.y + o), kq_word(lb.z + o), kq_word(lb.w + o));
                let vh = vec4<u32>(kq_word(hb.x + o), kq_word(hb.y + o), kq_word(hb.z + o), kq_word(hb.w + o));
                a0 += vec4<f32>(kq_q6(va.x, vh.x, 0u, 0u, x0), kq_q6(va.y, vh.y, 0u, 0u, x0), kq_q6(va.z, vh.z, 0u, 0u, x0), kq_q6(va.w, vh.w, 0u, 0u, x0));
                a1 += vec4<f32>(kq_q6(vb.x, vh.x, 0u, 2u, x1), kq_q6(vb.y, vh.y, 0u, 2u, x1), kq_q6(vb.z, vh.z, 0u, 2u, x1), kq_q6(vb.w, vh.w, 0u, 2u, x1));
                a2 += vec4<f32>(kq_q6(va.x, vh.x, 4u, 4u, x2), kq_q6(va.y, vh.y, 4u, 4u, x2), kq_q6(va.z, vh.z, 4u, 4u, x2), kq_q6(va.w, vh.w, 4u, 4u, x2));
                a3 += vec4<f32>(kq_q6(vb.x, vh.x, 4u, 6u, x3), kq_q6(vb.y, vh.y, 4u, 6u, x3), kq_q6(vb.z, vh.z, 4u, 6u, x3), kq_q6(vb.w, vh.w, 4u, 6u, x3));
            }
            sum += kq_i8x4(sb + vec4<u32>(g)) * a0 + kq_i8x4(sb + vec4<u32>(2u + g)) * a1 +
                kq_i8x4(sb + vec4<u32>(4u + g)) * a2 + kq_i8x4(sb + vec4<u32>(6u + g)) * a3;
        }
        return vec4<f32>(kq_half(bases.x + 208u), kq_half(bases.y + 208u), kq_half(bases.z + 208u), kq_half(bases.w + 208u)) * sum;
    }
    return vec4<f32>(kq_dot32(bases.x, e, xo), kq_dot32(bases.y, e, xo), kq_dot32(bases.z, e, xo), kq_dot32(bases.w, e, xo));
}

// kq_dot32 is the dot product of elements e..e+31 of the block at byte base
// with the activations at vec4 xo of x, through kq_get4.
fn kq_dot32(base: u32, e: u32, xo: u32) -> f32 {
    return dot(kq_get4(base, e), x[xo]) + dot(kq_get4(base, e + 4u), x[xo + 1u]) +
        dot(kq_get4(base, e + 8u), x[xo + 2u]) + dot(kq_get4(base, e + 12u), x[xo + 3u]) +
        dot(kq_get4(base, e + 16u), x[xo + 4u]) + dot(kq_get4(base, e + 20u), x[xo + 5u]) +
        dot(kq_get4(base, e + 24u), x[xo + 6u]) + dot(kq_get4(base, e + 28u), x[xo + 7u]);
}

// kq_i8x4 is the signed bytes at offsets o.
fn kq_i8x4(o: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(kq_i8(o.x), kq_i8(o.y), kq_i8(o.z), kq_i8(o.w));
}

// kq_i8 is the signed byte at o.
fn kq_i8(o: u32) -> f32 {
    return f32(i32(kq_byte(o) << 24u) >> 24);
}

// kq_q6 is the dot product of four Q6_K values (low bits from ql word at
// shift sh, high two bits from qh word at shift qs, minus 32) with x.
fn kq_q6(ql: u32, qh: u32, sh: u32, qs: u32, x4: vec4<f32>) -> f32 {
    let q = vec4<i32>(kq_bytes4((ql >> sh) & 0x0f0f0f0fu) | (kq_bytes4((qh >> qs) & 0x03030303u) << vec4<u32>(4u))) - 32;
    return dot(vec4<f32>(q), x4);
}

// kq_nib4 is the four nibbles of word v at shift sh (0: low, 4: high).
fn kq_nib4(v: u32, sh: u32) -> vec4<f32> {
    return vec4<f32>(kq_bytes4((v >> sh) & 0x0f0f0f0fu));
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
    var acc: array<vec4<f32>, MAXTB>; // token t's sums of rows row0..row0+3
    let step = kq_step();
    let rows = min(vec4<u32>(row0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.rows - 1u));
    for (var c = lid; c < p.k / step; c += WG) {
        let k = step * c;
        let bases = (rows * kb + k / 256u) * bb;
        for (var t = 0u; t < TB; t++) {
            let xo = min(tbase + t, p.t - 1u) * (p.k / 4u) + k / 4u;
            acc[t] += kq_dot4(bases, k % 256u, xo);
        }
    }
    for (var i = 0u; i < R * TB; i++) {
        red[i * WG + lid] = acc[i % TB][i / TB];
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
