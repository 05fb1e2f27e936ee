// attention_decode: flash-decoding for a few query tokens over a long
// cache. The key range of every kv head is cut into chunks of CH keys, and
// the chunks into NS splits: split w takes chunks w, w+NS, w+2NS, ... up
// to the token's position. NS is fixed when the step is recorded (from
// the cache's capacity and the adapter), so the recorded dispatch does not
// depend on the position, while the work does: splits past the position
// exit at once.
// Entry partial: one workgroup per (split, kv head and batch of QB of its
// query heads, token) keeps each query's running max m, sum l of exp(s - m)
// and unnormalised exp-weighted sum of values over its chunks (an online
// softmax: rescaled by exp(m_old - m_new) as each chunk arrives), then
// writes one (m, l, acc) partial per slice of its value threads (below).
// Entry reduce: one workgroup per (query head, token) rescales and sums the
// partials of the splits that held keys, and multiplies by sigmoid of the
// output gate when the rows carry one (Qwen3.5).
//
// Every K and V value of a chunk is loaded once for all QB query heads of
// the GQA group: for the scores a thread takes one key (LANES = 1), or
// LANES threads share a key (on a GPU: neighbouring threads then read
// neighbouring 16-byte units of one key row, so the loads coalesce, and
// each keeps its quarter of every query in registers instead of reading
// it from workgroup memory per key); for the values a thread takes one
// unit of the head over a slice of the chunk's keys (two vec4 of the
// head: an f16 unit, or with f32 heads of more than 256 two units, so
// that heads up to 512 still fit the 64 threads). Queries go in
// blocks of four, so that scores, maxima, weights and their rescaling are
// vec4 operations and every register a thread keeps is a named vector
// (SwiftShader pays dearly for indexing a local array).
//
// The cache is head-major (Hk, S, UH) in 16-byte units: 4 f32 values, or 8
// f16 values when KV_F16 (see kv_write.wgsl), or 16 int8 values when KV_Q8
// (one thread a key, QB <= 4: a unit's 16 values take the value
// registers of queries 4-7 too), whose f32 scales (one per KVB values)
// follow the values in the same buffer (rope_kv.wgsl); a key's dot and a
// value's sum are scaled per unit. Query head h reads kv head
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
    slices: u32, // S = 64/UH: partials per split
    window: u32, // sliding window: keys a token attends to at most; 0 for all
}

@group(0) @binding(0) var<storage, read> qkv: array<vec4<f32>>;        // (T, C/4) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;              // (T) i32
@group(0) @binding(2) var<storage, read> kc: array<vec4<u32>>;         // (Hk, S, UH) keys
@group(0) @binding(3) var<storage, read> vc: array<vec4<u32>>;         // (Hk, S, UH) values
@group(0) @binding(4) var<storage, read_write> part: array<vec4<f32>>; // (T, H, NS, S, Dh/4) weighted values, then (T, H, NS, S) (m, l, chunks, keys)
@group(0) @binding(5) var<uniform> p: Params;

override DH: u32 = 64u;          // Dh, a multiple of 4 (8 when KV_F16 or over 256), at most 512
override QB: u32 = 1u;           // query heads per workgroup, at most 8; QB*Dh at most 1024
override KV_F16: bool = false;
override KV_Q8: bool = false; // DH a multiple of 16, LANES 1, QB <= 4
override KVB: u32 = select(DH, 32u, DH % 32u == 0u); // values per q8 scale (model.KVQ8Block)
// LANES: threads per key for the scores, 1 or Dh/16 (Dh a multiple of 16
// with Dh/16 dividing 64, and QB at most 4): a lane holds four vec4 of
// each query in registers (the 16-byte key units lane, lane + LANES, ...).
override LANES: u32 = 1u;

const CH: u32 = 64u;             // keys per chunk = threads per workgroup
override DH4: u32 = DH / 4u;
// VP: a value thread takes two vec4 of the head, one f16 unit or (f32
// heads over 256) two f32 units, VW of them; VU threads take a key's values.
override VP: bool = !KV_Q8 && (KV_F16 || DH4 > CH);
override VW: u32 = select(1u, 2u, VP && !KV_F16);
// A q8 cache's value thread takes one 16-value unit (four vec4).
override VU: u32 = select(select(DH4, DH4 / 2u, VP), DH4 / 4u, KV_Q8);
override HI: bool = QB > 4u;     // a second block of four queries
override QB4: u32 = select(1u, 2u, HI);
const NEG: f32 = -3.0e38;
const NEG4 = vec4<f32>(NEG);

