// matmul_kquant: out (T, N) = x (T, K) · wᵀ for one row-part of a K-quant
// weight (Q2_K .. Q6_K as ggml's blocks, KTYPE; see common.wgsl's KQUANT
// section), K a multiple of 256.
//
// Entry gemv, the decode path (small T): a workgroup owns one weight row and
// TB tokens; its WG threads stride along K four elements at a time (one
// kq_get4 each, its activations one vec4 per token), and the partial sums
// are reduced in shared memory. Grid (groups2D(rows), ceil(T/TB)).
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

var<workgroup> red: array<f32, MAXWG * MAXTB>;

// kq_w4 is elements k..k+3 (k a multiple of 4) of weight row n of the part.
fn kq_w4(n: u32, k: u32) -> vec4<f32> {
    let bb = kq_block_bytes();
    return kq_get4((n * (p.k / 256u) + k / 256u) * bb, k % 256u);
}

@compute @workgroup_size(WG)
fn gemv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.y * nwg.x + wid.x;
    if (row >= p.rows) {
        return; // the whole workgroup: spare groups of a 2D dispatch
    }
    let tbase = wid.z * TB;
    let k4 = p.k / 4u;
    var toff: array<u32, MAXTB>;
    for (var t = 0u; t < TB; t++) {
        toff[t] = min(tbase + t, p.t - 1u) * k4;
    }
    var acc: array<f32, MAXTB>;
    for (var u = lid; u < k4; u += WG) {
        let wv = kq_w4(row, 4u * u);
        for (var t = 0u; t < TB; t++) {
            acc[t] += dot(wv, x[toff[t] + u]);
        }
    }
    for (var t = 0u; t < TB; t++) {
        red[t * WG + lid] = acc[t];
    }
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            for (var t = 0u; t < TB; t++) {
                red[t * WG + lid] += red[t * WG + lid + h];
            }
        }
        workgroupBarrier();
    }
    if (lid < TB && tbase + lid < p.t) {
        kq_put((tbase + lid) * p.n + p.row0 + row, red[lid * WG]);
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
