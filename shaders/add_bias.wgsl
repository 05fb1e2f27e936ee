// add_bias: x[t, i] += bias[i], then, with p.gelu, the erf GELU
// x·(1+erf(x/√2))/2 (Hugging Face's "gelu"), in place (model.EncoderOps'
// AddBias); one thread per element. erf is Abramowitz and Stegun 7.1.26
// (absolute error below 1.5e-7).

struct Params {
    n: u32,     // N: row width
    count: u32, // T*N
    gelu: u32,  // 1: GELU after the bias
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;   // (T, N) f32
@group(0) @binding(1) var<storage, read> bias: array<f32>;      // (N) f32
@group(0) @binding(2) var<uniform> p: Params;

fn erf_as(x: f32) -> f32 {
    let a = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
    return select(y, -y, x < 0.0);
}

fn gelu_erf(v: f32) -> f32 {
    return 0.5 * v * (1.0 + erf_as(v * 0.7071067811865476));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.y * nwg.x * 64u + gid.x;
    if (k >= p.count) {
        return;
    }
    var v = x[k] + bias[k % p.n];
    if (p.gelu == 1u) {
        v = gelu_erf(v);
    }
    x[k] = v;
}
