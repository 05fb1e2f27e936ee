// rope: rotates, in place, the first `heads` heads of Dh values in each row
// of x at the positions pos; one thread per (pair i, head, token).
// The angle pos*f_i is taken in turns with extra precision: with
// pos = p3*2^18 + p2*2^12 + p1*2^6 + p0, turns = p0*f/2π + p1*fract(2^6 f/2π)
// + p2*fract(2^12 f/2π) + p3*fract(2^18 f/2π), each term below 64 turns.

struct Params {
    row: u32,   // C: row width of x
    heads: u32, // heads rotated per row
    half: u32,  // Dh/2
    neox: u32,  // 1: pairs (i, i+Dh/2); 0: pairs (2i, 2i+1)
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;     // (T, C) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;         // (T) i32
@group(0) @binding(2) var<storage, read> freq: array<vec4<f32>>;  // (Dh/2) turns per position: f/2π and fract(2^6, 2^12, 2^18 · f/2π)
@group(0) @binding(3) var<uniform> p: Params;

const TAU: f32 = 6.283185307179586;

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
    let f = freq[i];
    let turns = fract(f32(ps & 63u) * f.x) + fract(f32((ps >> 6u) & 63u) * f.y)
              + fract(f32((ps >> 12u) & 63u) * f.z) + fract(f32(ps >> 18u) * f.w);
    let a = fract(turns) * TAU;
    let c = cos(a);
    let s = sin(a);
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
