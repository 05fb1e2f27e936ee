// matmul_gemv: out (T, N) = x (T, K) · wᵀ for one row-part of w, the decode
// path (small T). WTYPE picks the weight dtype (see common.wgsl).
//
// A workgroup owns R weight rows and TB tokens. Its WG threads stride along
// K in 16-byte chunks (4 f32, 8 f16, 16 q8 or 32 q4 values): thread i reads
// chunks i, i+WG, ... of each of its R rows, so every load is one coalesced
// vec4<u32> and each activation vec4 is reused for R rows. The per-thread
// partial sums are reduced with subgroupAdd and one shared-memory step
// (a shared-memory tree without subgroups). Rows past the part and tokens
// past T are clamped for loading and skipped for storing: the K loop has no
// bounds branches. Needs K to be a multiple of the chunk (the Go side sends
// other shapes to the GEMM). On GPUs WG covers a row in one pass; on CPU
// adapters the Go side picks one subgroup per workgroup instead, and 16
// rows for one or two tokens (fewer, longer workgroups).
//
// Fusions (model.MatMulFusion), set in the params: norm reads x as
// RMSNorm(x) * nw (each thread also sums its x values' squares, reduced
// with the dot products; the scale is applied to the sums); silu reads the
// part as gate_up (2F rows, one part): a workgroup's first R/2 rows are
// gate rows i0.., the rest the same up rows, and it writes
// out[t, i] = silu(gate) * up with out (T, F), or gelu_tanh(gate) * up
// when silu is 2 (Gemma's GeGLU); acc adds to out.

//#define GEMV
override WTYPE: u32 = 3u;
override WG: u32 = 64u; // threads per workgroup, a power of two
override R: u32 = 4u;   // weight rows per workgroup, at most MAXR
override TB: u32 = 1u;  // tokens per workgroup, at most MAXTB

const MAXR: u32 = 16u;
const MAXTB: u32 = 4u;

//#if SUBGROUPS
// one slot per subgroup (subgroups have at least 4 invocations) per output
// (R + 1: the sums of squares of norm)
override RED: u32 = (R + 1u) * TB * (WG / 4u);
//#else
override RED: u32 = (R + 1u) * TB * WG;
//#endif

struct Params {
    n: u32,      // N: columns of out, over all parts
    k: u32,      // K
    row0: u32,   // first weight row of this part: its first column of out
    rows: u32,   // weight rows in this part
    t: u32,      // T
    chunks: u32, // 16-byte chunks per weight row
    norm: u32,   // 1: x is read as RMSNorm(x) * nw
    eps: f32,    // norm's epsilon
    silu: u32,   // 1: gate_up rows, out (T, N/2) = silu(gate) * up; 2: gelu_tanh(gate) * up
    acc: u32,    // 1: out += the result
}

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;     // (rows, K) WTYPE values as 16-byte chunks
@group(0) @binding(1) var<storage, read> scales: array<u32>;      // (rows, K/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;     // (T, K) f32
@group(0) @binding(3) var<storage, read_write> out: array<f32>;   // (T, N) f32
@group(0) @binding(4) var<storage, read> nw: array<vec4<f32>>;   // (K) f32 norm weight; a dummy unless p.norm
@group(0) @binding(5) var<uniform> p: Params;

var<workgroup> red: array<f32, RED>;

fn mm_scale(s: u32) -> f32 {
    return half_of(scales[s >> 1u], s);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32
//#if SUBGROUPS
        , @builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_size) sg_size: u32
