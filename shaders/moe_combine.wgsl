// moe_combine: the weighted sum of the tiled path's per-entry expert outputs,
// out[t0 + t, d] = Σ_a wts[t, a] * y[t*A + a, d], summed in slot order;
// one thread per (t, d).

struct Params {
    d: u32,  // D
    a: u32,  // A
    t0: u32, // first token of this chunk in out
    n: u32,  // nt*D
    acc: u32, // 1: out += the sum (MoE's residual)
}

@group(0) @binding(0) var<storage, read> y: array<f32>;          // (nt*A, D) f32
@group(0) @binding(1) var<storage, read> wts: array<f32>;        // (nt, A) f32
@group(0) @binding(2) var<storage, read_write> out: array<f32>;  // (T, D) f32
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.y * nwg.x * 64u + gid.x;
    if (k >= p.n) {
        return;
    }
    let t = k / p.d;
    let d = k % p.d;
    var sum = 0.0;
    for (var a = 0u; a < p.a; a++) {
        let sel = t * p.a + a;
        sum += wts[sel] * y[sel * p.d + d];
    }
    let o = (p.t0 + t) * p.d + d;
    if (p.acc == 1u) {
        out[o] += sum;
    } else {
        out[o] = sum;
    }
}
