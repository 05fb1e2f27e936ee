// moe_gemv: the MoE's matrix-vector kernels, for the router and for decode
// (few tokens), reading the chosen experts and their weights from the route
// buffers, so a step needs no readback. Each workgroup computes R rows of one
// matrix against one activation row: its threads stride over the rows in
// 16-byte chunks (4 f32, 8 f16, 16 q8 or 32 q4 values: one load, one scale),
// each chunk's activations loaded once for the R rows, then reduce through
// workgroup memory in two steps.
//
// Entry dense: out[t, row0 + r] = w[r] · x[t0 + t] for the rows of one part
// of a plain (N, K) weight (the router); grid (ceil(rows/R), nt).
// Entry gate_up: for slot a of token t (expert e = ids[t, a]) and gate rows
// i0..i0+R/2, act[t*A + a, i] = silu(W[e, i] · x) * (W[e, F + i] · x);
// grid (ceil(F/(R/2)), A, nt). Experts outside this part are skipped.
// Entry down: out[t0 + t, n] (+)= Σ_a wts[t, a] * (W[e_a, n] · act[t*A + a]);
// grid (ceil(D/R), nt). The first part writes, later parts add.
// WTYPE: the weight dtype (see common.wgsl).

override WTYPE: u32 = 0u;
override WG: u32 = 64u; // threads per workgroup: a multiple of 8, at least 8*R

const R: u32 = 8u; // rows per workgroup

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
}

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;      // (rows, K) WTYPE values of this part, as 16-byte chunks
@group(0) @binding(1) var<storage, read> s: array<u32>;            // (rows, K/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;      // dense, gate_up: x (T, K); down: act (nt*A, K) f32
@group(0) @binding(3) var<storage, read> ids: array<u32>;          // (nt, A) chosen experts
@group(0) @binding(4) var<storage, read> wts: array<f32>;          // (nt, A) their weights
@group(0) @binding(5) var<storage, read_write> out: array<f32>;    // dense: (nt, E); gate_up: act (nt*A, F); down: (T, D) f32
@group(0) @binding(6) var<uniform> p: Params;

var<workgroup> red: array<f32, R * WG>;
var<workgroup> red2: array<f32, R * 8u>;

// xpc is the activation vec4s a chunk multiplies; cpr the chunks in a row.
fn xpc() -> u32 {
    switch WTYPE {
        case 0u: { return 1u; }
        case 1u: { return 2u; }
        case 2u: { return 4u; }
        default: { return 8u; }
    }
}
fn cpr() -> u32 {
    return p.k / (4u * xpc());
}

// Xc holds one chunk's activations (the first xpc() vectors).
struct Xc {
    v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>,
    v4: vec4<f32>, v5: vec4<f32>, v6: vec4<f32>, v7: vec4<f32>,
}

// xload reads chunk c's activations from the row starting at vec4 xr,
// scaled by sc.
fn xload(xr: u32, c: u32, sc: f32) -> Xc {
    let o = xr + c * xpc();
    var v: Xc;
    v.v0 = x[o] * sc;
    if (WTYPE != WTYPE_F32) {
        v.v1 = x[o + 1u] * sc;
    }
    if (WTYPE == WTYPE_Q8 || WTYPE == WTYPE_Q4) {
        v.v2 = x[o + 2u] * sc;
        v.v3 = x[o + 3u] * sc;
    }
    if (WTYPE == WTYPE_Q4) {
        v.v4 = x[o + 4u] * sc;
        v.v5 = x[o + 5u] * sc;
        v.v6 = x[o + 6u] * sc;
        v.v7 = x[o + 7u] * sc;
    }
    return v;
}

