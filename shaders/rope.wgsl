// rope: rotates, in place, the first `heads` heads of Dh values in each row
// of x at the positions pos; one thread per (pair i, head, token).
// The angle pos*f_i is taken in turns with extra precision: with
// pos = p3*2^18 + p2*2^12 + p1*2^6 + p0 and m_j = fract(2^(6j) f/2π),
// turns = Σ p_j m_j (mod 1). Each m_j is split into hi (18 significant bits,
// so p_j*hi is exact and its fract too) and lo.

struct Params {
    row: u32,   // C: row width of x
    heads: u32, // heads rotated per row
    half: u32,  // Dh/2
    neox: u32,  // 1: pairs (i, i+Dh/2); 0: pairs (2i, 2i+1)
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;     // (T, C) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;         // (T) i32
@group(0) @binding(2) var<storage, read> freq: array<vec4<f32>>;  // (Dh/2, 2) m_0..m_3 hi, then lo
@group(0) @binding(3) var<uniform> p: Params;

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
    if (k >= p.heads * p.half) {
        return;
    }
    let h = k / p.half;
    let i = k % p.half;
    let ps = u32(pos[t]);
    let hi = freq[2u * i];
    let lo = freq[2u * i + 1u];
    let pv = vec4<f32>(f32(ps & 63u), f32((ps >> 6u) & 63u), f32((ps >> 12u) & 63u), f32(ps >> 18u));
    let whole = fract(pv * hi);
    let turns = (whole.x + whole.y) + (whole.z + whole.w) + dot(pv, lo);
    let cs = cos_sin_turns(fract(turns));
    let c = cs.x;
    let s = cs.y;
    let base = t * p.row + h * 2u * p.half;
    var i0 = base + 2u * i;
    var i1 = i0 + 1u;
    if (p.neox == 1u) {
        i0 = base + i;
        i1 = base + i + p.half;
    }
    let x0 = x[i0];
    let x1 = x[i1];
    x[i0] = x0 * c - x1 * s;
    x[i1] = x0 * s + x1 * c;
}
