// layer_norm: x[t] = LN(x[t] + add[t]) · w + b per row, in place
// (model.EncoderOps' LayerNorm): mean and biased variance in two passes, one
// workgroup per row.

struct Params {
    d: u32,     // D: row width
    rows: u32,  // T
    add: u32,   // 1: add the residual add (T, D) first
    eps: f32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;   // (T, D) f32
@group(0) @binding(1) var<storage, read> add: array<f32>;       // (T, D) f32, a dummy unless p.add
@group(0) @binding(2) var<storage, read> w: array<f32>;         // (D) f32
@group(0) @binding(3) var<storage, read> b: array<f32>;         // (D) f32
@group(0) @binding(4) var<uniform> p: Params;

const WG: u32 = 64u;
var<workgroup> partial: array<f32, WG>;

fn reduce_sum(v: f32, lid: u32) -> f32 {
    partial[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            partial[lid] = partial[lid] + partial[lid + s];
        }
        workgroupBarrier();
    }
    let r = partial[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let row = wg.y * nwg.x + wg.x;
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d;
    var sum = 0.0;
    for (var i = l.x; i < p.d; i += WG) {
        var v = x[base + i];
        if (p.add == 1u) {
            v += add[base + i];
            x[base + i] = v;
        }
        sum += v;
    }
    let mean = reduce_sum(sum, l.x) / f32(p.d);
    var sq = 0.0;
    for (var i = l.x; i < p.d; i += WG) {
        let c = x[base + i] - mean;
        sq += c * c;
    }
    let inv = inverseSqrt(reduce_sum(sq, l.x) / f32(p.d) + p.eps);
    for (var i = l.x; i < p.d; i += WG) {
        x[base + i] = (x[base + i] - mean) * inv * w[i] + b[i];
    }
}
