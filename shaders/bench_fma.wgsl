// bench_fma: roofline probe for arithmetic. Each thread runs p.iters rounds
// of eight independent vec4<f32> fma chains (64 flops a round) on values
// that stay finite, then folds them into one value that is stored only
// when it equals p.magic, so the work cannot be optimised away yet nothing
// is written. The dispatch may be 2D (x * y workgroups); WG is the
// workgroup size.

override WG: u32 = 256u;

struct Params {
    iters: u32, // rounds per thread
    magic: u32, // the fold value that would be stored (never, in practice)
}

@group(0) @binding(0) var<storage, read_write> dst: array<vec4<f32>>; // (threads), normally untouched
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn fma_loop(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let id = (wid.y * nwg.x + wid.x) * WG + lid;
    let s = f32(id & 1023u) * 1e-4;
    var a0 = vec4<f32>(s, s + 0.1, s + 0.2, s + 0.3);
    var a1 = a0 + 0.01;
    var a2 = a0 + 0.02;
    var a3 = a0 + 0.03;
    var a4 = a0 + 0.04;
    var a5 = a0 + 0.05;
    var a6 = a0 + 0.06;
    var a7 = a0 + 0.07;
    // x -> 0.999x + 0.001 converges to 1: no overflow, no denormals.
    let m = vec4<f32>(0.999);
    let c = vec4<f32>(0.001);
    for (var i = 0u; i < p.iters; i++) {
        a0 = fma(a0, m, c);
        a1 = fma(a1, m, c);
        a2 = fma(a2, m, c);
        a3 = fma(a3, m, c);
        a4 = fma(a4, m, c);
        a5 = fma(a5, m, c);
        a6 = fma(a6, m, c);
        a7 = fma(a7, m, c);
    }
    let sum = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
    if (bitcast<u32>(sum.x) == p.magic && bitcast<u32>(sum.w) == p.magic) {
        dst[id] = sum;
    }
}
