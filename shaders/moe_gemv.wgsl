// moe_gemv: the MoE's matrix-vector kernels, for the router and for decode
// (few tokens), reading the chosen experts and their weights from the route
// buffers, so a step needs no readback. Each workgroup computes R rows
// against one activation row, on matmul_gemv's pattern: its WG threads
// stride over the rows in 16-byte chunks (4 f32, 8 f16, 16 q8 or 32 q4
// values: one load, one scale, widened by mm_dot from common.wgsl), each
// chunk's activations loaded once for the R rows; the partial sums are
// reduced with subgroupAdd and one shared-memory step (a shared-memory tree
// without subgroups). The Go side picks WG as for matmul_gemv: one pass over
// a row on GPUs, one subgroup looping over it on CPU adapters.
//
// Entry dense: out[t, row0 + r] = w[r] · x[t0 + t] for the rows of one part
// of a plain (N, K) weight (the router); grid (ceil(rows/R), nt). With
// p.norm, x is read as RMSNorm(x) * nw (MoE), and the first workgroup of
// each token also writes that row to xn (t), which the experts then read.
// Entry gate_up: for slot a of token t (expert e = ids[t, a]) and gate rows
// i0..i0+R/2, act[t*A + a, i] = silu(W[e, i] · x) * (W[e, F + i] · x);
// grid (ceil(F/(R/2)), A, nt). Experts outside this part are skipped.
// With GELU = 1 the experts are GeGLUs (Gemma 4): gelu_tanh instead of silu.
// Entry down: out[t0 + t, n] (+)= Σ_a wts[t, a] * (W[e_a, n] · act[t*A + a]);
// grid (ceil(D/R), nt). The threads stride over the A experts' chunks as one
// sequence, so a short row (small F) still keeps them busy; experts outside
// this part are skipped. The first part writes, later parts add.
// WTYPE: the weight dtype (see common.wgsl).

//#define GEMV
override WTYPE: u32 = 0u;
override WG: u32 = 64u; // threads per workgroup, a power of two
// ONESG = 1 promises that the workgroup is one subgroup (WG at most the
// adapter's smallest subgroup): the reduction is then subgroupAdd alone.
override ONESG: u32 = 0u;

override R: u32 = 8u; // rows per workgroup, even, at most MAXR
override GELU: u32 = 0u; // gate_up: 1 is gelu_tanh(gate)·up, 0 silu(gate)·up

const MAXR: u32 = 16u;

//#if SUBGROUPS
// one slot per subgroup (subgroups have at least 4 invocations) per row
override RED: u32 = R * (WG / 4u);
//#else
override RED: u32 = R * WG;
//#endif

struct Params {
    k: u32,    // K: row length, a multiple of the chunk (4 f32, 8 f16, 32 q8 and q4)
    n: u32,    // rows per expert (2F for gate_up, D for down); dense: rows in this part
    e0: u32,   // first expert of this part; dense: first row of this part
    ne: u32,   // experts in this part
    a: u32,    // A: experts per token
    t0: u32,   // first token of this chunk in x (dense, gate_up) or out (down)
    f: u32,    // F
    acc: u32,  // down: 1 adds to out (parts after the first)
    ldo: u32,  // dense: row stride of out (E)
    norm: u32, // dense: 1 reads x as RMSNorm(x) * nw and writes it to xn
    eps: f32,  // dense: norm's epsilon
}

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;      // (rows, K) WTYPE values of this part, as 16-byte chunks
@group(0) @binding(1) var<storage, read> s: array<u32>;            // (rows, K/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;      // dense, gate_up: x (T, K); down: act (nt*A, K) f32
@group(0) @binding(3) var<storage, read> ids: array<u32>;          // (nt, A) chosen experts
@group(0) @binding(4) var<storage, read> wts: array<f32>;          // (nt, A) their weights
@group(0) @binding(3) var<storage, read> nw: array<vec4<f32>>;     // dense: (K) f32 norm weight, a dummy unless p.norm

