// deltanet_chunk: a Gated DeltaNet layer's prefill after its conv
// (model.Backend's DeltaNet for T > 1) in the chunked WY form of
// flash-linear-attention and llama.cpp's build_delta_net_chunking (the
// reference is cpu's deltaTask.chunk): chunks of C = 64 tokens, the last
// padded with zero k, v, beta and g = 0. With G the running sum of a
// chunk's gates, per value head j (key head j mod n_k), k and q
// L2-normalised and q scaled by 1/sqrt(S):
//   A_il = beta_i (k_i·k_l) e^(G_i−G_l), l < i;  (I + A) U = beta⊙v,
//   (I + A) W = beta⊙e^G⊙k;  v_new = U − W·M;
//   o = (q⊙e^G)·M + Σ_(l≤i) (q_i·k_l) e^(G_i−G_l) v_new_l;
//   M ← e^(G_last) M + Σ_i e^(G_last−G_i) k_i ⊗ v_new_i.
//
// Entry intra: one workgroup per (chunk, value head), every chunk at once
// (nothing in it depends on the state): the gates and norms, A and the
// masked (q_i·k_l) e^(G_i−G_l) (call it Aq), both from k and q tiles staged
// in workgroup memory, the right-hand sides, and the forward substitution
// that turns them into U and W (a thread per column: a column's
// substitution reads only that column). Everything goes to the scratch sc.
// Entry state: one workgroup per (value head, block of BB value columns),
// sequential over the chunks, the state's block in workgroup memory: each
// column of M, v_new and o evolves on its own, so the chunks' v_new, o and
// the next M are products of the scratch with the block alone. o goes to
// out, before the norm.
// Entry norm: y = RMSNorm(o)·norm ⊙ silu(z) in place on out, one
// workgroup per (value head, token).
//
// The scratch sc (f32), for a batch of tb tokens padded to tp (whole
// chunks): act (tb, ConvDim) from deltanet_conv, then G (n_v, tp), U, W,
// Q = q⊙e^G and K = k⊙e^(G_last−G) (n_v, tp, S) each, A and Aq
// (n_v, tp, C) each (the offsets: off_*).

struct Params {
    nk: u32,  // n_k: key heads
    nv: u32,  // n_v: value heads
    s: u32,   // S: head dim, at most 256
    w: u32,   // W: proj's row width
    cd: u32,  // ConvDim = (2 n_k + n_v)·S
    t0: u32,  // the batch's first row of proj and out
    tb: u32,  // tokens in the batch
    tp: u32,  // tb rounded up to whole chunks
    eps: f32, // the L2 norms' and the RMSNorm's epsilon
}

@group(0) @binding(0) var<storage, read> proj: array<f32>;      // intra, norm: (T, W) f32 [q k v | z | beta | alpha]
@group(0) @binding(1) var<storage, read> av: array<f32>;        // intra: (n_v) f32 a = −exp(A_log)
@group(0) @binding(2) var<storage, read> dtb: array<f32>;       // intra: (n_v) f32 dt_bias
@group(0) @binding(3) var<storage, read_write> sc: array<f32>;  // intra: the scratch, above
@group(0) @binding(4) var<uniform> p: Params;                   // intra
@group(0) @binding(0) var<storage, read> scr: array<f32>;       // state: the scratch, above
@group(0) @binding(1) var<storage, read_write> st: array<f32>;  // state: (n_v·S, S) f32 the recurrent state
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // state, norm: (T, n_v·S) f32 o, then y
@group(0) @binding(1) var<storage, read> nw: array<f32>;        // norm: (S) f32 the gated RMSNorm's weight
@group(0) @binding(3) var<uniform> ps: Params;                  // state, norm

const C: u32 = 64u;   // tokens per chunk
const WG: u32 = 256u;
const SD: u32 = 16u;  // dims per staged k/q tile
override BB: u32 = 16u; // state: value columns per workgroup, 16 (S <= 128) or 8; S·BB <= 2048
override TG: u32 = WG / BB; // state: thread groups, each a share of the chunk's tokens

fn off_g(q: Params) -> u32 { return q.tb * q.cd; }
fn off_u(q: Params) -> u32 { return off_g(q) + q.nv * q.tp; }
fn off_w(q: Params) -> u32 { return off_u(q) + q.nv * q.tp * q.s; }
fn off_q(q: Params) -> u32 { return off_w(q) + q.nv * q.tp * q.s; }
fn off_k(q: Params) -> u32 { return off_q(q) + q.nv * q.tp * q.s; }
fn off_a(q: Params) -> u32 { return off_k(q) + q.nv * q.tp * q.s; }
fn off_aq(q: Params) -> u32 { return off_a(q) + q.nv * q.tp * C; }

