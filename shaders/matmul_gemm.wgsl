// matmul_gemm: out (T, N) = x (T, K) · wᵀ for one row-part of w, the tiled
// prefill path: common.wgsl's GEMM tile, one BM×BN tile of out per
// workgroup, grid (ceil(rows/BN), ceil(T/BM)). WTYPE picks the weight dtype
// (see common.wgsl); quantised weights are dequantised as they are staged,
// once per tile: BK = 32 is one quantisation group. Rows past the part and
// tokens past T are clamped on load and skipped on store; f32/f16 rows
// whose K is not a multiple of BK are zero-padded on load. With WIDE (on
// a GPU) activations are loaded four to a load where K is a multiple of 4,
// through x4, a vec4 view of the buffer of x (whole vec4 when K is);
// q8 and q4 weights give four and eight values a 4-byte word. SwiftShader
// runs the vec4 loads 1.15x slower (BenchmarkMatMulGEMM), so CPU adapters
// load x element by element.

//#define GEMM_TILE
override WTYPE: u32 = 3u;
override WIDE: bool = false;

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
@group(0) @binding(4) var<storage, read> x4: array<vec4<f32>>;    // (T, K/4) x's buffer as vec4 (when WIDE)
@group(0) @binding(5) var<uniform> p: Params;

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
        if (WIDE) {
            return x4[(base + k) / 4u];
        }
        return vec4<f32>(x[base + k], x[base + k + 1u], x[base + k + 2u], x[base + k + 3u]);
    }
    var v: vec4<f32>;
    for (var i = 0u; i < 4u; i++) {
        v[i] = select(0.0, x[base + min(k + i, K - 1u)], k + i < K);
    }
    return v;
}

@compute @workgroup_size(GT)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    gemm_tile(wid.x * BN, wid.y * BM, lid, p.t, p.rows, p.k);
}

fn tile_x(t: u32, k: u32) -> vec4<f32> {
    return gemm_x(t, k);
}

fn tile_w(n: u32, k: u32) -> vec4<f32> {
    return gemm_w(n, k);
}

fn tile_put(t: u32, n: u32, v: vec4<f32>) {
    gemm_store(t, n, v);
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
