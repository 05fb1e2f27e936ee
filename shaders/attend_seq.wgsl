// attend_seq: bidirectional GQA attention within sequences
// (model.EncoderOps' AttendSeq): token t's query head h attends, with
// key/value head h/(H/Hk), to every token of its own sequence (the
// contiguous run of equal seq ids around t) within p.radius rows of t when
// p.radius > 0 (Gemma's symmetric sliding window), and only up to t when
// p.causal (a decoder's embedding batch), softmax(q·k/√Dh)·v. One
// workgroup per (head, token); the keys go by in chunks of WG, one score
// per thread, with an online softmax: the running maximum and sum rescale
// the accumulated output (Dh values in workgroup memory) chunk by chunk.

struct Params {
    heads: u32,  // H
    dh: u32,     // Dh, at most MAXD
    t: u32,      // T
    scale: f32,  // 1/√Dh
    kv_heads: u32, // Hk, dividing H
    radius: u32,   // 0: the whole sequence; else |u - t| <= radius
    causal: u32,   // 1: only u <= t
}

@group(0) @binding(0) var<storage, read> qkv: array<f32>;        // (T, (H+2·Hk)·Dh) f32: [q | k | v]
@group(0) @binding(1) var<storage, read> seq: array<i32>;        // (T) i32
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (T, H·Dh) f32
@group(0) @binding(3) var<uniform> p: Params;

const WG: u32 = 64u;
const MAXD: u32 = 256u;

var<workgroup> qv: array<f32, MAXD>;
var<workgroup> acc: array<f32, MAXD>;
var<workgroup> sc: array<f32, WG>;
var<workgroup> red: array<f32, WG>;

fn reduce(v: f32, lid: u32, is_max: bool) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            if (is_max) {
                red[lid] = max(red[lid], red[lid + s]);
            } else {
                red[lid] = red[lid] + red[lid + s];
            }
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wid.x;
    let t = wid.y;
    let row = (p.heads + 2u * p.kv_heads) * p.dh;
    let hd = p.heads * p.dh;
    let g = h / (p.heads / p.kv_heads);
    let kb0 = hd + g * p.dh;                       // the key head's offset in a row
    let vb0 = hd + p.kv_heads * p.dh + g * p.dh;   // the value head's
    // the sequence's rows [lo, hi)
    let s = seq[t];
    var lo = t;
    while (lo > 0u && seq[lo - 1u] == s) {
        lo -= 1u;
    }
    var hi = t + 1u;
    while (hi < p.t && seq[hi] == s) {
        hi += 1u;
    }
    if (p.radius > 0u) {
        lo = max(lo, max(t, p.radius) - p.radius);
        hi = min(hi, t + p.radius + 1u);
    }
    if (p.causal == 1u) {
        hi = t + 1u;
    }
    for (var d = lid; d < p.dh; d += WG) {
        qv[d] = qkv[t * row + h * p.dh + d];
        acc[d] = 0.0;
    }
    workgroupBarrier();
    var m = -3.0e38;
    var l = 0.0;
    for (var c0 = lo; c0 < hi; c0 += WG) {
        let u = c0 + lid;
        var sv = -3.0e38;
        if (u < hi) {
            var dot = 0.0;
            let kb = u * row + kb0;
            for (var d = 0u; d < p.dh; d += 1u) {
                dot += qv[d] * qkv[kb + d];
            }
            sv = dot * p.scale;
        }
        let cm = reduce(sv, lid, true);
        let mn = max(m, cm);
        let alpha = exp(m - mn);
        var pj = 0.0;
        if (u < hi) {
            pj = exp(sv - mn);
        }
        sc[lid] = pj;
        let ps = reduce(pj, lid, false);
        l = l * alpha + ps;
        let n = min(WG, hi - c0);
        for (var d = lid; d < p.dh; d += WG) {
            var a = acc[d] * alpha;
            for (var j = 0u; j < n; j += 1u) {
                a += sc[j] * qkv[(c0 + j) * row + vb0 + d];
            }
            acc[d] = a;
        }
        m = mn;
        workgroupBarrier();
    }
    for (var d = lid; d < p.dh; d += WG) {
        out[t * hd + h * p.dh + d] = acc[d] / l;
    }
}
