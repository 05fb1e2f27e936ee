// moe_gemm: the MoE's tiled kernels for prefill. moe_group has grouped the
// chunk's (token, slot) entries by expert into tiles of at most TT entries of
// one expert; a workgroup multiplies RT rows of that expert's matrix by the
// tile's TT activation rows, so each expert's weights are read once per tile,
// not once per token. Weights are dequantised into workgroup memory KT values
// at a time; each thread accumulates 4 rows by 2 entries.
//
// Entry gate_up: tile rows are F-rows i0..i0+RT/2 of the gate and the same
// rows of the up half; act[entry, i] = silu(gate · x) * (up · x), with x the
// entry's token row. Grid (ceil(F/(RT/2)), max tiles).
// Entry down: y[entry, n] = W[e, n] · act[entry] for rows n0..n0+RT.
// Grid (ceil(D/RT), max tiles). Tiles past the table's count, or of experts
// outside this part, return at once.
// WTYPE: the weight dtype (see common.wgsl).

override WTYPE: u32 = 0u;

const WG: u32 = 64u;
const RT: u32 = 32u; // rows per tile
const TT: u32 = 16u; // entries per tile
const KT: u32 = 32u; // values of K per step
const NONE: u32 = 0xffffffffu;

struct Params {
    k: u32,  // K: row length, a multiple of 4 (of 32 for q8 and q4)
    n: u32,  // rows per expert: 2F (gate_up) or D (down)
    e0: u32, // first expert of this part
    ne: u32, // experts in this part
    a: u32,  // A
    t0: u32, // gate_up: first token of this chunk in x
    f: u32,  // F
}

@group(0) @binding(0) var<storage, read> w: array<u32>;            // (rows, K) WTYPE values of this part
@group(0) @binding(1) var<storage, read> s: array<u32>;            // (rows, K/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;      // gate_up: x (T, D); down: act (nt*A, F) f32
@group(0) @binding(3) var<storage, read> order: array<u32>;        // (nt*A) entries grouped by expert
@group(0) @binding(4) var<storage, read> tiles: array<vec4<u32>>;  // moe_group's tile table
@group(0) @binding(5) var<storage, read_write> out: array<f32>;    // gate_up: act (nt*A, F); down: y (nt*A, D) f32
@group(0) @binding(6) var<uniform> p: Params;

var<workgroup> ws: array<f32, KT * RT>; // [k][row]
var<workgroup> xs: array<f32, KT * TT>; // [k][entry]
var<workgroup> ent: array<u32, TT>;

struct Unit {
    lo: vec4<f32>, // the unit's first four values
    hi: vec4<f32>, // q4: the four values 16 further on
}

// wunit is unit u (one u32 of q4 = 8 values, else 4 values) of part-local
// row `row`, dequantised.
fn wunit(row: u32, u: u32) -> Unit {
    switch WTYPE {
        case 0u: {
            let i = row * p.k + 4u * u;
            return Unit(vec4<f32>(bitcast<f32>(w[i]), bitcast<f32>(w[i + 1u]), bitcast<f32>(w[i + 2u]), bitcast<f32>(w[i + 3u])), vec4<f32>());
        }
        case 1u: {
            let i = row * (p.k / 2u) + 2u * u;
            return Unit(vec4<f32>(unpack2x16float(w[i]), unpack2x16float(w[i + 1u])), vec4<f32>());
        }
        case 2u: {
            let g = row * (p.k / 32u) + u / 8u;
            return Unit(i8x4(w[row * (p.k / 4u) + u]) * half_of(s[g / 2u], g), vec4<f32>());
        }
        default: {
            let q = w[row * (p.k / 8u) + u];
            let g = row * (p.k / 32u) + u / 4u;
            let sc = half_of(s[g / 2u], g);
            return Unit(q4_lo(q) * sc, q4_hi(q) * sc);
        }
    }
}

// tile_row is the part-local row of tile row r.
fn tile_row(gate: bool, base: u32, r0: u32, r: u32) -> u32 {
    if (gate) {
        let i = min(r0 + r % (RT / 2u), p.f - 1u);
        return base + select(i, p.f + i, r >= RT / 2u);
    }
    return base + min(r0 + r, p.n - 1u);
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
    let q4 = WTYPE == WTYPE_Q4;
    let ups = select(KT / 4u, KT / 8u, q4); // units per step
    let rg = lid % 8u;
    let tg = lid / 8u;
    let k4 = p.k / 4u;
    var acc0 = vec4<f32>(); // rows 2rg, 2rg+1, RT/2+2rg, RT/2+2rg+1 of entry 2tg
    var acc1 = vec4<f32>(); // the same rows of entry 2tg+1
    workgroupBarrier();
    for (var k0 = 0u; k0 < p.k; k0 += KT) {
        for (var q = lid; q < RT * ups; q += WG) {
            let r = q / ups;
            let uu = q % ups;
            var v = Unit(vec4<f32>(), vec4<f32>());
            if (k0 + 4u * uu < p.k) {
                v = wunit(tile_row(gate, base, r0, r), k0 / select(4u, 8u, q4) + uu);
            }
            let pos = 4u * uu;
            for (var c = 0u; c < 4u; c++) {
                ws[(pos + c) * RT + r] = v.lo[c];
                if (q4) {
                    ws[(pos + 16u + c) * RT + r] = v.hi[c];
                }
            }
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
                xs[(4u * v4 + c) * TT + j] = v[c];
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KT; kk++) {
            let wr = kk * RT + 2u * rg;
            let w4 = vec4<f32>(ws[wr], ws[wr + 1u], ws[wr + RT / 2u], ws[wr + RT / 2u + 1u]);
            acc0 += w4 * xs[kk * TT + 2u * tg];
            acc1 += w4 * xs[kk * TT + 2u * tg + 1u];
        }
        workgroupBarrier();
    }
    for (var jt = 0u; jt < 2u; jt++) {
        let en = ent[2u * tg + jt];
        if (en == NONE) {
            continue;
        }
        let acc = select(acc0, acc1, jt == 1u);
        if (gate) {
            for (var c = 0u; c < 2u; c++) {
                let i = r0 + 2u * rg + c;
                if (i < p.f) {
                    out[en * p.f + i] = silu(acc[c]) * acc[2u + c];
                }
            }
        } else {
            for (var c = 0u; c < 4u; c++) {
                let nr = r0 + 2u * rg + (c % 2u) + select(0u, RT / 2u, c >= 2u);
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
