// rope_kv: QKNorm, RoPE (with Qwen2's bias) and the KV-cache write of one
// layer in one pass (model.Backend's RoPEKV); one workgroup per (head, token)
// of the merged projection x (T, (H+2Hk)*Dh). A head's Dh values are staged
// in workgroup memory: the query and key heads normalised (p.norm: with qw,
// kw), biased (p.bias), rotated at pos[t]; the value heads only biased. The
// result goes back to x, and the key and value heads into the cache,
// head-major (Hk, S, Dh) as kv_write.wgsl writes it: f32 bits, or f16 pairs
// when KV_F16, or when KV_Q8 int8 values four to a word (byte i of word w
// is value 4w+i) followed by the scales plane (Hk, S, Dh/B) f32, one per
// block of B values (32, or Dh where Dh is not a multiple of 32) (cpu.QuantizeKVQ8: d = max|x|/127, q = x·(1/d)
// rounded half away from zero). Positions outside [0, S) are not stored. The rotation is
// rope.wgsl's (turns with extra precision, cos_sin_turns). Only the first
// 2*rot values of a head rotate (partial rotary, Qwen3.5: rot < Dh/2),
// the rest pass through; a zero frequency leaves its pair as it is (cos 1,
// sin 0 exactly). cos and sin are multiplied by p.scale (LongRoPE's
// attention factor, Phi-3.5/Phi-4-mini). A row may hold more columns after v (Qwen3.5's output
// gate, p.row > (H+2Hk)*Dh): they are not touched.

struct Params {
    row: u32,      // C: row width of x
    heads: u32,    // H+Hk: heads rotated per row
    kv_heads: u32, // Hk
    half: u32,     // Dh/2
    neox: u32,     // 1: pairs (i, i+rot); 0: pairs (2i, 2i+1)
    bias: u32,     // 1: add bias (C) first
    norm: u32,     // 1: QKNorm the query and key heads first
    eps: f32,
    cap: u32,      // S
    rot: u32,      // rotated pairs per head: rope dim / 2, at most Dh/2
    scale: f32,    // multiplies cos and sin (LongRoPE's attention factor; 1: none)
}

@group(0) @binding(0) var<storage, read_write> x: array<f32>;     // (T, C) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;         // (T) i32
@group(0) @binding(2) var<storage, read> freq: array<vec4<f32>>;  // (rot, 2) m_0..m_3 hi, then lo
@group(0) @binding(3) var<storage, read> bias: array<f32>;        // (C) f32, a dummy unless p.bias
@group(0) @binding(4) var<storage, read> qw: array<f32>;          // (Dh) f32, a dummy unless p.norm
@group(0) @binding(5) var<storage, read> kw: array<f32>;          // (Dh) f32, a dummy unless p.norm
@group(0) @binding(6) var<storage, read_write> kc: array<u32>;    // (Hk, S, Dh) f32 bits or f16 pairs; q8: (Hk, S, Dh/4) int8×4 then (Hk, S, Dh/B) f32 scales
@group(0) @binding(7) var<storage, read_write> vc: array<u32>;    // as kc
@group(0) @binding(8) var<uniform> p: Params;

override KV_F16: bool = false;
override KV_Q8: bool = false;

const WG: u32 = 64u;
const TAU: f32 = 6.283185307179586;

var<workgroup> hv: array<f32, 512>; // the head, Dh <= 512 (Gemma 4's global layers)
var<workgroup> part: array<f32, WG>;

// cos_sin_turns is rope.wgsl's: (cos, sin) of t turns, t in [0, 1).
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
    let q_heads = p.heads - p.kv_heads;
    let rotated = head < p.heads;
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
        var v = hv[i];
        if (p.norm == 1u && rotated) {
            v *= scale * select(kw[i], qw[i], head < q_heads);
        }
        if (p.bias == 1u) {
            v += bias[head * dh + i];
        }
        hv[i] = v;
    }
    workgroupBarrier();
    if (rotated) {
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
            let cs = cos_sin_turns(fract(turns)) * p.scale;
            let x0 = hv[i0];
            let x1 = hv[i1];
            hv[i0] = x0 * cs.x - x1 * cs.y;
            hv[i1] = x0 * cs.y + x1 * cs.x;
        }
    }
    workgroupBarrier();
    for (var i = lid; i < dh; i += WG) {
        x[base + i] = hv[i];
    }
    if (head < q_heads) {
        return;
    }
    let ps = pos[t];
    if (ps < 0 || u32(ps) >= p.cap) {
        return;
    }
    let is_k = head < p.heads;
    let kh = select(head - p.heads, head - q_heads, is_k);
    let row = (kh * p.cap + u32(ps)) * dh; // the row's first value
    if (KV_Q8) {
        // Each thread packs four values, finding their block's scale
        // itself (no barrier after the returns above); a block's first
        // thread stores the scale.
        let kvb = select(dh, 32u, dh % 32u == 0u); // values per scale (model.KVQ8Block)
        let nb = dh / kvb;
        for (var j = lid; j < dh / 4u; j += WG) {
            let b = (4u * j) / kvb;
            var amax = 0.0;
            for (var i = b * kvb; i < (b + 1u) * kvb; i++) {
                amax = max(amax, abs(hv[i]));
            }
            let d = amax / 127.0;
            if ((4u * j) % kvb == 0u) {
                let si = p.kv_heads * p.cap * dh / 4u + (kh * p.cap + u32(ps)) * nb + b;
                if (is_k) {
                    kc[si] = bitcast<u32>(d);
                } else {
                    vc[si] = bitcast<u32>(d);
                }
            }
            let id = select(0.0, 1.0 / d, d != 0.0);
            let v = vec4<f32>(hv[4u * j], hv[4u * j + 1u], hv[4u * j + 2u], hv[4u * j + 3u]) * id;
            let r = clamp(sign(v) * floor(abs(v) + 0.5), vec4<f32>(-127.0), vec4<f32>(127.0));
            let q = bitcast<vec4<u32>>(vec4<i32>(r)) & vec4<u32>(255u);
            let w = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
            if (is_k) {
                kc[row / 4u + j] = w;
            } else {
                vc[row / 4u + j] = w;
            }
        }
    } else if (KV_F16) {
        for (var j = lid; j < p.half; j += WG) {
            let w = pack2x16float(vec2<f32>(hv[2u * j], hv[2u * j + 1u]));
            if (is_k) {
                kc[row / 2u + j] = w;
            } else {
                vc[row / 2u + j] = w;
            }
        }
    } else {
        for (var i = lid; i < dh; i += WG) {
            if (is_k) {
                kc[row + i] = bitcast<u32>(hv[i]);
            } else {
                vc[row + i] = bitcast<u32>(hv[i]);
            }
        }
    }
}
