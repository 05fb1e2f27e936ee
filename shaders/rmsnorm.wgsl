// rmsnorm: RMSNorm over segments of S values (S = len(w)); one workgroup
// per segment. Entry rms_norm: out = x / rms(x) * w. Entry add_rms_norm
// (vLLM's fused_add_rms_norm, segments are whole rows): res += x, then
// x = res / rms(res) * w. Entry qk_norm: Qwen3's per-head norm on the merged
// projection, query heads with w, key heads with w2, values untouched.

struct Params {
    s: u32,      // S: segment length
    eps: f32,
    heads: u32,  // qk_norm: H
    kv_heads: u32, // qk_norm: Hk
    row: u32,    // qk_norm: row width (H+2Hk)*Dh
    count: u32,  // segments (rms_norm, add_rms_norm)
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;   // (R, C) f32: input of rms_norm, in/out of add_rms_norm and qk_norm
@group(0) @binding(1) var<storage, read_write> res: array<f32>; // (R, C) f32: out of rms_norm, residual of add_rms_norm
@group(0) @binding(2) var<storage, read> w: array<f32>;         // (S) f32
@group(0) @binding(3) var<storage, read> w2: array<f32>;        // (S) f32, qk_norm's key weight
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
        res[base + i] = x[base + i] * scale * w[i];
    }
}

@compute @workgroup_size(WG)
fn add_rms_norm(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let seg = wg.y * nwg.x + wg.x;
    if (seg >= p.count) {
        return;
    }
    let base = seg * p.s;
    var sum = 0.0;
    for (var i = l.x; i < p.s; i += WG) {
        let v = res[base + i] + x[base + i];
        res[base + i] = v;
        sum += v * v;
    }
    let scale = inv_rms(reduce_sum(sum, l.x));
    for (var i = l.x; i < p.s; i += WG) {
        x[base + i] = res[base + i] * scale * w[i];
    }
}

@compute @workgroup_size(WG)
fn qk_norm(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let head = wg.x; // 0..H+Hk-1
    let base = wg.y * p.row + head * p.s;
    var sum = 0.0;
    for (var i = l.x; i < p.s; i += WG) {
        let v = x[base + i];
        sum += v * v;
    }
    let scale = inv_rms(reduce_sum(sum, l.x));
    let is_q = head < p.heads;
    for (var i = l.x; i < p.s; i += WG) {
        let wi = select(w2[i], w[i], is_q);
        x[base + i] = x[base + i] * scale * wi;
    }
}
