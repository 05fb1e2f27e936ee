// gelu_mul: Gemma's GeGLU over the merged gate_up projection,
// out[t, i] = gelu_tanh(gu[t, i]) * gu[t, F + i]; one thread per element.

struct Params {
    f: u32, // F
    n: u32, // T*F
}

@group(0) @binding(0) var<storage, read> gu: array<f32>;          // (T, 2F) f32
@group(0) @binding(1) var<storage, read_write> out: array<f32>;   // (T, F) f32
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.y * nwg.x * 64u + gid.x;
    if (k >= p.n) {
        return;
    }
    let t = k / p.f;
    let i = k % p.f;
    out[k] = gelu_tanh(gu[t * 2u * p.f + i]) * gu[t * 2u * p.f + p.f + i];
}
