// moe_gemv: the MoE's matrix-vector kernels, for the router and for decode
// (few tokens), reading the chosen experts and their weights from the route
// buffers, so a step needs no readback. Each workgroup computes R rows of one
// matrix against one activation row: its threads stride over the row's units
// (one u32 of q4 = 8 values, else 4 values), then reduce through workgroup
// memory in two steps.
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
    k: u32,    // K: row length, a multiple of 4 (of 32 for q8 and q4)
    n: u32,    // rows per expert (2F for gate_up, D for down); dense: rows in this part
    e0: u32,   // first expert of this part; dense: first row of this part
    ne: u32,   // experts in this part
    a: u32,    // A: experts per token
    t0: u32,   // first token of this chunk in x (dense, gate_up) or out (down)
    f: u32,    // F
    acc: u32,  // down: 1 adds to out (parts after the first)
    ldo: u32,  // dense: row stride of out (E)
}

@group(0) @binding(0) var<storage, read> w: array<u32>;            // (rows, K) WTYPE values of this part
@group(0) @binding(1) var<storage, read> s: array<u32>;            // (rows, K/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;      // dense, gate_up: x (T, K); down: act (nt*A, K) f32
@group(0) @binding(3) var<storage, read> ids: array<u32>;          // (nt, A) chosen experts
@group(0) @binding(4) var<storage, read> wts: array<f32>;          // (nt, A) their weights
@group(0) @binding(5) var<storage, read_write> out: array<f32>;    // dense: (nt, E); gate_up: act (nt*A, F); down: (T, D) f32
@group(0) @binding(6) var<uniform> p: Params;

var<workgroup> red: array<f32, R * WG>;
var<workgroup> red2: array<f32, R * 8u>;
var<workgroup> tots: array<f32, R>;

// units is the number of units in a row of K values.
fn units() -> u32 {
    return select(p.k / 4u, p.k / 8u, WTYPE == WTYPE_Q4);
}

// xa and xb are the x values unit u multiplies, from the activation row that
// starts at vec4 xr: the unit's first four values, and for q4 the next four.
fn xa(xr: u32, u: u32) -> vec4<f32> {
    if (WTYPE == WTYPE_Q4) {
        return x[xr + (u / 4u) * 8u + u % 4u];
    }
    return x[xr + u];
}
fn xb(xr: u32, u: u32) -> vec4<f32> {
    if (WTYPE == WTYPE_Q4) {
        return x[xr + (u / 4u) * 8u + 4u + u % 4u];
    }
    return vec4<f32>();
}

// wdot is the dot product of unit u of part-local row `row` with (a, b).
fn wdot(row: u32, u: u32, a: vec4<f32>, b: vec4<f32>) -> f32 {
    switch WTYPE {
        case 0u: {
            let i = row * p.k + 4u * u;
            return dot(vec4<f32>(bitcast<f32>(w[i]), bitcast<f32>(w[i + 1u]), bitcast<f32>(w[i + 2u]), bitcast<f32>(w[i + 3u])), a);
        }
        case 1u: {
            let i = row * (p.k / 2u) + 2u * u;
            return dot(vec4<f32>(unpack2x16float(w[i]), unpack2x16float(w[i + 1u])), a);
        }
        case 2u: {
            let g = row * (p.k / 32u) + u / 8u;
            return dot(i8x4(w[row * (p.k / 4u) + u]), a) * half_of(s[g / 2u], g);
        }
        default: {
            let q = w[row * (p.k / 8u) + u];
            let g = row * (p.k / 32u) + u / 4u;
            return (dot(q4_lo(q), a) + dot(q4_hi(q), b)) * half_of(s[g / 2u], g);
        }
    }
}

// reduce sums each of the R accumulators over the workgroup; thread r < R
// gets the total of row r.
fn reduce(acc: array<f32, R>, lid: u32) -> f32 {
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
    var tot = 0.0;
    if (lid < R) {
        for (var c = 0u; c < 8u; c++) {
            tot += red2[lid * 8u + c];
        }
    }
    return tot;
}

@compute @workgroup_size(WG)
fn dense(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.y;
    let r0 = wg.x * R;
    let xr = (p.t0 + t) * (p.k / 4u);
    var acc: array<f32, R>;
    for (var u = lid; u < units(); u += WG) {
        let a = xa(xr, u);
        let b = xb(xr, u);
        for (var r = 0u; r < R; r++) {
            acc[r] += wdot(min(r0 + r, p.n - 1u), u, a, b);
        }
    }
    let tot = reduce(acc, lid);
    if (lid < R && r0 + lid < p.n) {
        out[t * p.ldo + p.e0 + r0 + lid] = tot;
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
    for (var u = lid; u < units(); u += WG) {
        let a = xa(xr, u);
        let b = xb(xr, u);
        for (var r = 0u; r < R; r++) {
            let i = min(i0 + r % h, p.f - 1u);
            acc[r] += wdot(base + select(i, p.f + i, r >= h), u, a, b);
        }
    }
    let tot = reduce(acc, lid);
    // rows h..R-1 (the up halves) hand their totals to rows 0..h-1
    if (lid < R) {
        tots[lid] = tot;
    }
    workgroupBarrier();
    if (lid < h && i0 + lid < p.f) {
        out[sel * p.f + i0 + lid] = silu(tot) * tots[h + lid];
    }
}

@compute @workgroup_size(WG)
fn down(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.y;
    let n0 = wg.x * R;
    let nu = units();
    var acc: array<f32, R>;
    for (var idx = lid; idx < p.a * nu; idx += WG) {
        let a = idx / nu;
        let u = idx % nu;
        let sel = t * p.a + a;
        let e = ids[sel];
        if (e < p.e0 || e >= p.e0 + p.ne) {
            continue;
        }
        let wt = wts[sel];
        let xr = sel * (p.k / 4u);
        let va = xa(xr, u) * wt;
        let vb = xb(xr, u) * wt;
        let base = (e - p.e0) * p.n;
        for (var r = 0u; r < R; r++) {
            acc[r] += wdot(base + min(n0 + r, p.n - 1u), u, va, vb);
        }
    }
    let tot = reduce(acc, lid);
    if (lid < R && n0 + lid < p.n) {
        let o = (p.t0 + t) * p.n + n0 + lid;
        if (p.acc == 1u) {
            out[o] += tot;
        } else {
            out[o] = tot;
        }
    }
}
