// attention_decode: flash-decoding for a few query tokens over a long
// cache. The key range of every kv head is cut into chunks of CH keys.
// Entry partial: one workgroup per (chunk, kv head and batch of QB of its
// query heads, token) computes each query's chunk max m, sum l of
// exp(s - m) and the unnormalised exp-weighted sum of the chunk's values.
// The grid covers the cache's capacity; workgroups whose chunk starts past
// the token's position exit at once, so the recorded dispatch does not
// depend on the position. Entry reduce: one workgroup per (query head,
// token) rescales and sums the chunks [0, pos/CH].
//
// The cache is head-major (Hk, S, UH) in 16-byte units: 4 f32 values, or 8
// f16 values when KV_F16 (see kv_write.wgsl). Query head h reads kv head
// h / G. Scores are q·k / sqrt(Dh). Workgroup memory is kept small: it is
// what SwiftShader's compile time grows with.

struct Params {
    row4: u32,  // C/4: row width of qkv in vec4
    heads: u32, // H
    group: u32, // G = H/Hk
    cap: u32,   // S
    nc: u32,    // NC = ceil(S/CH): chunks per head
    scale: f32, // 1/sqrt(Dh)
    stats: u32, // index of the first (m, l) entry in part
    nqb: u32,   // G/QB: query batches per kv head
}

@group(0) @binding(0) var<storage, read> qkv: array<vec4<f32>>;        // (T, C/4) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;              // (T) i32
@group(0) @binding(2) var<storage, read> kc: array<vec4<u32>>;         // (Hk, S, UH) keys
@group(0) @binding(3) var<storage, read> vc: array<vec4<u32>>;         // (Hk, S, UH) values
@group(0) @binding(4) var<storage, read_write> part: array<vec4<f32>>; // (T, H, NC, Dh/4) weighted values, then (T, H, NC) (m, l, 0, 0)
@group(0) @binding(5) var<uniform> p: Params;

override DH: u32 = 64u;          // Dh, a multiple of 4 (8 when KV_F16), at most 256
override QB: u32 = 1u;           // query heads per workgroup, at most 8
override KV_F16: bool = false;

const CH: u32 = 64u;             // keys per chunk = threads per workgroup
override DH4: u32 = DH / 4u;
const NEG: f32 = -3.0e38;

var<workgroup> sc: array<f32, QB * CH>; // (QB, CH) scores, then exp(s - m)
var<workgroup> red: array<f32, CH>;     // (QB, 8) maxima of eight scores each
var<workgroup> n_keys: u32;

fn units() -> u32 {
    return select(DH4, DH4 / 2u, KV_F16);
}

fn clamp_pos(t: u32) -> u32 {
    return u32(clamp(pos[t], 0, i32(p.cap) - 1));
}

@compute @workgroup_size(CH)
fn partial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let c = wg.x;
    let kh = wg.y / p.nqb;
    let h0 = kh * p.group + (wg.y % p.nqb) * QB;
    let t = wg.z;
    let tid = lid.x;
    let j0 = c * CH;
    if (tid == 0u) {
        let last = clamp_pos(t);
        n_keys = select(0u, min(CH, last + 1u - j0), j0 <= last);
    }
    let n = workgroupUniformLoad(&n_keys);
    if (n == 0u) {
        return;
    }
    // Scores: one key per thread against all QB queries, so each key is
    // read once.
    let UH = units();
    var acc: array<f32, 8>;
    if (tid < n) {
        let base = (kh * p.cap + j0 + tid) * UH;
        let qb = t * p.row4 + h0 * DH4;
        for (var u = 0u; u < UH; u++) {
            let w = kc[base + u];
            if (KV_F16) {
                let a = vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
                let b = vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
                for (var g = 0u; g < QB; g++) {
                    acc[g] += dot(qkv[qb + g * DH4 + 2u * u], a) + dot(qkv[qb + g * DH4 + 2u * u + 1u], b);
                }
            } else {
                let a = bitcast<vec4<f32>>(w);
                for (var g = 0u; g < QB; g++) {
                    acc[g] += dot(qkv[qb + g * DH4 + u], a);
                }
            }
        }
    }
    for (var g = 0u; g < QB; g++) {
        acc[g] = select(NEG, acc[g] * p.scale, tid < n);
        sc[g * CH + tid] = acc[g];
    }
    workgroupBarrier();

    // Chunk max of query g: eight threads take eight scores each, then
    // every thread folds the eight.
    let g8 = tid / 8u;
    if (g8 < QB) {
        var m = NEG;
        for (var i = (tid % 8u) * 8u; i < (tid % 8u) * 8u + 8u; i++) {
            m = max(m, sc[g8 * CH + i]);
        }
        red[tid] = m;
    }
    workgroupBarrier();
    if (tid < n) {
        for (var g = 0u; g < QB; g++) {
            sc[g * CH + tid] = exp(acc[g] - chunk_max(g));
        }
    }
    workgroupBarrier();

    // Weighted values: one 16-byte unit of one query's output per thread,
    // summing the weights on the way.
    let row0 = (t * p.heads + h0) * p.nc + c; // partial row of query g: row0 + g*NC
    let per = select(1u, 2u, KV_F16);
    for (var e = tid; e < QB * UH; e += CH) {
        let g = e / UH;
        let u = e % UH;
        var o0 = vec4<f32>(0.0);
        var o1 = vec4<f32>(0.0);
        var l = 0.0;
        var vi = (kh * p.cap + j0) * UH + u;
        for (var i = 0u; i < n; i++) {
            let pr = sc[g * CH + i];
            let w = vc[vi];
            if (KV_F16) {
                o0 += pr * vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
                o1 += pr * vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
            } else {
                o0 += pr * bitcast<vec4<f32>>(w);
            }
            l += pr;
            vi += UH;
        }
        let ob = (row0 + g * p.nc) * DH4 + u * per;
        part[ob] = o0;
        if (KV_F16) {
            part[ob + 1u] = o1;
        }
        if (u == 0u) {
            part[p.stats + row0 + g * p.nc] = vec4<f32>(chunk_max(g), l, 0.0, 0.0);
        }
    }
}

