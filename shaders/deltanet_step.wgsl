// deltanet_step: one token of a Gated DeltaNet layer after its conv
// (model.Backend's DeltaNet at decode; cpu.DeltaNet's loop body): the L2
// norms of q and k, the gates, the state's decay, delta-rule update and
// read-out, and the gated RMSNorm, for one value head per workgroup.
//
// Value head j reads key head j mod n_k. Each column b of its state M
// (S × S, [key a][value b]) evolves on its own:
//   u_b = Σ_a M[a][b] k_a,  d_b = beta (v_b − e^g u_b),
//   M[a][b] ← e^g M[a][b] + k_a d_b,  o_b = Σ_a M[a][b] q_a,
// so a workgroup of 256 threads takes S columns × P = 256/S slices of the
// keys: thread (b, s) sums its keys a = s, s+P, ... of column b; the P
// partials are added through workgroup memory. Threads b of one slice read
// one row of M, contiguous: the loads coalesce. The state is read twice
// (for u, then to update it and read o) and written once, in f32; the
// second read finds it in the cache on a GPU. Then
// y = RMSNorm(o)·norm ⊙ silu(z) over the head's S values.

struct Params {
    nk: u32,  // n_k: key heads
    nv: u32,  // n_v: value heads
    s: u32,   // S: head dim, at most 256
    w: u32,   // W: proj's row width
    cd: u32,  // ConvDim = (2 n_k + n_v)·S
    eps: f32, // the L2 norms' and the RMSNorm's epsilon
}

@group(0) @binding(0) var<storage, read> proj: array<f32>;      // (1, W) f32: [q k v | z | beta | alpha]
@group(0) @binding(1) var<storage, read> act: array<f32>;       // (1, ConvDim) f32 silu(conv): q, k, v
@group(0) @binding(2) var<storage, read> av: array<f32>;        // (n_v) f32 a = −exp(A_log)
@group(0) @binding(3) var<storage, read> dtb: array<f32>;       // (n_v) f32 dt_bias
@group(0) @binding(4) var<storage, read> nw: array<f32>;        // (S) f32 the gated RMSNorm's weight
@group(0) @binding(5) var<storage, read_write> st: array<f32>;  // (n_v·S, S) f32 the recurrent state
@group(0) @binding(6) var<storage, read_write> out: array<f32>; // (1, n_v·S) f32 y, head-major
@group(0) @binding(7) var<uniform> p: Params;

const WG: u32 = 256u;

var<workgroup> red: array<vec2<f32>, WG>; // reductions
var<workgroup> qs: array<f32, 256>;       // (S) q, normalised and scaled by 1/sqrt(S)
var<workgroup> ks: array<f32, 256>;       // (S) k, normalised
var<workgroup> ds: array<f32, 256>;       // (S) d, then o

// fold sums red over the workgroup into red[0]; every thread calls it.
fn fold(lid: u32) {
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            red[lid] += red[lid + h];
        }
        workgroupBarrier();
    }
}

// slices sums the P partials of column b (lid < S) from red.x.
fn slices(b: u32, np: u32) -> f32 {
    var sum = 0.0;
    for (var i = 0u; i < np; i++) {
        sum += red[i * p.s + b].x;
    }
    return sum;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let j = wid.x;
    let S = p.s;
    let kh = j % p.nk;
    var qv = 0.0;
    var kv = 0.0;
    if (lid < S) {
        qv = act[kh * S + lid];
        kv = act[(p.nk + kh) * S + lid];
    }
    red[lid] = vec2<f32>(qv * qv, kv * kv);
    fold(lid);
    let n = sqrt(red[0]);
    let iq = 1.0 / (max(n.x, p.eps) * sqrt(f32(S)));
    let ik = 1.0 / max(n.y, p.eps);
    if (lid < S) {
        qs[lid] = qv * iq;
        ks[lid] = kv * ik;
    }
    let inner = p.nv * S;
    let beta = 1.0 / (1.0 + exp(-proj[p.cd + inner + j]));
    let x = proj[p.cd + inner + p.nv + j] + dtb[j];
    let decay = exp(av[j] * select(log(1.0 + exp(x)), x, x > 20.0));

    let np = WG / S;              // slices per column
    let b = lid % S;
    let s = lid / S;
    let m0 = j * S * S + b;       // column b of the head's state
    var u = 0.0;
    workgroupBarrier();           // red[0] read, qs and ks written
    if (s < np) {
        for (var a = s; a < S; a += np) {
            u += st[m0 + a * S] * ks[a];
        }
    }
    red[lid] = vec2<f32>(u, 0.0);
    workgroupBarrier();
    if (lid < S) {
        let v = act[(2u * p.nk + j) * S + lid];
        ds[lid] = beta * (v - decay * slices(lid, np));
    }
    workgroupBarrier();
    var o = 0.0;
    if (s < np) {
        let d = ds[b];
        for (var a = s; a < S; a += np) {
            let m = decay * st[m0 + a * S] + ks[a] * d;
            st[m0 + a * S] = m;
            o += m * qs[a];
        }
    }
    workgroupBarrier();           // ds read
    red[lid] = vec2<f32>(o, 0.0);
    workgroupBarrier();
    var ob = 0.0;
    if (lid < S) {
        ob = slices(lid, np);
    }
    workgroupBarrier();           // red read
    red[lid] = vec2<f32>(ob * ob, 0.0);
    fold(lid);
    if (lid < S) {
        let scale = inverseSqrt(red[0].x / f32(S) + p.eps);
        let z = proj[p.cd + j * S + lid];
        out[j * S + lid] = ob * scale * nw[lid] * silu(z);
    }
}
