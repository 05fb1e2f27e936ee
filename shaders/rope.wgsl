// rope: rotates the first q_heads+kv_heads heads of every row of x at the
// positions pos, in place, with no cache (model.EncoderOps' Rope: an
// encoder's q and k); one workgroup per (head, token). With p.norm, each
// head is first RMS-normalised and weighted by qw (the first q_heads) or kw
// (Gemma's q/k norm), staged in workgroup memory as rope_kv.wgsl does. The
// rotation is rope_kv.wgsl's (turns with extra precision, cos_sin_turns).

struct Params {
    row: u32,      // C: row width of x
    half: u32,     // Dh/2
    neox: u32,     // 1: pairs (i, i+rot); 0: pairs (2i, 2i+1)
    rot: u32,      // rotated pairs per head, at most Dh/2
    q_heads: u32,  // H: heads normalised with qw; the rest with kw
    norm: u32,     // 1: RMS-normalise each head first
    eps: f32,
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;     // (T, C) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;         // (T) i32
@group(0) @binding(2) var<storage, read> freq: array<vec4<f32>>;  // (rot, 2) m_0..m_3 hi, then lo
@group(0) @binding(3) var<storage, read> qw: array<f32>;          // (Dh) f32, a dummy unless p.norm
@group(0) @binding(4) var<storage, read> kw: array<f32>;          // (Dh) f32, a dummy unless p.norm
@group(0) @binding(5) var<uniform> p: Params;

const WG: u32 = 64u;
const TAU: f32 = 6.283185307179586;

const MAXD: u32 = 256u;

var<workgroup> hv: array<f32, MAXD>; // the head, Dh <= MAXD
var<workgroup> part: array<f32, WG>;

fn cos_sin_turns(t: f32) -> vec2<f32> {
    let q = round(t * 4.0);
    let a = (t - q * 0.25) * TAU;
    let a2 = a * a;
    let s = a * (1.0 - a2 / 6.0 * (1.0 - a2 / 20.0 * (1.0 - a2 / 42.0 * (1.0 - a2 / 72.0))));
    let c = 1.0 - a2 / 2.0 * (1.0 - a2 / 12.0 * (1.0 - a2 / 30.0 * (1.0 - a2 / 56.0)));
    switch u32(q) & 3u {
        case 0u: { return vec2<f32>(c, s); }
        case 1u: { return vec2<f32>(-s, c); }
        case 2u: { return vec2<f32>(-c, -s); }
        default: { return vec2<f32>(s, -c); }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let head = wid.x;
    let t = wid.y;
    let dh = 2u * p.half;
    let base = t * p.row + head * dh;
    if (p.norm == 1u) {
        var sum = 0.0;
        for (var i = lid; i < dh; i += WG) {
            let v = x[base + i];
            hv[i] = v;
            sum += v * v;
        }
        part[lid] = sum;
        workgroupBarrier();
        for (var s = WG / 2u; s > 0u; s >>= 1u) {
            if (lid < s) {
                part[lid] += part[lid + s];
            }
            workgroupBarrier();
        }
        let scale = inverseSqrt(part[0] / f32(dh) + p.eps);
        for (var i = lid; i < dh; i += WG) {
            x[base + i] = hv[i] * scale * select(kw[i], qw[i], head < p.q_heads);
        }
        storageBarrier();
        workgroupBarrier();
    }
    let ps = u32(pos[t]);
    let pv = vec4<f32>(f32(ps & 63u), f32((ps >> 6u) & 63u), f32((ps >> 12u) & 63u), f32(ps >> 18u));
    for (var k = lid; k < p.rot; k += WG) {
        var i0 = 2u * k;
        var i1 = i0 + 1u;
        if (p.neox == 1u) {
            i0 = k;
            i1 = k + p.rot;
        }
        let whole = fract(pv * freq[2u * k]);
        let turns = (whole.x + whole.y) + (whole.z + whole.w) + dot(pv, freq[2u * k + 1u]);
        let cs = cos_sin_turns(fract(turns));
        let x0 = x[base + i0];
        let x1 = x[base + i1];
        x[base + i0] = x0 * cs.x - x1 * cs.y;
        x[base + i1] = x0 * cs.y + x1 * cs.x;
    }
}
