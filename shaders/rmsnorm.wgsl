// rmsnorm: y = x / rms(x) * w over segments of S values (S = len(w)),
// one workgroup per segment: MatMul's norm where the GEMV cannot fold it
// into its own loads (prefill batches, K-quant weights).

struct Params {
    s: u32,      // S: segment length
    eps: f32,
    count: u32,  // segments
}

@group(0) @binding(0) var<storage, read> x: array<f32>;        // (R, C) f32, C a multiple of S
@group(0) @binding(1) var<storage, read_write> y: array<f32>;   // (R, C) f32
@group(0) @binding(2) var<storage, read> w: array<f32>;         // (S) f32
@group(0) @binding(3) var<uniform> p: Params;

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
    return partial[0];
}

fn inv_rms(sum: f32) -> f32 {
    return 1.0 / sqrt(sum / f32(p.s) + p.eps);
}

@compute @workgroup_size(WG)
fn rms_norm(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let seg = wg.y * nwg.x + wg.x;
    if (seg >= p.count) {
        return;
    }
    let base = seg * p.s;
    var sum = 0.0;
    for (var i = l.x; i < p.s; i += WG) {
        let v = x[base + i];
        sum += v * v;
    }
    let scale = inv_rms(reduce_sum(sum, l.x));
    for (var i = l.x; i < p.s; i += WG) {
        y[base + i] = x[base + i] * scale * w[i];
    }
}