@group(0) @binding(5) var<storage, read_write> out: array<f32>;    // dense: (nt, E); gate_up: act (nt*A, F); down: (T, D) f32
@group(0) @binding(6) var<storage, read_write> xn: array<vec4<f32>>; // dense: (nt, K) f32, RMSNorm(x) * nw; a dummy elsewhere
@group(0) @binding(7) var<uniform> p: Params;

var<workgroup> red: array<f32, RED>;
var<workgroup> sqr: array<f32, WG>; // dense: the norm's sums of squares
var<private> nsg: u32; // subgroups in the workgroup, set by reduce
var<private> tot: array<f32, MAXR>; // the totals, set by reduce when ONESG = 1

// cpr is the chunks in a row.
fn cpr() -> u32 {
    return p.k / (4u * mm_xpc(WTYPE));
}

// wdot is the dot product of chunk i of w (counted over the part) with v.
fn wdot(i: u32, v: MmX) -> f32 {
    let d = mm_dot(WTYPE, w[i], v);
    if (WTYPE == WTYPE_Q4) {
        return half_of(s[i >> 1u], i) * (d - v.off);
    }
    if (WTYPE == WTYPE_Q8) {
        return half_of(s[i >> 2u], i >> 1u) * (d - v.off);
    }
    return d;
}

// rows_dot returns the dot products of the rows starting at chunks roff
// with the activation row starting at vec4 xr, this thread's share.
fn rows_dot(roff: array<u32, MAXR>, xr: u32, lid: u32) -> array<f32, MAXR> {
    var acc: array<f32, MAXR>;
    for (var c = lid; c < cpr(); c += WG) {
        let v = mm_x(xr + c * mm_xpc(WTYPE));
        for (var r = 0u; r < R; r++) {
            acc[r] += wdot(roff[r] + c, v);
        }
    }
    return acc;
}

// reduce sums each of the R accumulators over the workgroup; afterwards
// total(r) is row r's sum, in every thread.
fn reduce(acc: array<f32, MAXR>, lid: u32, sg_lane: u32, sg_size: u32) {
//#if SUBGROUPS
    // Subgroups are taken to be runs of consecutive local indices, as on
    // every GPU we know of; slot lid / sg_size is then the subgroup's own.
    if (ONESG == 1u) {
        for (var r = 0u; r < R; r++) {
            tot[r] = subgroupAdd(acc[r]);
        }
        return;
    }
    nsg = (WG + sg_size - 1u) / sg_size;
    let slot = lid / sg_size;
    for (var r = 0u; r < R; r++) {
        let t = subgroupAdd(acc[r]);
        if (sg_lane == 0u) {
            red[r * (WG / 4u) + slot] = t;
        }
    }
    workgroupBarrier();
//#else
    for (var r = 0u; r < R; r++) {
        red[r * WG + lid] = acc[r];
    }
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            for (var r = 0u; r < R; r++) {
                red[r * WG + lid] += red[r * WG + lid + h];
            }
        }
        workgroupBarrier();
    }
//#endif
}

fn total(r: u32) -> f32 {
//#if SUBGROUPS
    if (ONESG == 1u) {
        return tot[r];
    }
    var t = 0.0;
    for (var i = 0u; i < nsg; i++) {
        t += red[r * (WG / 4u) + i];
    }
    return t;
//#else
    return red[r * WG];
//#endif
}

