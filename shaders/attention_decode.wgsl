// attention_decode: flash-decoding for a few query tokens over a long
// cache. The key range of every kv head is cut into chunks of CH keys, and
// the chunks into NS splits: split w takes chunks w, w+NS, w+2NS, ... up
// to the token's position. NS is fixed when the step is recorded (from
// the cache's capacity), so the recorded dispatch does not depend on the
// position, while the work does: splits past the position exit at once.
// Entry partial: one workgroup per (split, kv head and batch of QB of its
// query heads, token) keeps each query's running max m, sum l of exp(s - m)
// and unnormalised exp-weighted sum of values over its chunks (an online
// softmax: rescaled by exp(m_old - m_new) as each chunk arrives), then
// writes one (m, l, acc) partial. Entry reduce: one workgroup per (query
// head, token) rescales and sums the splits that held keys.
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
    ns: u32,    // NS: splits per (kv head batch, token)
    scale: f32, // 1/sqrt(Dh)
    stats: u32, // index of the first (m, l) entry in part
    nqb: u32,   // G/QB: query batches per kv head
    window: u32, // sliding window: keys a token attends to at most; 0 for all
}

@group(0) @binding(0) var<storage, read> qkv: array<vec4<f32>>;        // (T, C/4) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;              // (T) i32
@group(0) @binding(2) var<storage, read> kc: array<vec4<u32>>;         // (Hk, S, UH) keys
@group(0) @binding(3) var<storage, read> vc: array<vec4<u32>>;         // (Hk, S, UH) values
@group(0) @binding(4) var<storage, read_write> part: array<vec4<f32>>; // (T, H, NS, Dh/4) weighted values, then (T, H, NS) (m, l, chunks, keys)
@group(0) @binding(5) var<uniform> p: Params;

override DH: u32 = 64u;          // Dh, a multiple of 4 (8 when KV_F16), at most 256
override QB: u32 = 1u;           // query heads per workgroup, at most 8
override KV_F16: bool = false;

const CH: u32 = 64u;             // keys per chunk = threads per workgroup
override DH4: u32 = DH / 4u;
const NEG: f32 = -3.0e38;

var<workgroup> sc: array<f32, QB * CH>; // (QB, CH) scores, then exp(s - m)
var<workgroup> red: array<f32, CH>;     // (QB, 8) maxima of eight scores each

fn units() -> u32 {
    return select(DH4, DH4 / 2u, KV_F16);
}

// clamp_pos is the token's last key. pos is read-only, so the value is
// uniform, and so is every trip count derived from it.
fn clamp_pos(t: u32) -> u32 {
    return u32(clamp(pos[t], 0, i32(p.cap) - 1));
}

// first_key is the token's first key: 0, or with a sliding window the
// oldest of the last p.window keys up to last.
fn first_key(last: u32) -> u32 {
    if (p.window == 0u || last + 1u <= p.window) {
        return 0u;
    }
    return last + 1u - p.window;
}

