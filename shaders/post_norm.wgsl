// post_norm: MatMul's epilogue after the product (Gemma): y times scale,
// then each group of g values of a row RMS-normalised, weighted by w's
// column, when norm is set (the sandwich norms: g = N; Gemma 4's per-head
// q/k/v norms and per-layer input norm: g < N), each value soft-capped,
// cap·tanh(v/cap), when cap > 0 (the final logits), then stored into out
// or, with acc, added to it. One workgroup per group of g values.

struct Params {
    n: u32,     // N: values per row (w's length)
    g: u32,     // values per normalised group; N without norm
    groups: u32, // T*N/g
    norm: u32,  // 1: RMS-normalise with w
    eps: f32,
    cap: f32,   // > 0: soft-cap
    acc: u32,   // 1: out += result
    scale: f32, // the product's factor (1: none)
}

@group(0) @binding(0) var<storage, read> y: array<f32>;         // (T, N) f32 the product
@group(0) @binding(1) var<storage, read> w: array<f32>;         // (N) f32 the norm weight (any buffer without norm)
@group(0) @binding(2) var<storage, read_write> out: array<f32>; // (T, N) f32
@group(0) @binding(3) var<uniform> p: Params;

const WG: u32 = 64u;
var<workgroup> partial: array<f32, WG>;

// soft_cap is cap·tanh(v/cap), tanh(a) = sign(a)(1 - 2/(e^(2|a|) + 1)):
// WGSL's tanh is sinh/cosh, which overflows for large |a|.
fn soft_cap(v: f32) -> f32 {
    let a = abs(v) / p.cap;
    let t = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return sign(v) * p.cap * t;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let grp = wg.y * nwg.x + wg.x;
    if (grp >= p.groups) {
        return;
    }
    let base = grp * p.g;
    let col0 = base % p.n; // w's column of the group's first value
    var scale = 1.0;
    if (p.norm == 1u) {
        var sum = 0.0;
        for (var i = l.x; i < p.g; i += WG) {
            let v = y[base + i] * p.scale;
            sum += v * v;
        }
        partial[l.x] = sum;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s = s / 2u) {
            if (l.x < s) {
                partial[l.x] = partial[l.x] + partial[l.x + s];
            }
            workgroupBarrier();
        }
        scale = 1.0 / sqrt(partial[0] / f32(p.g) + p.eps);
    }
    for (var i = l.x; i < p.g; i += WG) {
        var v = y[base + i] * p.scale;
        if (p.norm == 1u) {
            v = v * scale * w[col0 + i];
        }
        if (p.cap > 0.0) {
            v = soft_cap(v);
        }
        if (p.acc == 1u) {
            v = v + out[base + i];
        }
        out[base + i] = v;
    }
}