// cdot is the dot product of chunk c of part-local row `row` with v.
fn cdot(row: u32, c: u32, v: Xc) -> f32 {
    let i = row * cpr() + c;
    let q = w[i];
    switch WTYPE {
        case 0u: {
            return dot(bitcast<vec4<f32>>(q), v.v0);
        }
        case 1u: {
            return dot(vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y)), v.v0)
                 + dot(vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)), v.v1);
        }
        case 2u: {
            let d = dot(i8x4(q.x), v.v0) + dot(i8x4(q.y), v.v1) + dot(i8x4(q.z), v.v2) + dot(i8x4(q.w), v.v3);
            return d * half_of(s[i / 4u], i / 2u);
        }
        default: {
            let d = dot(q4_lo(q.x), v.v0) + dot(q4_lo(q.y), v.v1) + dot(q4_lo(q.z), v.v2) + dot(q4_lo(q.w), v.v3)
                  + dot(q4_hi(q.x), v.v4) + dot(q4_hi(q.y), v.v5) + dot(q4_hi(q.z), v.v6) + dot(q4_hi(q.w), v.v7);
            return d * half_of(s[i / 2u], i);
        }
    }
}

// reduce sums each of the R accumulators over the workgroup in two steps:
// afterwards red2[8r .. 8r+7] holds row r's eight partial sums.
fn reduce(acc: array<f32, R>, lid: u32) {
    for (var r = 0u; r < R; r++) {
        red[r * WG + lid] = acc[r];
    }
    workgroupBarrier();
    let l = WG / 8u;
    if (lid < R * 8u) {
        let base = (lid / 8u) * WG + (lid % 8u) * l;
        var sum = 0.0;
        for (var j = 0u; j < l; j++) {
            sum += red[base + j];
        }
        red2[lid] = sum;
    }
    workgroupBarrier();
}

// total is row r's sum, after reduce.
fn total(r: u32) -> f32 {
    var tot = 0.0;
    for (var c = 0u; c < 8u; c++) {
        tot += red2[r * 8u + c];
    }
    return tot;
}

@compute @workgroup_size(WG)
fn dense(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.y;
    let r0 = wg.x * R;
    let xr = (p.t0 + t) * (p.k / 4u);
    var acc: array<f32, R>;
    for (var c = lid; c < cpr(); c += WG) {
        let v = xload(xr, c, 1.0);
        for (var r = 0u; r < R; r++) {
            acc[r] += cdot(min(r0 + r, p.n - 1u), c, v);
        }
    }
    reduce(acc, lid);
    if (lid < R && r0 + lid < p.n) {
        out[t * p.ldo + p.e0 + r0 + lid] = total(lid);
    }
}

@compute @workgroup_size(WG)
fn gate_up(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let sel = wg.z * p.a + wg.y;
    let e = ids[sel];
    if (e < p.e0 || e >= p.e0 + p.ne) {
        return;
    }
    let h = R / 2u;
    let i0 = wg.x * h;
    let base = (e - p.e0) * p.n;
    let xr = (p.t0 + wg.z) * (p.k / 4u);
    var acc: array<f32, R>;
    for (var c = lid; c < cpr(); c += WG) {
        let v = xload(xr, c, 1.0);
        for (var r = 0u; r < R; r++) {
            let i = min(i0 + r % h, p.f - 1u);
            acc[r] += cdot(base + select(i, p.f + i, r >= h), c, v);
        }
    }
    reduce(acc, lid);
    if (lid < h && i0 + lid < p.f) {
        out[sel * p.f + i0 + lid] = silu(total(lid)) * total(h + lid);
    }
}

@compute @workgroup_size(WG)
fn down(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.y;
    let n0 = wg.x * R;
    let nc = cpr();
    var acc: array<f32, R>;
    for (var idx = lid; idx < p.a * nc; idx += WG) {
        let a = idx / nc;
        let c = idx % nc;
        let sel = t * p.a + a;
        let e = ids[sel];
        if (e < p.e0 || e >= p.e0 + p.ne) {
            continue;
        }
        let v = xload(sel * (p.k / 4u), c, wts[sel]);
        let base = (e - p.e0) * p.n;
        for (var r = 0u; r < R; r++) {
            acc[r] += cdot(base + min(n0 + r, p.n - 1u), c, v);
        }
    }
    reduce(acc, lid);
    if (lid < R && n0 + lid < p.n) {
        let o = (p.t0 + t) * p.n + n0 + lid;
        if (p.acc == 1u) {
            out[o] += total(lid);
        } else {
            out[o] = total(lid);
        }
    }
}
