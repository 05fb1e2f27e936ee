// moe_kquant: the MoE experts for K-quant weights (Q2_K .. Q6_K as ggml's
// blocks, KTYPE; see common.wgsl's KQUANT section), reading the chosen
// experts and their weights from the route buffers (moe_route), so that a
// step needs no readback. A decode-sized chunk of tokens runs entry by
// entry (token t, slot a); larger ones go to moe_gemm's tiles. A workgroup dots 8·RO weight rows with one activation row
// (common.wgsl's kq_rows: its WG threads stride along K 64 values at a
// time, dotting them with each row in turn), the sums reduced in shared
// memory. D and F are multiples of 256.
//
// Entry gate_up: for entry j = t*A + a (expert e = ids[j]) and gate rows
// i..i+4RO-1 with their up rows, act[j, i] = silu(W[e, i] · x[t0 + t]) *
// (W[e, F + i] · x[t0 + t]); grid (groups2D(F/(4RO)), nt*A). Experts
// outside this part are skipped.
// Entry down: out[t0 + t, n] (+)= Σ_a wts[t*A + a] * (W[e_a, n] · act[t*A + a])
// for rows n..n+8RO-1, over the experts in this part; grid
// (groups2D(D/(8RO)), nt).
// acc = 1 adds to out (parts after the first; MoEAdd's residual).

//#define KQUANT
//#define KQUANT_DOT
override KTYPE: u32 = 12u;
override GELU: u32 = 0u; // gate_up: 1 is gelu_tanh(gate)·up (Gemma 4's GeGLU experts), 0 silu(gate)·up
override WG: u32 = 64u; // threads per workgroup, a power of two, at most MAXWG
override RO: u32 = 1u;  // row octets per workgroup: 1, or 2 (CPU adapters: fewer, longer workgroups)
// ONESG = 1 promises that the workgroup is one subgroup (WG at most the
// adapter's smallest subgroup): the reduction is then subgroupAdd alone.
override ONESG: u32 = 0u;

const MAXWG: u32 = 64u;

struct Params {
    k: u32,   // K: row length (D for gate_up, F for down)
    n: u32,   // rows per expert (2F for gate_up, D for down)
    e0: u32,  // first expert of this part
    ne: u32,  // experts in this part
    a: u32,   // A: experts per token
    t0: u32,  // gate_up: first row of the chunk in x; down: in out
    f: u32,   // F
    acc: u32, // down: 1 adds to out
}

@group(0) @binding(0) var<storage, read> w4: array<vec4<u32>>;      // (ne*n, K/256) KTYPE blocks of this part (kq_block_bytes each)
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;       // gate_up: x (T, D); down: act (nt*A, F) f32
@group(0) @binding(2) var<storage, read> ids: array<u32>;           // (nt, A) chosen experts
@group(0) @binding(3) var<storage, read_write> act: array<f32>;     // gate_up: act (nt*A, F) f32
@group(0) @binding(3) var<storage, read> wts: array<f32>;           // down: (nt, A) expert weights
@group(0) @binding(4) var<uniform> pg: Params;                      // gate_up's params
@group(0) @binding(4) var<storage, read_write> out: array<f32>;     // down: (T, D) f32
@group(0) @binding(5) var<uniform> pd: Params;                      // down's params
@group(0) @binding(6) var<storage, read> w: array<u32>;             // w4 as words: common.wgsl's kq_get4 (unused)

var<workgroup> red: array<vec4<f32>, 4u * MAXWG>; // (4, WG): the rows' partial sums, a, b, c, d

var<private> tots: array<vec4<f32>, 4>; // the totals, set by reduce

// reduce sums a, b, c and d (c and d with RO = 2) over the workgroup;
// afterwards total(r) is row r's sum (quad r/4), in every thread.
fn reduce(lid: u32, a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>) {
//#if SUBGROUPS
    if (ONESG == 1u) {
        tots[0] = subgroupAdd(a);
        tots[1] = subgroupAdd(b);
        tots[2] = subgroupAdd(c);
        tots[3] = subgroupAdd(d);
        return;
    }
//#endif
    red[lid] = a;
    red[MAXWG + lid] = b;
    red[2u * MAXWG + lid] = c;
    red[3u * MAXWG + lid] = d;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            for (var i = 0u; i < 2u * RO; i++) {
                red[i * MAXWG + lid] += red[i * MAXWG + lid + h];
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 2u * RO; i++) {
        tots[i] = red[i * MAXWG];
    }
}

fn total(r: u32) -> f32 {
    return tots[r / 4u][r % 4u];
}

@compute @workgroup_size(WG)
fn gate_up(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = 4u * RO * (wid.y * nwg.x + wid.x);
    let j = wid.z;
    let e = ids[j];
    if (i >= pg.f || e < pg.e0 || e >= pg.e0 + pg.ne) {
        return; // the whole workgroup
    }
    let rg = vec4<u32>((e - pg.e0) * pg.n + i) + vec4<u32>(0u, 1u, 2u, 3u);
    let xo = (pg.t0 + j / pg.a) * (pg.k / 4u);
    // gate rows i.., their up rows; RO = 2: gate rows i+4.. and their up rows
    var acc = array<f32, KQ_ACC>();
    kq_rows(&acc, rg, rg + vec4<u32>(pg.f), rg + vec4<u32>(4u), rg + vec4<u32>(pg.f + 4u), 2u * RO, 1u, 0u, pg.k, xo, 0u, lid);
    reduce(lid, kq_quad(&acc, 0u), kq_quad(&acc, 4u), kq_quad(&acc, 8u), kq_quad(&acc, 12u));
    for (var r = lid; r < 4u * RO; r += WG) {
        let q = 8u * (r / 4u) + r % 4u; // gate total; up is q + 4
        let g = total(q);
        act[j * pg.f + i + r] = select(silu(g), gelu_tanh(g), GELU == 1u) * total(q + 4u);
    }
}

@compute @workgroup_size(WG)
fn down(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = 8u * RO * (wid.y * nwg.x + wid.x);
    let t = wid.z;
    if (n >= pd.n) {
        return;
    }
    var sa = vec4<f32>(0.0);
    var sb = vec4<f32>(0.0);
    var sc = vec4<f32>(0.0); // RO = 2: rows n+8..
    var sd = vec4<f32>(0.0);
    for (var a = 0u; a < pd.a; a++) {
        let j = t * pd.a + a;
        let e = ids[j];
        if (e < pd.e0 || e >= pd.e0 + pd.ne) {
            continue; // uniform across the workgroup
        }
        let r = vec4<u32>((e - pd.e0) * pd.n + n) + vec4<u32>(0u, 1u, 2u, 3u);
        // initialised explicitly: in Chromium an array declared without an
        // initialiser in a loop body kept its values from one entry to the
        // next
        var acc = array<f32, KQ_ACC>();
        kq_rows(&acc, r, r + vec4<u32>(4u), r + vec4<u32>(8u), r + vec4<u32>(12u), 2u * RO, 1u, 0u, pd.k, j * (pd.k / 4u), 0u, lid);
        sa += wts[j] * kq_quad(&acc, 0u);
        sb += wts[j] * kq_quad(&acc, 4u);
        sc += wts[j] * kq_quad(&acc, 8u);
        sd += wts[j] * kq_quad(&acc, 12u);
    }
    reduce(lid, sa, sb, sc, sd);
    for (var r = lid; r < 8u * RO; r += WG) { // WG may be 4
        let o = (pd.t0 + t) * pd.n + n + r;
        let v = total(r);
        if (pd.acc == 1u) {
            out[o] += v;
        } else {
            out[o] = v;
        }
    }
}