//#endif
        ) {
    let rbase = (wid.y * nwg.x + wid.x) * R;
    if (rbase >= p.rows) { // silu: rbase/2 >= F
        return; // the whole workgroup: spare groups of a 2D dispatch
    }
    let tbase = wid.z * TB;
    var roff: array<u32, MAXR>;   // first chunk of each row
    for (var r = 0u; r < R; r++) {
        roff[r] = min(rbase + r, p.rows - 1u) * p.chunks;
    }
    let h = R / 2u;
    let ff = p.rows / 2u; // silu: F
    if (p.silu != 0u) {
        // gate rows rbase/2.. then the same up rows
        for (var r = 0u; r < R; r++) {
            let i = min(rbase / 2u + r % h, ff - 1u);
            roff[r] = select(i, ff + i, r >= h) * p.chunks;
        }
    }
    var toff: array<u32, MAXTB>;  // first vec4 of each token's x row
    for (var t = 0u; t < TB; t++) {
        toff[t] = min(tbase + t, p.t - 1u) * (p.k / 4u);
    }
    var acc: array<f32, MAXR * MAXTB>; // acc[t * MAXR + r]
    var ssq: array<f32, MAXTB>;        // norm: Σx² of each token's share

    for (var c = lid; c < p.chunks; c += WG) {
        if (TB == 1u) {
            // one token: each row's chunk dotted as it is loaded, with no
            // local array of chunks (SwiftShader keeps one in memory: 1.35x
            // for q4, 1.45x for q8 there)
            var xc = mm_x(toff[0] + c * mm_xpc(WTYPE));
            if (p.norm == 1u) {
                ssq[0] += mm_norm(&xc, c * mm_xpc(WTYPE));
            }
            let sh = select(0u, 1u, WTYPE == WTYPE_Q8);
            for (var r = 0u; r < R; r++) {
                let d = mm_dot(WTYPE, w[roff[r] + c], xc);
                if (WTYPE == WTYPE_Q4 || WTYPE == WTYPE_Q8) {
                    acc[r] += mm_scale((roff[r] + c) >> sh) * (d - xc.off);
                } else {
                    acc[r] += d;
                }
            }
            continue;
        }
        var wv: array<vec4<u32>, MAXR>;
        for (var r = 0u; r < R; r++) {
            wv[r] = w[roff[r] + c];
        }
        var sc: array<f32, MAXR>;
        if (WTYPE == WTYPE_Q4 || WTYPE == WTYPE_Q8) {
            // one scale per q4 chunk, per two q8 chunks
            let sh = select(0u, 1u, WTYPE == WTYPE_Q8);
            for (var r = 0u; r < R; r++) {
                sc[r] = mm_scale((roff[r] + c) >> sh);
            }
        }
        for (var t = 0u; t < TB; t++) {
            var xc = mm_x(toff[t] + c * mm_xpc(WTYPE));
            if (p.norm == 1u) {
                ssq[t] += mm_norm(&xc, c * mm_xpc(WTYPE));
            }
            for (var r = 0u; r < R; r++) {
                let d = mm_dot(WTYPE, wv[r], xc);
                if (WTYPE == WTYPE_Q4 || WTYPE == WTYPE_Q8) {
                    acc[t * MAXR + r] += sc[r] * (d - xc.off);
                } else {
                    acc[t * MAXR + r] += d;
                }
            }
        }
    }

    let nv = (R + 1u) * TB; // the sums, then the sums of squares
//#if SUBGROUPS
    // Subgroups are taken to be runs of consecutive local indices, as on
    // every GPU we know of; slot lid / sg_size is then the subgroup's own.
    let nsg = (WG + sg_size - 1u) / sg_size;
    let slot = lid / sg_size;
    for (var v = 0u; v < nv; v++) {
        let s = subgroupAdd(mv_acc(&acc, &ssq, v));
        if (sg_lane == 0u) {
            red[v * (WG / 4u) + slot] = s;
        }
    }
    workgroupBarrier();
    // totals in slot 0 of each value
    for (var v = lid; v < nv; v += WG) {
        var s = 0.0;
        for (var i = 0u; i < nsg; i++) {
            s += red[v * (WG / 4u) + i];
        }
        wtot[v] = s;
    }
    workgroupBarrier();
    mv_store(lid, rbase, tbase);
//#else
    for (var v = 0u; v < nv; v++) {
        red[v * WG + lid] = mv_acc(&acc, &ssq, v);
    }
    workgroupBarrier();
    for (var h = WG / 2u; h > 0u; h >>= 1u) {
        if (lid < h) {
            for (var v = 0u; v < nv; v++) {
                red[v * WG + lid] += red[v * WG + lid + h];
            }
        }
        workgroupBarrier();
    }
    for (var v = lid; v < nv; v += WG) {
        wtot[v] = red[v * WG];
    }
    workgroupBarrier();
    mv_store(lid, rbase, tbase);
//#endif
}

// mv_acc is value v of this thread: a sum (token v / R, row v % R), or
// past R*TB the sum of squares of token v - R*TB.
fn mv_acc(acc: ptr<function, array<f32, MAXR * MAXTB>>, ssq: ptr<function, array<f32, MAXTB>>, v: u32) -> f32 {
    if (v >= R * TB) {
        return (*ssq)[v - R * TB];
    }
    return (*acc)[(v / R) * MAXR + v % R];
}

// wtot holds the workgroup's totals: R*TB sums, then TB sums of squares.
var<workgroup> wtot: array<f32, (MAXR + 1u) * MAXTB>;

// mv_scale is token t's RMSNorm scale (1 without norm).
fn mv_scale(t: u32) -> f32 {
    if (p.norm == 0u) {
        return 1.0;
    }
    return inverseSqrt(wtot[R * TB + t] / f32(p.k) + p.eps);
}

// mv_store writes this thread's outputs, from the totals.
fn mv_store(lid: u32, rbase: u32, tbase: u32) {
    if (p.silu != 0u) {
        let h = R / 2u;
        for (var v = lid; v < h * TB; v += WG) {
            let t = v / h;
            let i = v % h;
            let sc = mv_scale(t);
            let g = wtot[t * R + i] * sc;
            let u = wtot[t * R + h + i] * sc;
            let col = rbase / 2u + i;
            if (col < p.rows / 2u && tbase + t < p.t) {
                let o = (tbase + t) * (p.n / 2u) + col;
                var y = silu(g) * u;
                if (p.silu == 2u) {
                    y = gelu_tanh(g) * u;
                }
                if (p.acc == 1u) {
                    out[o] += y;
                } else {
                    out[o] = y;
                }
            }
        }
        return;
    }
    for (var v = lid; v < R * TB; v += WG) {
        mm_store(v, rbase, tbase, wtot[v] * mv_scale(v / R));
    }
}

// mm_store writes output v (token v / R, row v % R of the workgroup) unless it
// lies past the part's rows or past T.
fn mm_store(v: u32, rbase: u32, tbase: u32, s: f32) {
    let r = rbase + v % R;
    let t = tbase + v / R;
    if (r < p.rows && t < p.t) {
        let o = t * p.n + p.row0 + r;
        if (p.acc == 1u) {
            out[o] += s;
        } else {
            out[o] = s;
        }
    }
}
