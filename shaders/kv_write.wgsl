// kv_write: stores the keys and values of the merged projection into one
// layer of the KV cache at the positions pos; one thread per unit of a
// token's Hk*Dh keys (and the same unit of its values). A unit is 16 bytes
// of cache: 4 f32 values, or 8 f16 values packed in pairs when KV_F16.
// The cache is head-major, (Hk, S, Dh): unit w of head kh at position s is
// kc[(kh*S + s)*UH + w] with UH = Dh/4 (f32) or Dh/8 (f16) units per row.
// Positions outside [0, S) are skipped (the model checks them on the host).

struct Params {
    row4: u32,  // C/4: row width of qkv in vec4
    k4: u32,    // H*Dh/4: where the keys start in a row
    kv4: u32,   // Hk*Dh/4: keys' width, and the offset of the values after them
    uh: u32,    // UH: units per cache row
    dh4: u32,   // Dh/4
    cap: u32,   // S
    units: u32, // Hk*UH: units per token
}

@group(0) @binding(0) var<storage, read> qkv: array<vec4<f32>>;     // (T, C/4) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;           // (T) i32
@group(0) @binding(2) var<storage, read_write> kc: array<vec4<u32>>; // (Hk, S, UH) f32 bits or f16 pairs
@group(0) @binding(3) var<storage, read_write> vc: array<vec4<u32>>; // (Hk, S, UH) as kc
@group(0) @binding(4) var<uniform> p: Params;

override KV_F16: bool = false;

fn pack8(a: vec4<f32>, b: vec4<f32>) -> vec4<u32> {
    return vec4<u32>(pack2x16float(a.xy), pack2x16float(a.zw), pack2x16float(b.xy), pack2x16float(b.zw));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let u = gid.x;
    let t = gid.y;
    if (u >= p.units) {
        return;
    }
    let ps = pos[t];
    if (ps < 0 || u32(ps) >= p.cap) {
        return;
    }
    let kh = u / p.uh;
    let w = u % p.uh;
    let dst = (kh * p.cap + u32(ps)) * p.uh + w;
    let per = select(1u, 2u, KV_F16); // vec4 of qkv per unit
    let src = t * p.row4 + p.k4 + kh * p.dh4 + w * per;
    if (KV_F16) {
        kc[dst] = pack8(qkv[src], qkv[src + 1u]);
        vc[dst] = pack8(qkv[src + p.kv4], qkv[src + p.kv4 + 1u]);
    } else {
        kc[dst] = bitcast<vec4<u32>>(qkv[src]);
        vc[dst] = bitcast<vec4<u32>>(qkv[src + p.kv4]);
    }
}
