// moe_gemm: the MoE's tiled kernels for prefill. moe_group has grouped the
// chunk's (token, slot) entries by expert into tiles of at most TT entries of
// one expert; a workgroup multiplies RT rows of that expert's matrix by the
// tile's TT activation rows, so each expert's weights are read once per tile,
// not once per token. Weights are dequantised into workgroup memory KT values
// at a time, a 16-byte chunk per load; each thread accumulates 4 rows by 2
// entries, reading one vec4 of weights and one vec2 of activations per k.
//
// Entry gate_up: tile rows are F-rows i0..i0+RT/2 of the gate and the same
// rows of the up half; act[entry, i] = silu(gate · x) * (up · x), with x the
// entry's token row. Grid (ceil(F/(RT/2)), max tiles).
// Entry down: y[entry, n] = W[e, n] · act[entry] for rows n0..n0+RT.
// Grid (ceil(D/RT), max tiles). Tiles past the table's count, or of experts
// outside this part, return at once.
// WTYPE: the weight dtype (see common.wgsl); KTYPE, when not 0, a K-quant
// instead (ggml's blocks, dequantised four values at a time by common.wgsl's
// kq_get4; D and F multiples of 256).

//#define KQUANT
override WTYPE: u32 = 0u;
override KTYPE: u32 = 0u;
override GELU: u32 = 0u; // gate_up: 1 is gelu_tanh(gate)·up (Gemma 4's GeGLU experts), 0 silu(gate)·up

const WG: u32 = 64u;
const RT: u32 = 32u; // rows per tile
const TT: u32 = 16u; // entries per tile
const KT: u32 = 32u; // values of K per step
const NONE: u32 = 0xffffffffu;

struct Params {
    k: u32,  // K: row length, a multiple of the chunk (4 f32, 8 f16, 32 q8 and q4)
    n: u32,  // rows per expert: 2F (gate_up) or D (down)
    e0: u32, // first expert of this part
    ne: u32, // experts in this part
    a: u32,  // A
    t0: u32, // gate_up: first token of this chunk in x
    f: u32,  // F
}

@group(0) @binding(0) var<storage, read> w4: array<vec4<u32>>;     // (rows, K) WTYPE values of this part, as 16-byte chunks
@group(0) @binding(1) var<storage, read> s: array<u32>;            // (rows, K/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;      // gate_up: x (T, D); down: act (nt*A, F) f32
@group(0) @binding(3) var<storage, read> order: array<u32>;        // (nt*A) entries grouped by expert
@group(0) @binding(4) var<storage, read> tiles: array<vec4<u32>>;  // moe_group's tile table
@group(0) @binding(5) var<storage, read_write> out: array<f32>;    // gate_up: act (nt*A, F); down: y (nt*A, D) f32
@group(0) @binding(6) var<storage, read> w: array<u32>;            // w4 again as words: KTYPE's (rows, K/256) blocks
@group(0) @binding(7) var<uniform> p: Params;

// Tile row r is lane r%4 of quad r/4. gate_up: a quad holds the gate rows
// of F-rows i, i+1 (i = i0 + 2*quad), then their up rows; down: rows
// n0 + r. Thread (quad, pair) = (lid % 8, lid / 8) accumulates its quad's 4
// rows for entries 2*pair and 2*pair+1.
var<workgroup> ws: array<vec4<f32>, KT * RT / 4u>; // [k][quad]
var<workgroup> xs: array<vec2<f32>, KT * TT / 2u>; // [k][pair]
var<workgroup> ent: array<u32, TT>;

// vpc is the values in a 16-byte chunk, or a K-quant's kq_get4.
fn vpc() -> u32 {
    if (KTYPE != 0u) {
        return 4u;
    }
    switch WTYPE {
        case 0u: { return 4u; }
        case 1u: { return 8u; }
        case 2u: { return 16u; }
        default: { return 32u; }
    }
}

// tile_row is the part-local row of tile row r.
fn tile_row(gate: bool, base: u32, r0: u32, r: u32) -> u32 {
    if (gate) {
        let i = min(r0 + 2u * (r / 4u) + r % 2u, p.f - 1u);
        return base + select(i, p.f + i, r % 4u >= 2u);
    }
    return base + min(r0 + r, p.n - 1u);
}

fn put(k: u32, r: u32, v: f32) {
    ws[k * (RT / 4u) + r / 4u][r % 4u] = v;
}

fn put4(k: u32, r: u32, v: vec4<f32>) {
    for (var j = 0u; j < 4u; j++) {
        put(k + j, r, v[j]);
    }
}

