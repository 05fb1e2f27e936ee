// matmul_gemm: out (T, N) = x (T, K) · wᵀ for one row-part of w, the tiled
// prefill path. WTYPE picks the weight dtype (see common.wgsl); quantised
// weights are dequantised inside the kernel, once per tile.
//
// A workgroup of 256 threads computes a BM×BN tile of out (BM tokens by BN
// weight rows); each thread 4 tokens by 4 rows. Per step of BK along K it
// stages x (BM×BK) and the dequantised w (BN×BK) in workgroup memory
// (16 KiB, WebGPU's default limit), transposed so that the inner loop reads
// one vec4 of each per k and does 16 FMAs. BK = 32 is one quantisation
// group: each loading thread takes one q4 word (4 low and 4 high nibbles:
// elements 4j..4j+3 and 16+4j..16+4j+3) and the same elements of x. Rows past the part and tokens past T
// are clamped on load and skipped on store; f32/f16 rows whose K is not a
// multiple of BK are zero-padded on load.

override WTYPE: u32 = 3u;

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 32u;

struct Params {
    n: u32,    // N: columns of out, over all parts
    k: u32,    // K
    row0: u32, // first weight row of this part: its first column of out
    rows: u32, // weight rows in this part
    t: u32,    // T
    acc: u32,  // 1: out += the product
}

@group(0) @binding(0) var<storage, read> w: array<u32>;           // (rows, K) WTYPE values
@group(0) @binding(1) var<storage, read> scales: array<u32>;      // (rows, K/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> x: array<f32>;           // (T, K) f32
@group(0) @binding(3) var<storage, read_write> out: array<f32>;   // (T, N) f32
@group(0) @binding(4) var<uniform> p: Params;

var<workgroup> xs: array<vec4<f32>, BK * BM / 4u>; // [k][token / 4]
var<workgroup> ws: array<vec4<f32>, BK * BN / 4u>; // [k][row / 4]

fn gemm_scale(s: u32) -> f32 {
    return half_of(scales[s >> 1u], s);
}

// gemm_w returns elements k..k+3 of weight row n (k a multiple of 4), zero
// past K.
fn gemm_w(n: u32, k: u32) -> vec4<f32> {
    let K = p.k;
    if (WTYPE == WTYPE_Q4) {
        let g = k / 32u;
        let word = w[n * (K / 8u) + g * 4u + (k % 16u) / 4u];
        let q = select(q4_lo(word), q4_hi(word), k % 32u >= 16u);
        return q * gemm_scale(n * (K / 32u) + g);
    }
    if (WTYPE == WTYPE_Q8) {
        let q = i8x4(w[(n * K + k) / 4u]);
        return q * gemm_scale(n * (K / 32u) + k / 32u);
    }
    var v: vec4<f32>;
    for (var i = 0u; i < 4u; i++) {
        let e = n * K + min(k + i, K - 1u);
        var f: f32;
        if (WTYPE == WTYPE_F16) {
            f = half_of(w[e / 2u], e);
        } else {
            f = bitcast<f32>(w[e]);
        }
        v[i] = select(0.0, f, k + i < K);
    }
    return v;
}

// gemm_x returns elements k..k+3 of token t's activations, zero past K.
fn gemm_x(t: u32, k: u32) -> vec4<f32> {
    let K = p.k;
    let base = t * K;
    if (K % 4u == 0u && k < K) {
        return vec4<f32>(x[base + k], x[base + k + 1u], x[base + k + 2u], x[base + k + 3u]);
    }
    var v: vec4<f32>;
    for (var i = 0u; i < 4u; i++) {
        v[i] = select(0.0, x[base + min(k + i, K - 1u)], k + i < K);
    }
    return v;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let rbase = wid.x * BN;
    let tbase = wid.y * BM;
    // loader role: tile row lr (a token for x, a weight row for w), k
    // lq..lq+3 and 16+lq..16+lq+3 of each BK step
    let lr = lid / 4u;
    let lq = (lid % 4u) * 4u;
    let lt = min(tbase + lr, p.t - 1u);
    let ln = min(rbase + lr, p.rows - 1u);
    // compute role: tokens 4ty..4ty+3, rows 4tx..4tx+3 of the tile
    let tx = lid % 16u;
    let ty = lid / 16u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);

    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        for (var h = 0u; h < BK; h += 16u) {
            let xv = gemm_x(lt, k0 + h + lq);
            let wv = gemm_w(ln, k0 + h + lq);
            for (var i = 0u; i < 4u; i++) {
                xs[(h + lq + i) * (BM / 4u) + lr / 4u][lr % 4u] = xv[i];
                ws[(h + lq + i) * (BN / 4u) + lr / 4u][lr % 4u] = wv[i];
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let a = xs[kk * (BM / 4u) + ty];
            let b = ws[kk * (BN / 4u) + tx];
            acc0 += a.x * b;
            acc1 += a.y * b;
            acc2 += a.z * b;
            acc3 += a.w * b;
        }
        workgroupBarrier();
    }

    let n = rbase + tx * 4u;
    let t = tbase + ty * 4u;
    gemm_store(t, n, acc0);
    gemm_store(t + 1u, n, acc1);
    gemm_store(t + 2u, n, acc2);
    gemm_store(t + 3u, n, acc3);
}

// gemm_store writes out[t, row0+n .. row0+n+3] where inside the part and T.
fn gemm_store(t: u32, n: u32, v: vec4<f32>) {
    if (t >= p.t) {
        return;
    }
    let o = t * p.n + p.row0;
    for (var j = 0u; j < 4u; j++) {
        if (n + j < p.rows) {
            if (p.acc == 1u) {
                out[o + n + j] += v[j];
            } else {
                out[o + n + j] = v[j];
            }
        }
    }
}
