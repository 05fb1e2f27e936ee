// matmul_kquant: out (T, N) = x (T, K) · wᵀ for one row-part of a K-quant
// weight (Q2_K .. Q6_K as ggml's blocks, KTYPE; see common.wgsl's KQUANT
// section), K a multiple of 256.
//
// Entry gemv, the decode path (small T): a workgroup owns R = 8 weight rows
// (16 with RO = 2) and TB tokens, and the partial sums are reduced in
// shared memory. Each token goes row by row (kq_rows, common.wgsl's
// KQUANT_DOT section): the WG threads stride along K 64 values at a time,
// each dotting its 64 activations with every row in turn. As matmul_gemv,
// a CPU adapter gets one subgroup per workgroup (gemvWG), and 16 rows for
// one or two tokens. Grid (groups2D(ceil(rows/(R*RO))), ceil(T/TB)).
// Entry gemm, the prefill path: common.wgsl's GEMM tile, one BM×BN tile of
// out per workgroup. Grid (ceil(rows/BN), ceil(T/BM)).
// Rows past the part and tokens past T are clamped on load and skipped on
// store. With acc = 1 both add to out instead of storing.

//#define KQUANT
//#define KQUANT_DOT
//#define GEMM_TILE
override KTYPE: u32 = 12u;
override WG: u32 = 64u; // gemv threads per workgroup, a power of two, at most MAXWG
override TB: u32 = 4u;  // gemv tokens per workgroup, at most MAXTB

// gemv row octets per workgroup: 1, or 2 with TB <= 2 (CPU adapters:
// fewer, longer workgroups)
override RO: u32 = 1u;
// ONESG = 1 promises that the workgroup is one subgroup (WG at most the
// adapter's smallest subgroup): gemv's reduction is then subgroupAdd alone.
override ONESG: u32 = 0u;

const MAXWG: u32 = 64u;
const MAXTB: u32 = 4u;
const R: u32 = 8u; // gemv rows of an octet: two quads (a, b; c, d the second octet's)

struct Params {
    n: u32,    // N: columns of out, over all parts
    k: u32,    // K, a multiple of 256
    row0: u32, // first weight row of this part: its first column of out
    rows: u32, // weight rows in this part
    t: u32,    // T
    acc: u32,  // 1: add to out (a residual, MatMulFusion's Add), 0: store
}

@group(0) @binding(0) var<storage, read> w: array<u32>;          // (rows, K/256) KTYPE blocks (kq_block_bytes each)
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;    // (T, K) f32
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (T, N) f32
@group(0) @binding(3) var<storage, read> w4: array<vec4<u32>>;   // w again, as 16-byte chunks (gemv)
@group(0) @binding(4) var<uniform> p: Params;

override RED: u32 = WG * TB * R * RO;
var<workgroup> red: array<f32, RED>; // gemv: (R*RO, TB, WG) partial sums

fn kq_w4(n: u32, k: u32) -> vec4<f32> {
    let bb = kq_block_bytes();
    return kq_get4((n * (p.k / 256u) + k / 256u) * bb, k % 256u);
}

@compute @workgroup_size(WG)
fn gemv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row0 = (wid.y * nwg.x + wid.x) * R * RO;
    if (row0 >= p.rows) {
        return; // the whole workgroup: spare groups of a 2D dispatch
    }
    let tbase = wid.z * TB;
    let ra = min(vec4<u32>(row0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.rows - 1u));
    let rb = min(vec4<u32>(row0) + vec4<u32>(4u, 5u, 6u, 7u), vec4<u32>(p.rows - 1u));
    let rc = min(ra + vec4<u32>(8u), vec4<u32>(p.rows - 1u));
    let rd = min(rb + vec4<u32>(8u), vec4<u32>(p.rows - 1u));
    var acc = array<f32, KQ_ACC>(); // acc[16t + r]: token t, row row0 + r
    kq_rows(&acc, ra, rb, rc, rd, 2u * RO, TB, p.t - 1u - tbase, p.k, tbase * (p.k / 4u), p.k / 4u, lid);
    for (var t = 0u; t < TB; t++) {
        let va = kq_quad(&acc, 16u * t);
        let vb = kq_quad(&acc, 16u * t + 4u);
        let vc = kq_quad(&acc, 16u * t + 8u);
        let vd = kq_quad(&acc, 16u * t + 12u);
//#if SUBGROUPS
        if (ONESG == 1u) {
            var sc = vec4<f32>(0.0);
            var sd = vec4<f32>(0.0);
            if (RO > 1u) {
                sc = subgroupAdd(vc);
                sd = subgroupAdd(vd);
            }
            kq_store_rows(tbase + t, row0, subgroupAdd(va), subgroupAdd(vb), sc, sd, lid);
            continue;
        }
//#endif
        for (var r = 0u; r < R * RO; r++) {
            let v = select(select(va, vb, r >= 4u), select(vc, vd, r >= 12u), r >= 8u);
            red[(r * TB + t) * WG + lid] = v[r % 4u];
        }
    }
    if (ONESG == 1u) {
        return;
    }
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            for (var i = 0u; i < R * RO * TB; i++) {
                red[i * WG + lid] += red[i * WG + lid + h];
            }
        }
        workgroupBarrier();
    }
    for (var i = lid; i < R * RO * TB; i += WG) { // WG may be under R*RO*TB
        let r = i / TB;
        let t = i % TB;
        if (tbase + t < p.t && row0 + r < p.rows) {
            kq_put((tbase + t) * p.n + p.row0 + row0 + r, red[i * WG]);
        }
    }
}

// kq_store_rows stores token t's totals of rows row0.. (a, b, c, d: four
// each, c and d with RO = 2) from thread 0.
fn kq_store_rows(t: u32, row0: u32, a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>, lid: u32) {
    if (lid != 0u || t >= p.t) {
        return;
    }
    for (var r = 0u; r < R * RO; r++) {
        let v = select(select(a, b, r >= 4u), select(c, d, r >= 12u), r >= 8u);
        if (row0 + r < p.rows) {
            kq_put(t * p.n + p.row0 + row0 + r, v[r % 4u]);
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