override LANED: bool = LANES > 1u;
override QS: u32 = select(QB4 * 4u * DH4, 1u, LANED);
override LP: u32 = select(1u, 2u * CH, LANED);

var<workgroup> qs: array<vec4<f32>, QS>;      // (QB4*4, Dh/4) the queries, zero past QB; unused when LANED
var<workgroup> sc: array<vec4<f32>, 2u * CH>; // (QB4, CH): scores, then exp(s - m)
var<workgroup> red: array<vec4<f32>, 16>;     // (QB4, 8) maxima of eight keys each
var<workgroup> lp: array<vec4<f32>, LP>;      // (2, CH/LANES, LANES) the lanes' partial scores, two passes; when LANED

fn units() -> u32 {
    if (KV_Q8) {
        return DH4 / 4u;
    }
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

// score4 is the dot products of queries g0..g0+3 with k at vec4 d of the head.
fn score4(g0: u32, d: u32, k: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(dot(qs[g0 * DH4 + d], k), dot(qs[(g0 + 1u) * DH4 + d], k),
        dot(qs[(g0 + 2u) * DH4 + d], k), dot(qs[(g0 + 3u) * DH4 + d], k));
}

// lane_q is the vec4 of a query (within its head) that register i of
// lane holds: the lane's key units are lane, lane + LANES, ..., each one
// vec4 of the head in f32 or two in f16.
fn lane_q(lane: u32, i: u32) -> u32 {
    if (KV_F16) {
        return 2u * (lane + LANES * (i / 2u)) + i % 2u;
    }
    return lane + LANES * i;
}

// lane_score is queries 0-3's dot products with k, their register i.
fn lane_score(i: u32, k: vec4<f32>, qr: array<vec4<f32>, 16>) -> vec4<f32> {
    return vec4<f32>(dot(qr[i], k), dot(qr[4u + i], k), dot(qr[8u + i], k), dot(qr[12u + i], k));
}

// q8_index is the word of the scale of unit u of key (or value) j of kv
// head kh in a q8 cache's buffer: the scales plane follows the Hk·S·Dh/4
// value words.
fn q8_index(kh: u32, j: u32, u: u32) -> u32 {
    return (p.heads / p.group) * p.cap * DH4 + (kh * p.cap + j) * (DH / KVB) + (16u * u) / KVB;
}

fn lo_half(w: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}

fn hi_half(w: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
}

// block_max folds the eight maxima of query block b.
fn block_max(b: u32) -> vec4<f32> {
    var m = red[b * 8u];
    for (var i = 1u; i < 8u; i++) {
        m = max(m, red[b * 8u + i]);
    }
    return m;
}

fn pick(i: u32, a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, d: vec4<f32>) -> vec4<f32> {
    return select(select(a, b, i == 1u), select(c, d, i == 3u), i >= 2u);
}

// partial: thread tid scores key tid of each chunk against the QB queries;
// for the values it owns value unit tid % VU of the head over slice
// s = tid / VU of the chunk's keys (s, s + S, ...), for all QB queries, and
// sums their weights on the way. Query g's values are in o_g (its first
// four, or four f32 values) and f_g (its last four when VP). Each slice writes its own
// partial (the running maxima are the workgroup's), so the workgroup ends
// without a barrier; the reduce sums NS*S partials.
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
    var per = select(1u, 2u, VP); // vec4 of values per value unit
    if (KV_Q8) {
        per = 4u;
    }
    let qb = t * p.row4 + h0 * DH4;
    // The lane's registers: query g's vec4 i at qr[4g + i], zero past QB.
    let lane = tid % LANES;
    var qr: array<vec4<f32>, 16>;
    if (LANED) {
        for (var g = 0u; g < 4u; g++) {
            for (var i = 0u; i < 4u; i++) {
                qr[4u * g + i] = select(vec4<f32>(0.0), qkv[qb + min(g, QB - 1u) * DH4 + lane_q(lane, i)], g < QB);
            }
        }
    } else {
        for (var i = tid; i < QB4 * 4u * DH4; i += CH) {
            qs[i] = select(vec4<f32>(0.0), qkv[qb + min(i, QB * DH4 - 1u)], i < QB * DH4);
        }
    }
    let slices = p.slices; // CH / VU, VU <= 64
    let u = tid % VU;
    let s = tid / VU;      // a slice past slices takes no values
    // Explicit initialisers throughout: on SwiftShader a var declared in a
    // loop body without one kept its value from the previous iteration.
    var mq0 = NEG4;              // running maxima of queries 0-3 (uniform)
    var mq1 = NEG4;              // and 4-7
    var ls0 = vec4<f32>(0.0);    // the slice's sums of exp(s - mq)
    var ls1 = vec4<f32>(0.0);
    var o0 = vec4<f32>(0.0); var o1 = vec4<f32>(0.0); var o2 = vec4<f32>(0.0); var o3 = vec4<f32>(0.0);
    var o4 = vec4<f32>(0.0); var o5 = vec4<f32>(0.0); var o6 = vec4<f32>(0.0); var o7 = vec4<f32>(0.0);
    var f0 = vec4<f32>(0.0); var f1 = vec4<f32>(0.0); var f2 = vec4<f32>(0.0); var f3 = vec4<f32>(0.0);
    var f4 = vec4<f32>(0.0); var f5 = vec4<f32>(0.0); var f6 = vec4<f32>(0.0); var f7 = vec4<f32>(0.0);
    var chunks = 0u;
    var keys = 0u;
    workgroupBarrier();
    for (var c = w; c < nch; c += p.ns) {
        if (c < clo) {
            continue;
        }
        let j0 = c * CH;
        let n = min(CH, last + 1u - j0);
        let skip = lo - min(lo, j0); // keys of the chunk before the window
        chunks += 1u;
        keys += n - skip;
        // Scores: key tid against queries 0-3 in s0, 4-7 in s1.
        var s0 = vec4<f32>(0.0);
        var s1 = vec4<f32>(0.0);
        let ok = tid < n && tid >= skip;
        if (LANED) {
            // Pass r: the lanes of slot tid / LANES take key r*KS + slot,
            // the slot's first lane sums their partials into sc (masked and
            // scaled). Two buffers of partials, so one barrier a pass.
            let ks = CH / LANES;
            let slot = tid / LANES;
            for (var r = 0u; r < LANES; r++) {
                let key = r * ks + slot;
                var d = vec4<f32>(0.0);
                if (key < n) {
                    let base = (kh * p.cap + j0 + key) * UH;
                    for (var j = 0u; j < UH / LANES; j++) {
                        let kw = kc[base + lane + LANES * j];
                        if (KV_F16) {
                            d += lane_score(2u * j, lo_half(kw), qr) + lane_score(2u * j + 1u, hi_half(kw), qr);
                        } else {
                            d += lane_score(j, bitcast<vec4<f32>>(kw), qr);
                        }
                    }
                }
                let half = (r % 2u) * CH;
                lp[half + tid] = d;
                workgroupBarrier();
                if (lane == 0u) {
                    var sum = vec4<f32>(0.0);
                    for (var i = 0u; i < LANES; i++) {
                        sum += lp[half + tid + i];
                    }
                    sc[key] = select(NEG4, sum * p.scale, key < n && key >= skip);
                }
            }
            workgroupBarrier();
            s0 = sc[tid];
        } else if (tid < n) {
            let base = (kh * p.cap + j0 + tid) * UH;
            for (var e = 0u; e < UH; e++) {
                let kw = kc[base + e];
                if (KV_Q8) {
                    let si = q8_index(kh, j0 + tid, e);
                    let d = bitcast<f32>(kc[si / 4u][si % 4u]);
                    s0 += (score4(0u, 4u * e, i8x4(kw.x)) + score4(0u, 4u * e + 1u, i8x4(kw.y)) +
                        score4(0u, 4u * e + 2u, i8x4(kw.z)) + score4(0u, 4u * e + 3u, i8x4(kw.w))) * d;
                } else if (KV_F16) {
                    let a = lo_half(kw);
                    let b = hi_half(kw);
                    s0 += score4(0u, 2u * e, a) + score4(0u, 2u * e + 1u, b);
                    if (HI) {
                        s1 += score4(4u, 2u * e, a) + score4(4u, 2u * e + 1u, b);
                    }
                } else {
                    let a = bitcast<vec4<f32>>(kw);
                    s0 += score4(0u, e, a);
                    if (HI) {
                        s1 += score4(4u, e, a);
                    }
                }
            }
        }
        if (!LANED) {
            s0 = select(NEG4, s0 * p.scale, ok);
            s1 = select(NEG4, s1 * p.scale, ok);
        }
        sc[tid] = s0;
        if (HI) {
            sc[CH + tid] = s1;
        }
        workgroupBarrier();

        // Chunk maxima: thread 8b+i of block b takes keys 8i..8i+7, then
        // every thread folds the eight.
        if (tid < 8u * QB4) {
            let b = tid / 8u;
            var m = NEG4;
            for (var i = (tid % 8u) * 8u; i < (tid % 8u) * 8u + 8u; i++) {
                m = max(m, sc[b * CH + i]);
            }
            red[tid] = m;
        }
        workgroupBarrier();
        let m0 = max(mq0, block_max(0u));
        let a0 = exp(mq0 - m0); // rescaling of what came before
        mq0 = m0;
        let e0 = exp(s0 - m0);  // 0 for keys outside the chunk's range
        sc[tid] = e0;
        var a1 = vec4<f32>(0.0);
        if (HI) {
            let m1 = max(mq1, block_max(1u));
            a1 = exp(mq1 - m1);
            mq1 = m1;
            let e1 = exp(s1 - m1);
            sc[CH + tid] = e1;
        }
        workgroupBarrier();

        // Weighted values, rescaled to the new maxima first.
        o0 *= a0.x; o1 *= a0.y; o2 *= a0.z; o3 *= a0.w;
        ls0 *= a0;
        ls1 *= a1;
        if (VP || KV_Q8) {
            f0 *= a0.x; f1 *= a0.y; f2 *= a0.z; f3 *= a0.w;
        }
        if (KV_Q8) {
            o4 *= a0.x; o5 *= a0.y; o6 *= a0.z; o7 *= a0.w;
            f4 *= a0.x; f5 *= a0.y; f6 *= a0.z; f7 *= a0.w;
        }
        if (HI) {
            o4 *= a1.x; o5 *= a1.y; o6 *= a1.z; o7 *= a1.w;
            if (VP) {
                f4 *= a1.x; f5 *= a1.y; f6 *= a1.z; f7 *= a1.w;
            }
        }
        if (KV_Q8 && s < slices) {
            // Unit u's 16 values: query g's in og, fg, o(g+4), f(g+4).
            var vi = (kh * p.cap + j0 + s) * UH + u;
            for (var i = s; i < n; i += slices) {
                let vw = vc[vi];
                let si = q8_index(kh, j0 + i, u);
                let r0 = sc[i];
                ls0 += r0;
                let rd = r0 * bitcast<f32>(vc[si / 4u][si % 4u]);
                let va = i8x4(vw.x);
                let vb = i8x4(vw.y);
                let vcc = i8x4(vw.z);
                let vd = i8x4(vw.w);
                o0 += rd.x * va; f0 += rd.x * vb; o4 += rd.x * vcc; f4 += rd.x * vd;
                o1 += rd.y * va; f1 += rd.y * vb; o5 += rd.y * vcc; f5 += rd.y * vd;
                o2 += rd.z * va; f2 += rd.z * vb; o6 += rd.z * vcc; f6 += rd.z * vd;
                o3 += rd.w * va; f3 += rd.w * vb; o7 += rd.w * vcc; f7 += rd.w * vd;
                vi += slices * UH;
            }
        } else if (s < slices) {
            var vi = (kh * p.cap + j0 + s) * UH + u * VW;
            for (var i = s; i < n; i += slices) {
                let vw = vc[vi];
                var v = bitcast<vec4<f32>>(vw);
                var vh = vec4<f32>(0.0);
                if (KV_F16) {
                    v = lo_half(vw);
                    vh = hi_half(vw);
                } else if (VP) {
                    vh = bitcast<vec4<f32>>(vc[vi + 1u]);
                }
                let r0 = sc[i];
                ls0 += r0;
                o0 += r0.x * v; o1 += r0.y * v; o2 += r0.z * v; o3 += r0.w * v;
                if (VP) {
                    f0 += r0.x * vh; f1 += r0.y * vh; f2 += r0.z * vh; f3 += r0.w * vh;
                }
                if (HI) {
                    let r1 = sc[CH + i];
                    ls1 += r1;
                    o4 += r1.x * v; o5 += r1.y * v; o6 += r1.z * v; o7 += r1.w * v;
                    if (VP) {
                        f4 += r1.x * vh; f5 += r1.y * vh; f6 += r1.z * vh; f7 += r1.w * vh;
                    }
                }
                vi += slices * UH;
            }
        }
        // sc and red are rewritten by the next chunk.
        workgroupBarrier();
    }

    // One partial per (query, slice): values of unit u, and from the
    // slice's first thread (m, l) and, for slice 0, the split's counts.
    if (s >= slices) {
        return;
    }
    for (var g = 0u; g < QB; g++) {
        let i = g % 4u;
        var og = pick(i, o0, o1, o2, o3);
        var fg = pick(i, f0, f1, f2, f3);
        var m = mq0[i];
        var l = ls0[i];
        if (g >= 4u) {
            og = pick(i, o4, o5, o6, o7);
            fg = pick(i, f4, f5, f6, f7);
            m = mq1[i];
            l = ls1[i];
        }
        let row = ((t * p.heads + h0 + g) * p.ns + w) * slices + s;
        let ob = row * DH4 + u * per;
        part[ob] = og;
        if (VP || KV_Q8) {
            part[ob + 1u] = fg;
        }
        if (KV_Q8) {
            part[ob + 2u] = pick(i, o4, o5, o6, o7);
            part[ob + 3u] = pick(i, f4, f5, f6, f7);
        }
        if (u == 0u) {
            let first = select(0.0, 1.0, s == 0u);
            part[p.stats + row] = vec4<f32>(m, l, first * f32(chunks), first * f32(keys));
        }
    }
}