var<workgroup> sb: array<f32, C>;  // intra: beta
var<workgroup> sg: array<f32, C>;  // intra: g, then G
var<workgroup> sqn: array<f32, C>; // intra: 1/(max(‖q‖, eps)·sqrt(S))
var<workgroup> skn: array<f32, C>; // intra: 1/max(‖k‖, eps)
var<workgroup> kt: array<f32, C * SD>; // intra: (C, SD) a tile of k
var<workgroup> qt: array<f32, C * SD>; // intra: (C, SD) a tile of q

// act_at is value a of head h's q (part 0), k (1) or v (2) of the
// batch's token t, or 0 past the batch.
fn act_at(t: u32, part: u32, h: u32, a: u32) -> f32 {
    if (t >= p.tb) {
        return 0.0;
    }
    return sc[t * p.cd + (part * p.nk + h) * p.s + a];
}

@compute @workgroup_size(WG)
fn intra(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let c = wid.x;
    let j = wid.y;
    let S = p.s;
    let kh = j % p.nk;
    let r0 = c * C;              // the chunk's first row of the batch
    let inner = p.nv * S;
    if (lid < C) {
        let t = r0 + lid;
        var beta = 0.0;
        var g = 0.0;
        var qq = 0.0;
        var kk = 0.0;
        if (t < p.tb) {
            let row = (p.t0 + t) * p.w + p.cd + inner;
            beta = 1.0 / (1.0 + exp(-proj[row + j]));
            let x = proj[row + p.nv + j] + dtb[j];
            g = av[j] * select(log(1.0 + exp(x)), x, x > 20.0);
            for (var a = 0u; a < S; a++) {
                let q = act_at(t, 0u, kh, a);
                let k = act_at(t, 1u, kh, a);
                qq += q * q;
                kk += k * k;
            }
        }
        sb[lid] = beta;
        sg[lid] = g;
        sqn[lid] = select(0.0, 1.0 / (max(sqrt(qq), p.eps) * sqrt(f32(S))), t < p.tb);
        skn[lid] = select(0.0, 1.0 / max(sqrt(kk), p.eps), t < p.tb);
    }
    workgroupBarrier();
    if (lid == 0u) {
        var sum = 0.0;
        for (var i = 0u; i < C; i++) {
            sum += sg[i];
            sg[i] = sum;
        }
    }
    workgroupBarrier();
    if (lid < C) {
        sc[off_g(p) + j * p.tp + r0 + lid] = sg[lid];
    }

    // A and Aq: thread lid takes row i of the chunk and 16 of its columns
    let i = lid / 4u;
    let l0 = (lid % 4u) * 16u;
    var akk: array<f32, 16>;
    var aqk: array<f32, 16>;
    for (var d0 = 0u; d0 < S; d0 += SD) {
        for (var e = lid; e < C * SD; e += WG) {
            let r = e / SD;
            let d = d0 + e % SD;
            var k = 0.0;
            var q = 0.0;
            if (d < S) {
                k = act_at(r0 + r, 1u, kh, d);
                q = act_at(r0 + r, 0u, kh, d);
            }
            kt[e] = k;
            qt[e] = q;
        }
        workgroupBarrier();
        for (var r = 0u; r < 16u; r++) {
            let l = l0 + r;
            var sk = 0.0;
            var sq = 0.0;
            for (var d = 0u; d < SD; d++) {
                let kl = kt[l * SD + d];
                sk += kt[i * SD + d] * kl;
                sq += qt[i * SD + d] * kl;
            }
            akk[r] += sk;
            aqk[r] += sq;
        }
        workgroupBarrier();
    }
    let arow = j * p.tp * C + (r0 + i) * C;
    for (var r = 0u; r < 16u; r++) {
        let l = l0 + r;
        var x = 0.0;
        var y = 0.0;
        if (l <= i) {
            let e = exp(sg[i] - sg[l]);
            y = aqk[r] * sqn[i] * skn[l] * e;
            if (l < i) {
                x = akk[r] * sb[i] * skn[i] * skn[l] * e;
            }
        }
        sc[off_a(p) + arow + l] = x;
        sc[off_aq(p) + arow + l] = y;
    }

    // the right-hand sides, and Q and K
    let glast = sg[C - 1u];
    for (var e = lid; e < C * S; e += WG) {
        let r = e / S;
        let a = e % S;
        let o = (j * p.tp + r0 + r) * S + a;
        let k = act_at(r0 + r, 1u, kh, a) * skn[r];
        let q = act_at(r0 + r, 0u, kh, a) * sqn[r];
        let v = act_at(r0 + r, 2u, j, a);
        let eg = exp(sg[r]);
        sc[off_u(p) + o] = sb[r] * v;
        sc[off_w(p) + o] = sb[r] * eg * k;
        sc[off_q(p) + o] = q * eg;
        sc[off_k(p) + o] = k * exp(glast - sg[r]);
    }
    storageBarrier();
    workgroupBarrier();

    // forward substitution, a column of U or W per thread:
    // X_i -= Σ_(l<i) A_il X_l, rows in order
    for (var col = lid; col < 2u * S; col += WG) {
        let base = select(off_u(p), off_w(p), col >= S) + (j * p.tp + r0) * S + col % S;
        for (var r = 1u; r < C; r++) {
            var x = sc[base + r * S];
            for (var l = 0u; l < r; l++) {
                x -= sc[off_a(p) + arow0(j, r0, r) + l] * sc[base + l * S];
            }
            sc[base + r * S] = x;
        }
    }
}

