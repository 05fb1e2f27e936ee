// matmul_kquant: out (T, N) = x (T, K) · wᵀ for one row-part of a K-quant
// weight (Q2_K .. Q6_K as ggml's blocks, KTYPE; see common.wgsl's KQUANT
// section), K a multiple of 256.
//
// Entry gemv, the decode path (small T): a workgroup owns R weight rows and
// TB tokens; its WG threads stride along K 32 elements at a time (eight
// vec4 of activations per token, used for the R rows; kq_dot32 per row),
// and the partial sums are reduced in shared memory. As matmul_gemv,
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
override R: u32 = 1u;   // gemv rows per workgroup, at most MAXR

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
    var acc: array<f32, MAXR * MAXTB>; // [r * TB + t]
    for (var c = lid; c < p.k / 32u; c += WG) {
        let k = 32u * c;
        let e = k % 256u;
        for (var t = 0u; t < TB; t++) {
            let xo = min(tbase + t, p.t - 1u) * (p.k / 4u) + k / 4u;
            let xs8 = KX(x[xo], x[xo + 1u], x[xo + 2u], x[xo + 3u], x[xo + 4u], x[xo + 5u], x[xo + 6u], x[xo + 7u]);
            for (var r = 0u; r < R; r++) {
                let base = (min(row0 + r, p.rows - 1u) * kb + k / 256u) * bb;
                acc[r * TB + t] += kq_dot32(base, e, xs8);
            }
        }
    }
    for (var i = 0u; i < R * TB; i++) {
        red[i * WG + lid] = acc[i];
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
