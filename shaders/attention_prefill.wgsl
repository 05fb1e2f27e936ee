// attention_prefill: tiled causal attention for a batch of tokens. The
// query rows of kv head kh are the (token, query head) pairs R = t*G + g
// (query head kh*G + g), so the G heads that share a kv head share its K/V
// tiles. One workgroup per (tile of BQ rows, kv head): for each tile of BK
// keys up to the tile's last position the K tile is loaded into workgroup
// memory, scored, folded into each row's running max and sum (online
// softmax), and the V tile, loaded over the K tile, is accumulated. Row R
// attends to keys [0, pos[t]], or with a sliding window to the last
// p.window of them; the tiles before every row's window are skipped. With
// an output gate (Qwen3.5) each output is multiplied by sigmoid of its
// gate value, read from qkv's row after v.
//
// The Q tile sits in workgroup memory with the K/V tile, and both products
// are register-blocked: for the scores a thread takes 2 rows by 2 keys (4
// dot products for 4 vec4 loads), for the output 2 rows by 2 units of the
// head (4 vec4 FMAs for 2 probabilities and 2 values), its accumulators
// named vectors. The online softmax of a row is one thread's (BK scores).
// BQ*Dh and BK*Dh are at most 1024 floats: workgroup memory is kept small,
// since SwiftShader's compile time grows with it.
//
// The cache is head-major (Hk, S, UH) in 16-byte units: 4 f32 values, or 8
// f16 values when KV_F16 (see kv_write.wgsl), or 16 int8 values when KV_Q8,
// whose f32 scales (one per KVB values) follow the values in the same
// buffer (rope_kv.wgsl).

struct Params {
    row4: u32,  // C/4: row width of qkv in vec4
    heads: u32, // H
    group: u32, // G = H/Hk
    cap: u32,   // S
    rows: u32,  // T*G: query rows per kv head
    scale: f32, // 1/sqrt(Dh)
    window: u32, // sliding window: keys a row attends to at most; 0 for all
    gate4: u32, // the output gate's first vec4 in a row of qkv, (H+2Hk)*Dh/4; 0: no gate
}

@group(0) @binding(0) var<storage, read> qkv: array<vec4<f32>>;       // (T, C/4) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;             // (T) i32
@group(0) @binding(2) var<storage, read> kc: array<vec4<u32>>;        // (Hk, S, UH) keys
@group(0) @binding(3) var<storage, read> vc: array<vec4<u32>>;        // (Hk, S, UH) values
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>; // (T, H*Dh/4) f32
@group(0) @binding(5) var<uniform> p: Params;

override DH: u32 = 64u;  // Dh, a multiple of 4 (8 when KV_F16), at most 512
override BQ: u32 = 16u;  // query rows per tile: even, BQ <= 16, BQ*Dh <= 1024 (so BQ/2 * ceil(Dh/8) <= 64; Dh 512: BQ 2)
override BK: u32 = 16u;  // keys per tile: even, BK <= 16, BK*Dh <= 1024
override KV_F16: bool = false;
override KV_Q8: bool = false; // DH a multiple of 16
override KVB: u32 = select(DH, 32u, DH % 32u == 0u); // values per q8 scale (model.KVQ8Block)
override DH4: u32 = DH / 4u;

const WG: u32 = 64u;
const NEG: f32 = -3.0e38;

var<workgroup> qs: array<vec4<f32>, BQ * DH4>;  // (BQ, Dh/4) Q tile
var<workgroup> kvs: array<vec4<f32>, BK * DH4>; // (BK, Dh/4) K tile, then V tile
var<workgroup> ps: array<f32, BQ * BK>;         // (BQ, BK) scores, then probabilities
var<workgroup> row_m: array<f32, BQ>;      // running max
var<workgroup> row_l: array<f32, BQ>;      // running sum of exp(s - m)
var<workgroup> row_a: array<f32, BQ>;      // this tile's rescale of the output
var<workgroup> row_n: array<u32, BQ>;      // keys the row attends to (pos+1; 0 past the batch)
var<workgroup> row_lo: array<u32, BQ>;     // first key the row attends to (sliding window; 0 without)
var<workgroup> tile_keys: u32;             // max of row_n
var<workgroup> tile_lo: u32;               // min of row_lo over the rows in the batch

