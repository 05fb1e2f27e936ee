// Package gputest holds what the WebGPU tests of gpu and gpu/webgpu share.
package gputest

// AddWGSL: out = a + b elementwise. The trivial kernel of the binding tests
// (and the bandwidth baseline of the attention benchmark); it bounds-checks
// because N need not be a multiple of 64. Bindings: a, b (N) f32 read,
// out (N) f32 read_write, a uniform {n: u32}; entry point main, workgroup
// size 64. A test's own, so not among the shaders the engine embeds.
const AddWGSL = `struct Params {
    n: u32, // N
}

@group(0) @binding(0) var<storage, read> a: array<f32>;         // (N) f32
@group(0) @binding(1) var<storage, read> b: array<f32>;         // (N) f32
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // (N) f32
@group(0) @binding(3) var<uniform> params: Params;              // n = N

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.n) {
        return;
    }
    out[i] = a[i] + b[i];
}
`
