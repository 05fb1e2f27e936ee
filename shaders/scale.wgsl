// scale: x[i] *= s in place (Gemma's embedding scale sqrt(D)); one thread
// per element.

struct Params {
    n: u32, // elements
    s: f32, // the factor
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>; // (n) f32
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.y * nwg.x * 64u + gid.x;
    if (k >= p.n) {
        return;
    }
    x[k] = x[k] * p.s;
}