// load_tile copies keys or values [k0, k0+BK) of kv head kh into kvs.
fn load_tile(values: bool, kh: u32, k0: u32, nkeys: u32, tid: u32) {
    if (KV_Q8) {
        load_tile_q8(values, kh, k0, nkeys, tid);
        return;
    }
    let UH = select(DH4, DH4 / 2u, KV_F16);
    for (var e = tid; e < BK * UH; e += WG) {
        let c = e / UH;
        let u = e % UH;
        let j = k0 + c;
        var w = vec4<u32>(0u);
        if (j < nkeys) {
            let i = (kh * p.cap + j) * UH + u;
            if (values) {
                w = vc[i];
            } else {
                w = kc[i];
            }
        }
        if (KV_F16) {
            kvs[c * DH4 + 2u * u] = vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
            kvs[c * DH4 + 2u * u + 1u] = vec4<f32>(unpack2x16float(w.z), unpack2x16float(w.w));
        } else {
            kvs[c * DH4 + u] = bitcast<vec4<f32>>(w);
        }
    }
}

// load_tile_q8 is load_tile for a q8 cache: each 16-value unit times its
// block's scale.
fn load_tile_q8(values: bool, kh: u32, k0: u32, nkeys: u32, tid: u32) {
    let UH = max(DH / 16u, 1u); // (1 keeps a q8-less DH < 16 from dividing by 0 in the constant expressions)
    let nb = DH / KVB;
    let scales = (p.heads / p.group) * p.cap * DH4; // the scales plane's first word: after Hk·S·Dh/4 value words
    for (var e = tid; e < BK * UH; e += WG) {
        let c = e / UH;
        let u = e % UH;
        let j = k0 + c;
        var w = vec4<u32>(0u);
        var d = 0.0;
        if (j < nkeys) {
            let i = (kh * p.cap + j) * UH + u;
            let si = scales + (kh * p.cap + j) * nb + (16u * u) / KVB;
            if (values) {
                w = vc[i];
                d = bitcast<f32>(vc[si / 4u][si % 4u]);
            } else {
                w = kc[i];
                d = bitcast<f32>(kc[si / 4u][si % 4u]);
            }
        }
        kvs[c * DH4 + 4u * u] = i8x4(w.x) * d;
        kvs[c * DH4 + 4u * u + 1u] = i8x4(w.y) * d;
        kvs[c * DH4 + 4u * u + 2u] = i8x4(w.z) * d;
        kvs[c * DH4 + 4u * u + 3u] = i8x4(w.w) * d;
    }
}

