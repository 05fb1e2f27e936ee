// moe_kquant: the MoE experts for K-quant weights (Q2_K .. Q6_K as ggml's
// blocks, KTYPE; see common.wgsl's KQUANT section), reading the chosen
// experts and their weights from the route buffers (moe_route), so that a
// step needs no readback. Every chunk of tokens runs entry by entry (token
// t, slot a): each workgroup reduces one weight row (gate_up: a gate row
// and its up row) against one activation row, its WG threads striding
// along K four values at a time (kq_get4), the sums reduced in shared
// memory. D and F are multiples of 256.
//
// Entry gate_up: for entry j = t*A + a (expert e = ids[j]) and gate row i,
// act[j, i] = silu(W[e, i] · x[t0 + t]) * (W[e, F + i] · x[t0 + t]); grid
// (groups2D(F), nt*A). Experts outside this part are skipped.
// Entry down: out[t0 + t, n] (+)= Σ_a wts[t*A + a] * (W[e_a, n] · act[t*A + a])
// over the experts in this part; grid (groups2D(D), nt). acc = 1 adds to out
// (parts after the first; MoEAdd's residual).

//#define KQUANT
override KTYPE: u32 = 12u;
override WG: u32 = 64u; // threads per workgroup, a power of two, at most MAXWG

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

@group(0) @binding(0) var<storage, read> w: array<u32>;             // (ne*n, K/256) KTYPE blocks of this part (kq_block_bytes each)
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;       // gate_up: x (T, D); down: act (nt*A, F) f32
@group(0) @binding(2) var<storage, read> ids: array<u32>;           // (nt, A) chosen experts
@group(0) @binding(3) var<storage, read_write> act: array<f32>;     // gate_up: act (nt*A, F) f32
@group(0) @binding(3) var<storage, read> wts: array<f32>;           // down: (nt, A) expert weights
@group(0) @binding(4) var<uniform> pg: Params;                      // gate_up's params
@group(0) @binding(4) var<storage, read_write> out: array<f32>;     // down: (T, D) f32
@group(0) @binding(5) var<uniform> pd: Params;                      // down's params

var<workgroup> red: array<vec2<f32>, MAXWG>;

// kq_row4 is values u*4..u*4+3 of row r (counted over the part) of K values.
fn kq_row4(r: u32, k: u32, u: u32) -> vec4<f32> {
    let e = 4u * u;
    return kq_get4((r * (k / 256u) + e / 256u) * kq_block_bytes(), e % 256u);
}

// reduce2 sums v over the workgroup; every thread gets the total.
fn reduce2(lid: u32, v: vec2<f32>) -> vec2<f32> {
    red[lid] = v;
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            red[lid] += red[lid + h];
        }
        workgroupBarrier();
    }
    return red[0];
}

@compute @workgroup_size(WG)
fn gate_up(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let i = wid.y * nwg.x + wid.x;
    let j = wid.z;
    let e = ids[j];
    if (i >= pg.f || e < pg.e0 || e >= pg.e0 + pg.ne) {
        return; // the whole workgroup
    }
    let rg = (e - pg.e0) * pg.n + i;
    let k4 = pg.k / 4u;
    let xo = (pg.t0 + j / pg.a) * k4;
    var s = vec2<f32>(0.0);
    for (var u = lid; u < k4; u += WG) {
        let xv = x[xo + u];
        s += vec2<f32>(dot(kq_row4(rg, pg.k, u), xv), dot(kq_row4(rg + pg.f, pg.k, u), xv));
    }
    let tot = reduce2(lid, s);
    if (lid == 0u) {
        act[j * pg.f + i] = silu(tot.x) * tot.y;
    }
}

@compute @workgroup_size(WG)
fn down(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = wid.y * nwg.x + wid.x;
    let t = wid.z;
    if (n >= pd.n) {
        return;
    }
    let k4 = pd.k / 4u;
    var s = 0.0;
    for (var a = 0u; a < pd.a; a++) {
        let j = t * pd.a + a;
        let e = ids[j];
        if (e < pd.e0 || e >= pd.e0 + pd.ne) {
            continue; // uniform across the workgroup
        }
        let r = (e - pd.e0) * pd.n + n;
        var d = 0.0;
        for (var u = lid; u < k4; u += WG) {
            d += dot(kq_row4(r, pd.k, u), x[j * k4 + u]);
        }
        s += wts[j] * d;
    }
    let tot = reduce2(lid, vec2<f32>(s, 0.0));
    if (lid == 0u) {
        let o = (pd.t0 + t) * pd.n + n;
        if (pd.acc == 1u) {
            out[o] += tot.x;
        } else {
            out[o] = tot.x;
        }
    }
}