fn chunk_max(g: u32) -> f32 {
    var m = red[g * 8u];
    for (var i = 1u; i < 8u; i++) {
        m = max(m, red[g * 8u + i]);
    }
    return m;
}

struct ReduceParams {
    heads: u32, // H
    cap: u32,   // S
    nc: u32,    // NC
    stats: u32, // index of the first (m, l) entry in part_in
}

@group(0) @binding(0) var<storage, read> part_in: array<vec4<f32>>;   // as part
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>; // (T, H*Dh/4) f32
@group(0) @binding(3) var<uniform> rp: ReduceParams;

var<workgroup> rsum: array<f32, 64>;        // reduce: per-thread max, then sum
var<workgroup> racc: array<vec4<f32>, 64>;  // reduce: per-thread output slices

fn fold_max() -> f32 {
    var m = rsum[0];
    for (var i = 1u; i < 64u; i++) {
        m = max(m, rsum[i]);
    }
    return m;
}

fn fold_sum() -> f32 {
    var l = 0.0;
    for (var i = 0u; i < 64u; i++) {
        l += rsum[i];
    }
    return l;
}

// reduce: the 64 threads split the chunks for the max and the sum; for
// the output each of the Dh/4 units gets 64/(Dh/4) threads over strided
// chunks, whose sums are then added.
@compute @workgroup_size(64)
fn reduce(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = wg.x;
    let t = wg.y;
    let tid = lid.x;
    let n = u32(clamp(pos[t], 0, i32(rp.cap) - 1)) / CH + 1u;
    let row = (t * rp.heads + h) * rp.nc;
    var m = NEG;
    for (var c = tid; c < n; c += 64u) {
        m = max(m, part_in[rp.stats + row + c].x);
    }
    rsum[tid] = m;
    workgroupBarrier();
    m = fold_max();
    workgroupBarrier();
    var l = 0.0;
    for (var c = tid; c < n; c += 64u) {
        let s = part_in[rp.stats + row + c];
        l += exp(s.x - m) * s.y;
    }
    rsum[tid] = l;
    workgroupBarrier();
    l = fold_sum();

    // Dh <= 256, so DH4 <= 64: slices >= 1.
    let slices = 64u / DH4;
    let u = tid % DH4;
    if (tid < DH4 * slices) {
        var o = vec4<f32>(0.0);
        for (var c = tid / DH4; c < n; c += slices) {
            o += exp(part_in[rp.stats + row + c].x - m) * part_in[(row + c) * DH4 + u];
        }
        racc[tid] = o;
    }
    workgroupBarrier();
    if (tid < DH4) {
        var o = racc[tid];
        for (var k = 1u; k < slices; k++) {
            o += racc[k * DH4 + tid];
        }
        out[(t * rp.heads + h) * DH4 + tid] = o / l;
    }
}