// partial: the output of the workgroup's QB queries is QB*UH units; thread
// tid owns units tid + k*CH (at most 8: QB*UH <= 8*64 in f32, <= 8*32 in
// f16) and keeps their sums and the max they are scaled by in registers.
@compute @workgroup_size(CH)
fn partial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let w = wg.x;
    let kh = wg.y / p.nqb;
    let h0 = kh * p.group + (wg.y % p.nqb) * QB;
    let t = wg.z;
    let tid = lid.x;
    let last = clamp_pos(t);
    let nch = last / CH + 1u; // chunks holding keys
    if (w >= nch) {
        return;
    }
    // Chunks before the window's are skipped: a split left with none
    // writes an empty partial (m = NEG, l = 0), which the reduce weighs 0.
    let lo = first_key(last);
    let clo = lo / CH;
    let UH = units();
    let ne = (QB * UH + CH - 1u) / CH;
    let qb = t * p.row4 + h0 * DH4;
    var mq: array<f32, 8>;         // running max of query g
    var mk: array<f32, 8>;         // running max of unit k's query
    var lk: array<f32, 8>;         // running sum of exp(s - mk) of unit k's query
    var o0: array<vec4<f32>, 8>;   // unit k's weighted values (its first 4 in f16)
    var o1: array<vec4<f32>, 4>;   // f16: its last 4
    for (var g = 0u; g < QB; g++) {
        mq[g] = NEG;
    }
    for (var k = 0u; k < ne; k++) {
        mk[k] = NEG;
    }
    var chunks = 0u;
    var keys = 0u;
    for (var c = w; c < nch; c += p.ns) {
        if (c < clo) {
            continue;
        }
        let j0 = c * CH;
        let n = min(CH, last + 1u - j0);
        let skip = lo - min(lo, j0); // keys of the chunk before the window
        chunks += 1u;
        keys += n - skip;
        // Scores: one key per thread against all QB queries, so each key
        // is read once.
        var acc = array<f32, 8>();
        if (tid < n) {
            let base = (kh * p.cap + j0 + tid) * UH;
            for (var u = 0u; u < UH; u++) {
                let kw = kc[base + u];
                if (KV_F16) {
                    let a = vec4<f32>(unpack2x16float(kw.x), unpack2x16float(kw.y));
                    let b = vec4<f32>(unpack2x16float(kw.z), unpack2x16float(kw.w));
                    for (var g = 0u; g < QB; g++) {
                        acc[g] += dot(qkv[qb + g * DH4 + 2u * u], a) + dot(qkv[qb + g * DH4 + 2u * u + 1u], b);
                    }
                } else {
                    let a = bitcast<vec4<f32>>(kw);
                    for (var g = 0u; g < QB; g++) {
                        acc[g] += dot(qkv[qb + g * DH4 + u], a);
                    }
                }
            }
        }
        for (var g = 0u; g < QB; g++) {
            acc[g] = select(NEG, acc[g] * p.scale, tid < n && tid >= skip);
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
        for (var g = 0u; g < QB; g++) {
            mq[g] = max(mq[g], chunk_max(g));
            if (tid < n) {
                sc[g * CH + tid] = exp(acc[g] - mq[g]);
            }
        }
        workgroupBarrier();

        // Weighted values: each unit's sums are rescaled to the new max,
        // then take the chunk's keys, summing the weights on the way.
        for (var k = 0u; k < ne; k++) {
            let e = tid + k * CH;
            if (e < QB * UH) {
                let g = e / UH;
                let m = max(mk[k], chunk_max(g));
                let alpha = exp(mk[k] - m);
                mk[k] = m;
                var a0 = o0[k] * alpha;
                var a1 = o1[k] * alpha;
                var l = lk[k] * alpha;
                var vi = (kh * p.cap + j0) * UH + e % UH;
                for (var i = 0u; i < n; i++) {
                    let pr = sc[g * CH + i];
                    let vw = vc[vi];
                    if (KV_F16) {
                        a0 += pr * vec4<f32>(unpack2x16float(vw.x), unpack2x16float(vw.y));
                        a1 += pr * vec4<f32>(unpack2x16float(vw.z), unpack2x16float(vw.w));
                    } else {
                        a0 += pr * bitcast<vec4<f32>>(vw);
                    }
                    l += pr;
                    vi += UH;
                }
                o0[k] = a0;
                if (KV_F16) {
                    o1[k] = a1;
                }
                lk[k] = l;
            }
        }
        // sc and red are rewritten by the next chunk.
        workgroupBarrier();
    }

    let row0 = (t * p.heads + h0) * p.ns + w; // partial row of query g: row0 + g*NS
    let per = select(1u, 2u, KV_F16);
    for (var k = 0u; k < ne; k++) {
        let e = tid + k * CH;
        if (e < QB * UH) {
            let g = e / UH;
            let u = e % UH;
            let row = row0 + g * p.ns;
            let ob = row * DH4 + u * per;
            part[ob] = o0[k];
            if (KV_F16) {
                part[ob + 1u] = o1[k];
            }
            if (u == 0u) {
                part[p.stats + row] = vec4<f32>(mk[k], lk[k], f32(chunks), f32(keys));
            }
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
    ns: u32,    // NS
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

// reduce: the splits that held keys, min(NS, chunks), are summed: the 64
// threads split them for the max and the sum; for the output each of the
// Dh/4 units gets 64/(Dh/4) threads over strided splits, whose sums are
// then added.
@compute @workgroup_size(64)
fn reduce(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = wg.x;
    let t = wg.y;
    let tid = lid.x;
    let n = min(rp.ns, u32(clamp(pos[t], 0, i32(rp.cap) - 1)) / CH + 1u);
    let row = (t * rp.heads + h) * rp.ns;
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
