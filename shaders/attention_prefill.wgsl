// attention_prefill: tiled causal attention for a batch of tokens. The
// query rows of kv head kh are the (token, query head) pairs R = t*G + g
// (query head kh*G + g), so the G heads that share a kv head share its K/V
// tiles. One workgroup per (tile of BQ rows, kv head): for each tile of BK
// keys up to the tile's last position the K tile is loaded into workgroup
// memory, scored, folded into each row's running max and sum (online
// softmax), and the V tile, loaded over the K tile, is accumulated. Row R
// attends to keys [0, pos[t]], or with a sliding window to the last
// p.window of them; the tiles before every row's window are skipped. Queries are read from qkv where they are
// used (a cache hit after the first tile): workgroup memory is kept small,
// since SwiftShader's compile time grows with it.
//
// The cache is head-major (Hk, S, UH) in 16-byte units: 4 f32 values, or 8
// f16 values when KV_F16 (see kv_write.wgsl).

struct Params {
    row4: u32,  // C/4: row width of qkv in vec4
    heads: u32, // H
    group: u32, // G = H/Hk
    cap: u32,   // S
    rows: u32,  // T*G: query rows per kv head
    scale: f32, // 1/sqrt(Dh)
    window: u32, // sliding window: keys a row attends to at most; 0 for all
}

@group(0) @binding(0) var<storage, read> qkv: array<vec4<f32>>;       // (T, C/4) f32
@group(0) @binding(1) var<storage, read> pos: array<i32>;             // (T) i32
@group(0) @binding(2) var<storage, read> kc: array<vec4<u32>>;        // (Hk, S, UH) keys
@group(0) @binding(3) var<storage, read> vc: array<vec4<u32>>;        // (Hk, S, UH) values
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>; // (T, H*Dh/4) f32
@group(0) @binding(5) var<uniform> p: Params;

override DH: u32 = 64u;  // Dh, a multiple of 4 (8 when KV_F16), at most 256
override BQ: u32 = 16u;  // query rows per tile: BQ <= 16, BQ*Dh <= 1024
override BK: u32 = 16u;  // keys per tile: BK*Dh <= 1024
override KV_F16: bool = false;
override DH4: u32 = DH / 4u;

const WG: u32 = 64u;
const NACC: u32 = 4u; // outputs (vec4) per thread: BQ*Dh/4/WG <= 4
const NEG: f32 = -3.0e38;

var<workgroup> kvs: array<vec4<f32>, BK * DH4>; // (BK, Dh/4) K tile, then V tile
var<workgroup> ps: array<f32, BQ * BK>;             // (BQ, BK) scores, then probabilities
var<workgroup> row_m: array<f32, BQ>;      // running max
var<workgroup> row_l: array<f32, BQ>;      // running sum of exp(s - m)
var<workgroup> row_a: array<f32, BQ>;      // this tile's rescale of the output
var<workgroup> row_n: array<u32, BQ>;      // keys the row attends to (pos+1; 0 past the batch)
var<workgroup> row_lo: array<u32, BQ>;     // first key the row attends to (sliding window; 0 without)
var<workgroup> tile_keys: u32;             // max of row_n
var<workgroup> tile_lo: u32;               // min of row_lo over the rows in the batch

// load_tile copies keys or values [k0, k0+BK) of kv head kh into kvs.
fn load_tile(values: bool, kh: u32, k0: u32, nkeys: u32, tid: u32) {
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

    var acc: array<vec4<f32>, NACC>;
    for (var k0 = (klo / BK) * BK; k0 < nkeys; k0 += BK) {
        load_tile(false, kh, k0, nkeys, tid);
        workgroupBarrier();
        // Neighbouring threads score neighbouring rows against one key, a
        // broadcast read of the tile.
        for (var e = tid; e < BQ * BK; e += WG) {
            let c = e / BQ;
            let r = e % BQ;
            var s = NEG;
            if (k0 + c < row_n[r] && k0 + c >= row_lo[r]) {
                let R = r0 + r;
                let qb = (R / p.group) * p.row4 + (kh * p.group + R % p.group) * DH4;
                var d = 0.0;
                for (var u = 0u; u < DH4; u++) {
                    d += dot(qkv[qb + u], kvs[c * DH4 + u]);
                }
                s = d * p.scale;
            }
            ps[r * BK + c] = s;
        }
        workgroupBarrier();
        if (tid < BQ) {
            let r = tid;
            let valid = min(BK, row_n[r] - min(row_n[r], k0)); // keys of this tile the row sees
            let m0 = row_m[r];
            var m = m0;
            for (var c = 0u; c < valid; c++) {
                m = max(m, ps[r * BK + c]);
            }
            var l = 0.0;
            for (var c = 0u; c < BK; c++) {
                var e = 0.0;
                if (c < valid && k0 + c >= row_lo[r]) {
                    e = exp(ps[r * BK + c] - m);
                }
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
        for (var i = 0u; i < NACC; i++) {
            let e = tid + i * WG;
            if (e < BQ * DH4) {
                let r = e / DH4;
                let u = e % DH4;
                var o = acc[i] * row_a[r];
                for (var c = 0u; c < BK; c++) {
                    o += ps[r * BK + c] * kvs[c * DH4 + u];
                }
                acc[i] = o;
            }
        }
        workgroupBarrier();
    }

    for (var i = 0u; i < NACC; i++) {
        let e = tid + i * WG;
        let R = r0 + e / DH4;
        if (e < BQ * DH4 && R < p.rows) {
            let t = R / p.group;
            let h = kh * p.group + R % p.group;
            out[(t * p.heads + h) * DH4 + e % DH4] = acc[i] / row_l[e / DH4];
        }
    }
}
