// pool: one row per sequence (model.EncoderOps' Pool): the mean of its rows
// (p.mode 0), its first row (1, CLS) or its last (2); one thread per
// (value, sequence).

struct Params {
    d: u32,     // D
    seqs: u32,  // S
    mode: u32,  // 0 mean, 1 first, 2 last
}

@group(0) @binding(0) var<storage, read> x: array<f32>;          // (T, D) f32
@group(0) @binding(1) var<storage, read> bounds: array<i32>;     // (S, 2) i32: [start, end) rows
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (S, D) f32
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = gid.x;
    let s = gid.y;
    if (d >= p.d || s >= p.seqs) {
        return;
    }
    let lo = u32(bounds[2u * s]);
    let hi = u32(bounds[2u * s + 1u]);
    var v = 0.0;
    switch p.mode {
        case 1u: {
            v = x[lo * p.d + d];
        }
        case 2u: {
            v = x[(hi - 1u) * p.d + d];
        }
        default: {
            for (var t = lo; t < hi; t += 1u) {
                v += x[t * p.d + d];
            }
            v = v / f32(hi - lo);
        }
    }
    out[s * p.d + d] = v;
}