// stage dequantises chunk c (of cpr in a row) of part-local row `row` into
// tile row r at step position k, or zeros past the row's end.
fn stage(r: u32, row: u32, c: u32, k: u32) {
    let cpr = p.k / vpc();
    if (c >= cpr) {
        for (var j = 0u; j < vpc(); j++) {
            put(k + j, r, 0.0);
        }
        return;
    }
    if (KTYPE != 0u) {
        let e = 4u * c;
        put4(k, r, kq_get4((row * (p.k / 256u) + e / 256u) * kq_block_bytes(), e % 256u));
        return;
    }
    let i = row * cpr + c;
    let q = w4[i];
    switch WTYPE {
        case 0u: {
            put4(k, r, bitcast<vec4<f32>>(q));
        }
        case 1u: {
            put4(k, r, vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y)));
            put4(k + 4u, r, vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)));
        }
        case 2u: {
            let sc = half_of(s[i / 4u], i / 2u);
            put4(k, r, i8x4(q.x) * sc);
            put4(k + 4u, r, i8x4(q.y) * sc);
            put4(k + 8u, r, i8x4(q.z) * sc);
            put4(k + 12u, r, i8x4(q.w) * sc);
        }
        default: {
            let sc = half_of(s[i / 2u], i);
            put4(k, r, q4_lo(q.x) * sc);
            put4(k + 4u, r, q4_lo(q.y) * sc);
            put4(k + 8u, r, q4_lo(q.z) * sc);
            put4(k + 12u, r, q4_lo(q.w) * sc);
            put4(k + 16u, r, q4_hi(q.x) * sc);
            put4(k + 20u, r, q4_hi(q.y) * sc);
            put4(k + 24u, r, q4_hi(q.z) * sc);
            put4(k + 28u, r, q4_hi(q.w) * sc);
        }
    }
}

fn run(gate: bool, wg: vec3<u32>, lid: u32) {
    let tile = wg.y;
    if (tile >= tiles[0].x) {
        return;
    }
    let td = tiles[1u + tile];
    let e = td.x;
    let count = td.z;
    if (e < p.e0 || e >= p.e0 + p.ne) {
        return;
    }
    if (lid < TT) {
        var en = NONE;
        if (lid < count) {
            en = order[td.y + lid];
        }
        ent[lid] = en;
    }
    let base = (e - p.e0) * p.n;
    let r0 = wg.x * select(RT, RT / 2u, gate);
    let cps = KT / vpc(); // chunks per step and row
    let quad = lid % 8u;
    let pair = lid / 8u;
    let k4 = p.k / 4u;
    var acc0 = vec4<f32>(); // entry 2*pair
    var acc1 = vec4<f32>(); // entry 2*pair+1
    workgroupBarrier();
    for (var k0 = 0u; k0 < p.k; k0 += KT) {
        for (var q = lid; q < RT * cps; q += WG) {
            let r = q / cps;
            let cc = q % cps;
            stage(r, tile_row(gate, base, r0, r), k0 / vpc() + cc, cc * vpc());
        }
        for (var q = lid; q < TT * (KT / 4u); q += WG) {
            let j = q / (KT / 4u);
            let v4 = q % (KT / 4u);
            var v = vec4<f32>();
            let en = ent[j];
            if (en != NONE && k0 + 4u * v4 < p.k) {
                let xrow = select(en, p.t0 + en / p.a, gate);
                v = x[xrow * k4 + k0 / 4u + v4];
            }
            for (var c = 0u; c < 4u; c++) {
                xs[(4u * v4 + c) * (TT / 2u) + j / 2u][j % 2u] = v[c];
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KT; kk++) {
            let wv = ws[kk * (RT / 4u) + quad];
            let xv = xs[kk * (TT / 2u) + pair];
            acc0 += wv * xv.x;
            acc1 += wv * xv.y;
        }
        workgroupBarrier();
    }
    for (var jt = 0u; jt < 2u; jt++) {
        let en = ent[2u * pair + jt];
        if (en == NONE) {
            continue;
        }
        let acc = select(acc0, acc1, jt == 1u);
        if (gate) {
            for (var c = 0u; c < 2u; c++) {
                let i = r0 + 2u * quad + c;
                if (i < p.f) {
                    out[en * p.f + i] = select(silu(acc[c]), gelu_tanh(acc[c]), GELU == 1u) * acc[2u + c];
                }
            }
        } else {
            for (var c = 0u; c < 4u; c++) {
                let nr = r0 + 4u * quad + c;
                if (nr < p.n) {
                    out[en * p.n + nr] = acc[c];
                }
            }
        }
    }
}

@compute @workgroup_size(WG)
fn gate_up(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    run(true, wg, lid);
}

@compute @workgroup_size(WG)
fn down(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    run(false, wg, lid);
}
