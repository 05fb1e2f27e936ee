// gelu_gate: Gemma 4's per-layer input gate, out[t, i] =
// gelu_tanh(gate[t, i]) * src[t, col0 + i]; one thread per element.

struct Params {
    p: u32,    // P: values per row of out and gate
    c: u32,    // C: values per row of src
    col0: u32, // src's first column
    n: u32,    // T*P
}

@group(0) @binding(0) var<storage, read> gate: array<f32>;       // (T, P) f32
@group(0) @binding(1) var<storage, read> src: array<f32>;        // (T, C) f32
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (T, P) f32
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.y * nwg.x * 64u + gid.x;
    if (k >= p.n) {
        return;
    }
    let t = k / p.p;
    let i = k % p.p;
    out[k] = gelu_tanh(gate[k]) * src[t * p.c + p.col0 + i];
}