// arow0 is the first value of row r of chunk row r0's A in head j.
fn arow0(j: u32, r0: u32, r: u32) -> u32 {
    return j * p.tp * C + (r0 + r) * C;
}

const MS: u32 = 2048u; // state: S·BB at most
var<workgroup> ms: array<f32, MS>;  // state: (S, BB) the state's block
var<workgroup> vn: array<f32, C * 16u>; // state: (C, BB) the chunk's v_new

@compute @workgroup_size(WG)
fn state(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let j = wid.x;
    let S = ps.s;
    let cb = lid % BB;
    let tg = lid / BB;
    let b = wid.y * BB + cb;     // this thread's value column
    let live = b < S;
    let m0 = j * S * S;
    for (var e = lid; e < S * BB; e += WG) {
        let col = wid.y * BB + e % BB;
        ms[e] = select(0.0, st[m0 + (e / BB) * S + col], col < S);
    }
    workgroupBarrier();
    let inner = ps.nv * S;
    var oacc: array<f32, 4>; // o's state part for tokens tg, tg+TG, ...
    for (var r0 = 0u; r0 < ps.tb; r0 += C) {
        let rows = (j * ps.tp + r0) * S;
        for (var n = 0u; n < C / TG; n++) {
            let i = tg + n * TG;
            var v = 0.0;
            var o = 0.0;
            if (live) {
                v = scr[off_u(ps) + rows + i * S + b];
                for (var a = 0u; a < S; a++) {
                    let m = ms[a * BB + cb];
                    v -= scr[off_w(ps) + rows + i * S + a] * m;
                    o += scr[off_q(ps) + rows + i * S + a] * m;
                }
            }
            vn[i * BB + cb] = v;
            oacc[n] = o;
        }
        workgroupBarrier();
        for (var n = 0u; n < C / TG; n++) {
            let i = tg + n * TG;
            var o = oacc[n];
            let arow = j * ps.tp * C + (r0 + i) * C;
            for (var l = 0u; l <= i; l++) {
                o += scr[off_aq(ps) + arow + l] * vn[l * BB + cb];
            }
            if (live && r0 + i < ps.tb) {
                out[(ps.t0 + r0 + i) * inner + j * S + b] = o;
            }
        }
        let decay = exp(scr[off_g(ps) + j * ps.tp + r0 + C - 1u]);
        for (var a = tg; a < S; a += TG) {
            var m = decay * ms[a * BB + cb];
            for (var i = 0u; i < C; i++) {
                m += scr[off_k(ps) + rows + i * S + a] * vn[i * BB + cb];
            }
            ms[a * BB + cb] = m;
        }
        workgroupBarrier();
    }
    for (var e = lid; e < S * BB; e += WG) {
        let col = wid.y * BB + e % BB;
        if (col < S) {
            st[m0 + (e / BB) * S + col] = ms[e];
        }
    }
}

var<workgroup> nred: array<f32, 64>; // norm: sums of squares

@compute @workgroup_size(64)
fn norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let j = wid.x;
    let t = ps.t0 + wid.y;
    let S = ps.s;
    let o0 = t * ps.nv * S + j * S;
    var sum = 0.0;
    for (var b = lid; b < S; b += 64u) {
        let o = out[o0 + b];
        sum += o * o;
    }
    nred[lid] = sum;
    workgroupBarrier();
    for (var h = 32u; h > 0u; h >>= 1u) {
        if (lid < h) {
            nred[lid] += nred[lid + h];
        }
        workgroupBarrier();
    }
    let scale = inverseSqrt(nred[0] / f32(S) + ps.eps);
    for (var b = lid; b < S; b += 64u) {
        let z = proj[t * ps.w + ps.cd + j * S + b];
        out[o0 + b] = out[o0 + b] * scale * nw[b] * silu(z);
    }
}
