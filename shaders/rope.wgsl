// rope: rotates, in place, the first `heads` heads of Dh values in each row
// of x at the positions pos; one thread per (pair i, head, token). With
// p.bias set, bias (C) is first added to the whole row (Qwen2's q/k/v
// biases, which come before RoPE): the threads then cover every head of the
// row, and those past `heads` (the values) only add it.
// The angle pos*f_i is taken in turns with extra precision: with
// pos = p3*2^18 + p2*2^12 + p1*2^6 + p0 and m_j = fract(2^(6j) f/2π),
// turns = Σ p_j m_j (mod 1). Each m_j is split into hi (18 significant bits,
// so p_j*hi is exact and its fract too) and lo.

struct Params {
    row: u32,   // C: row width of x
    heads: u32, // heads rotated per row
    half: u32,  // Dh/2
    neox: u32,  // 1: pairs (i, i+Dh/2); 0: pairs (2i, 2i+1)
    bias: u32,  // 1: add bias before rotating (C a multiple of Dh); 0: no bias
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;     // (T, C) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;         // (T) i32
@group(0) @binding(2) var<storage, read> freq: array<vec4<f32>>;  // (Dh/2, 2) m_0..m_3 hi, then lo
@group(0) @binding(3) var<storage, read> bias: array<f32>;        // (C) f32, a dummy when p.bias is 0
@group(0) @binding(4) var<uniform> p: Params;

const TAU: f32 = 6.283185307179586;

// cos_sin_turns returns (cos, sin) of t full turns, t in [0, 1), to about
// 1e-7: the quadrant is taken exactly and the rest, within ±π/4, goes through
// Taylor polynomials. Built-in sin/cos are not accurate enough on every
// adapter (SwiftShader's are off by ~1e-4).
fn cos_sin_turns(t: f32) -> vec2<f32> {
    let q = round(t * 4.0);
    let x = (t - q * 0.25) * TAU;
    let x2 = x * x;
    let s = x * (1.0 - x2 / 6.0 * (1.0 - x2 / 20.0 * (1.0 - x2 / 42.0 * (1.0 - x2 / 72.0))));
    let c = 1.0 - x2 / 2.0 * (1.0 - x2 / 12.0 * (1.0 - x2 / 30.0 * (1.0 - x2 / 56.0)));
    switch u32(q) & 3u {
        case 0u: { return vec2<f32>(c, s); }
        case 1u: { return vec2<f32>(-s, c); }
        case 2u: { return vec2<f32>(-c, -s); }
        default: { return vec2<f32>(s, -c); }
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    let t = gid.y;
    let h = k / p.half;
    let i = k % p.half;
    let hb = h * 2u * p.half; // head h's offset in a row
    var i0 = hb + 2u * i;
    var i1 = i0 + 1u;
    if (p.neox == 1u) {
        i0 = hb + i;
        i1 = hb + i + p.half;
    }
    if (p.bias == 1u) {
        if (k >= p.row / 2u) {
            return;
        }
        if (h >= p.heads) {
            // a value head: biased, not rotated
            x[t * p.row + i0] += bias[i0];
            x[t * p.row + i1] += bias[i1];
            return;
        }
    } else if (k >= p.heads * p.half) {
        return;
    }
    let ps = u32(pos[t]);
    let hi = freq[2u * i];
    let lo = freq[2u * i + 1u];
    let pv = vec4<f32>(f32(ps & 63u), f32((ps >> 6u) & 63u), f32((ps >> 12u) & 63u), f32(ps >> 18u));
    let whole = fract(pv * hi);
    let turns = (whole.x + whole.y) + (whole.z + whole.w) + dot(pv, lo);
    let cs = cos_sin_turns(fract(turns));
    let c = cs.x;
    let s = cs.y;
    var x0 = x[t * p.row + i0];
    var x1 = x[t * p.row + i1];
    if (p.bias == 1u) {
        x0 += bias[i0];
        x1 += bias[i1];
    }
    x[t * p.row + i0] = x0 * c - x1 * s;
    x[t * p.row + i1] = x0 * s + x1 * c;
}
