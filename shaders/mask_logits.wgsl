// mask_logits: structured output's token mask, in place: a logit whose bit
// is clear becomes -Inf. One thread per logit; grid (ceil(V/64) folded
// into x and y, T).

struct Params {
    v: u32,  // V
    wx: u32, // workgroups along x (the grid folds ceil(V/64) into x and y)
}

@group(0) @binding(0) var<storage, read_write> logits: array<f32>; // (T, V) f32
@group(0) @binding(1) var<storage, read> mask: array<u32>;         // (ceil(V/32)) bits, bit i%32 of word i/32
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.z;
    let i = (wg.y * p.wx + wg.x) * 64u + lid;
    if (i >= p.v) {
        return;
    }
    if (((mask[i >> 5u] >> (i & 31u)) & 1u) == 0u) {
        // -Inf, from a runtime value: a const-expression may not be infinite.
        logits[t * p.v + i] = bitcast<f32>(0xff800000u | (p.v & 0u));
    }
}