// score is row r's scaled score of key k0+c, NEG where the row does not
// see the key.
fn score(r: u32, c: u32, k0: u32, d: f32) -> f32 {
    return select(NEG, d * p.scale, k0 + c < row_n[r] && k0 + c >= row_lo[r]);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let kh = wg.y;
    let r0 = wg.x * BQ;
    let tid = lid.x;
    if (tid < BQ) {
        let R = r0 + tid;
        var n = 0u;
        if (R < p.rows) {
            n = u32(clamp(pos[R / p.group], 0, i32(p.cap) - 1)) + 1u;
        }
        var lo = 0xffffffffu; // past the batch: no keys
        if (R < p.rows) {
            lo = 0u;
            if (p.window != 0u && n > p.window) {
                lo = n - p.window;
            }
        }
        row_n[tid] = n;
        row_lo[tid] = lo;
        row_m[tid] = NEG;
        row_l[tid] = 0.0;
    }
    for (var e = tid; e < BQ * DH4; e += WG) {
        let R = min(r0 + e / DH4, p.rows - 1u);
        qs[e] = qkv[(R / p.group) * p.row4 + (kh * p.group + R % p.group) * DH4 + e % DH4];
    }
    workgroupBarrier();
    if (tid == 0u) {
        var n = 0u;
        var lo = 0xffffffffu;
        for (var r = 0u; r < BQ; r++) {
            n = max(n, row_n[r]);
            lo = min(lo, row_lo[r]);
        }
        tile_keys = n;
        tile_lo = lo;
    }
    let nkeys = workgroupUniformLoad(&tile_keys);
    let klo = workgroupUniformLoad(&tile_lo);

    // Score role: rows sa, sa+1 by keys sb, sb+1 (threads past BQ*BK/4 idle).
    let sa = 2u * (tid / (BK / 2u));
    let sb = 2u * (tid % (BK / 2u));
    let scorer = tid < BQ * BK / 4u;
    // Output role: rows oa, oa+1 by units ob, ob+1 of the head (an odd
    // DH4 leaves the last pair one unit, the other computed and dropped).
    let halves = (DH4 + 1u) / 2u;
    let oa = 2u * (tid / halves);
    let ob = 2u * (tid % halves);
    let owner = tid < BQ / 2u * halves;
    let ob1 = min(ob + 1u, DH4 - 1u);
    var o00 = vec4<f32>(0.0); // row oa, unit ob
    var o01 = vec4<f32>(0.0); // row oa, unit ob+1
    var o10 = vec4<f32>(0.0); // row oa+1, unit ob
    var o11 = vec4<f32>(0.0);
    for (var k0 = (klo / BK) * BK; k0 < nkeys; k0 += BK) {
        load_tile(false, kh, k0, nkeys, tid);
        workgroupBarrier();
        if (scorer) {
            var d00 = 0.0; var d01 = 0.0; var d10 = 0.0; var d11 = 0.0;
            for (var u = 0u; u < DH4; u++) {
                let q0 = qs[sa * DH4 + u];
                let q1 = qs[(sa + 1u) * DH4 + u];
                let k0v = kvs[sb * DH4 + u];
                let k1v = kvs[(sb + 1u) * DH4 + u];
                d00 += dot(q0, k0v); d01 += dot(q0, k1v);
                d10 += dot(q1, k0v); d11 += dot(q1, k1v);
            }
            ps[sa * BK + sb] = score(sa, sb, k0, d00);
            ps[sa * BK + sb + 1u] = score(sa, sb + 1u, k0, d01);
            ps[(sa + 1u) * BK + sb] = score(sa + 1u, sb, k0, d10);
            ps[(sa + 1u) * BK + sb + 1u] = score(sa + 1u, sb + 1u, k0, d11);
        }
        workgroupBarrier();
        if (tid < BQ) {
            let r = tid;
            let m0 = row_m[r];
            var m = m0;
            for (var c = 0u; c < BK; c++) {
                m = max(m, ps[r * BK + c]);
            }
            var l = 0.0;
            for (var c = 0u; c < BK; c++) {
                // 0 for keys the row does not see (NEG), unless no key of
                // the row was seen yet (m = NEG): then exp(0) must not count.
                let e = select(0.0, exp(ps[r * BK + c] - m), ps[r * BK + c] > NEG);
                ps[r * BK + c] = e;
                l += e;
            }
            let a = exp(m0 - m);
            row_a[r] = a;
            row_m[r] = m;
            row_l[r] = row_l[r] * a + l;
        }
        load_tile(true, kh, k0, nkeys, tid);
        workgroupBarrier();
        if (owner) {
            let a0 = row_a[oa];
            let a1 = row_a[oa + 1u];
            o00 *= a0; o01 *= a0; o10 *= a1; o11 *= a1;
            for (var c = 0u; c < BK; c++) {
                let p0 = ps[oa * BK + c];
                let p1 = ps[(oa + 1u) * BK + c];
                let v0 = kvs[c * DH4 + ob];
                let v1 = kvs[c * DH4 + ob1];
                o00 += p0 * v0; o01 += p0 * v1;
                o10 += p1 * v0; o11 += p1 * v1;
            }
        }
        workgroupBarrier();
    }

    if (owner) {
        put(r0 + oa, kh, ob, o00 / row_l[oa]);
        put(r0 + oa + 1u, kh, ob, o10 / row_l[oa + 1u]);
        if (ob + 1u < DH4) {
            put(r0 + oa, kh, ob + 1u, o01 / row_l[oa]);
            put(r0 + oa + 1u, kh, ob + 1u, o11 / row_l[oa + 1u]);
        }
    }
}

// put stores unit u of query row R's output, where R is in the batch.
fn put(R: u32, kh: u32, u: u32, v: vec4<f32>) {
    if (R < p.rows) {
        let t = R / p.group;
        let h = kh * p.group + R % p.group;
        var g = vec4<f32>(1.0);
        if (p.gate4 > 0u) { // Qwen3.5's output gate: o * sigmoid(gate)
            g = 1.0 / (1.0 + exp(-qkv[t * p.row4 + p.gate4 + h * DH4 + u]));
        }
        out[(t * p.heads + h) * DH4 + u] = v * g;
    }
}