@compute @workgroup_size(WG)
fn dense(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32
//#if SUBGROUPS
        , @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32
//#endif
        ) {
    let t = wg.y;
    let r0 = wg.x * R;
    var roff: array<u32, MAXR>;
    for (var r = 0u; r < R; r++) {
        roff[r] = min(r0 + r, p.n - 1u) * cpr();
    }
    let xr = (p.t0 + t) * (p.k / 4u);
    var acc: array<f32, MAXR>;
    var sq = 0.0;
    for (var c = lid; c < cpr(); c += WG) {
        var v = mm_x(xr + c * mm_xpc(WTYPE));
        if (p.norm == 1u) {
            sq += mm_norm(&v, c * mm_xpc(WTYPE));
        }
        for (var r = 0u; r < R; r++) {
            acc[r] += wdot(roff[r] + c, v);
        }
    }
//#if SUBGROUPS
    reduce(acc, lid, sg_lane, sg_size);
//#else
    reduce(acc, lid, 0u, 1u);
//#endif
    var scale = 1.0;
    if (p.norm == 1u) {
        sqr[lid] = sq;
        workgroupBarrier();
        for (var h = WG / 2u; h > 0u; h >>= 1u) {
            if (lid < h) {
                sqr[lid] += sqr[lid + h];
            }
            workgroupBarrier();
        }
        scale = inverseSqrt(sqr[0] / f32(p.k) + p.eps);
        if (wg.x == 0u) {
            for (var c = lid; c < p.k / 4u; c += WG) {
                xn[t * (p.k / 4u) + c] = x[xr + c] * nw[c] * scale;
            }
        }
    }
    for (var r = lid; r < R && r0 + r < p.n; r += WG) {
        out[t * p.ldo + p.e0 + r0 + r] = total(r) * scale;
    }
}

@compute @workgroup_size(WG)
fn gate_up(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32
//#if SUBGROUPS
        , @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32
//#endif
        ) {
    let sel = wg.z * p.a + wg.y;
    let e = ids[sel];
    if (e < p.e0 || e >= p.e0 + p.ne) {
        return; // the whole workgroup
    }
    let h = R / 2u;
    let i0 = wg.x * h;
    let base = (e - p.e0) * p.n;
    var roff: array<u32, MAXR>; // rows i0.. of the gate, then the same of up
    for (var r = 0u; r < R; r++) {
        let i = min(i0 + r % h, p.f - 1u);
        roff[r] = (base + select(i, p.f + i, r >= h)) * cpr();
    }
    let acc = rows_dot(roff, (p.t0 + wg.z) * (p.k / 4u), lid);
//#if SUBGROUPS
    reduce(acc, lid, sg_lane, sg_size);
//#else
    reduce(acc, lid, 0u, 1u);
//#endif
    for (var i = lid; i < h && i0 + i < p.f; i += WG) {
        let g = total(i);
        out[sel * p.f + i0 + i] = select(silu(g), gelu_tanh(g), GELU == 1u) * total(h + i);
    }
}

@compute @workgroup_size(WG)
fn down(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32
//#if SUBGROUPS
        , @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32
//#endif
        ) {
    let t = wg.y;
    let n0 = wg.x * R;
    let nc = cpr();
    var roff: array<u32, MAXR>; // rows n0.. of an expert
    for (var r = 0u; r < R; r++) {
        roff[r] = min(n0 + r, p.n - 1u) * nc;
    }
    // this thread's items are lid, lid + WG, ... of the A*nc chunks, item
    // a*nc + c being chunk c of slot a: stepped without divisions
    var a = lid / nc;
    var c = lid % nc;
    let da = WG / nc;
    let dc = WG % nc;
    var acc: array<f32, MAXR>;
    while (a < p.a) {
        let sel = t * p.a + a;
        let e = ids[sel];
        if (e >= p.e0 && e < p.e0 + p.ne) {
            let v = mm_x(sel * (p.k / 4u) + c * mm_xpc(WTYPE));
            let wt = wts[sel];
            let base = (e - p.e0) * p.n * nc + c;
            for (var r = 0u; r < R; r++) {
                acc[r] += wt * wdot(base + roff[r], v);
            }
        }
        a += da;
        c += dc;
        if (c >= nc) {
            c -= nc;
            a += 1u;
        }
    }
//#if SUBGROUPS
    reduce(acc, lid, sg_lane, sg_size);
//#else
    reduce(acc, lid, 0u, 1u);
//#endif
    for (var r = lid; r < R && n0 + r < p.n; r += WG) {
        let o = (p.t0 + t) * p.n + n0 + r;
        if (p.acc == 1u) {
            out[o] += total(r);
        } else {
            out[o] = total(r);
        }
    }
}