struct ReduceParams {
    heads: u32,  // H
    cap: u32,    // S
    ns: u32,     // NS
    stats: u32,  // index of the first (m, l) entry in part_in
    slices: u32, // partials per split
    row4: u32,   // C/4: row width of gq in vec4
    gate4: u32,  // the output gate's first vec4 in a row of gq, (H+2Hk)*Dh/4; 0: no gate
}

@group(0) @binding(0) var<storage, read> part_in: array<vec4<f32>>;   // as part
@group(0) @binding(2) var<storage, read_write> out: array<vec4<f32>>; // (T, H*Dh/4) f32
@group(0) @binding(3) var<storage, read> gq: array<vec4<f32>>;        // (T, C/4) f32: qkv, whose gate (H*Dh) follows v; a dummy unless rp.gate4 > 0
@group(0) @binding(4) var<uniform> rp: ReduceParams;

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

// gate is the output's factor for unit u of head h of token t: sigmoid of
// Qwen3.5's output gate, or 1.
fn gate(t: u32, h: u32, u: u32) -> vec4<f32> {
    if (rp.gate4 == 0u) {
        return vec4<f32>(1.0);
    }
    return 1.0 / (1.0 + exp(-gq[t * rp.row4 + rp.gate4 + h * DH4 + u]));
}

// reduce: the partials of the splits that held keys, min(NS, chunks) of
// them with S partials each, are summed: the 64
// threads split them for the max and the sum; for the output each of the
// Dh/4 units gets 64/(Dh/4) threads over strided splits, whose sums are
// then added (heads over 256: each thread takes units tid, tid + 64 over
// every partial).
@compute @workgroup_size(64)
fn reduce(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = wg.x;
    let t = wg.y;
    let tid = lid.x;
    let n = min(rp.ns, u32(clamp(pos[t], 0, i32(rp.cap) - 1)) / CH + 1u) * rp.slices;
    let row = (t * rp.heads + h) * rp.ns * rp.slices;
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

    if (DH4 > 64u) {
        for (var u = tid; u < DH4; u += 64u) {
            var o = vec4<f32>(0.0);
            for (var c = 0u; c < n; c++) {
                o += exp(part_in[rp.stats + row + c].x - m) * part_in[(row + c) * DH4 + u];
            }
            out[(t * rp.heads + h) * DH4 + u] = o / l * gate(t, h, u);
        }
        return;
    }
    // Here DH4 <= 64: slices >= 1.
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
        out[(t * rp.heads + h) * DH4 + tid] = o / l * gate(t, h, tid);
    }
}
