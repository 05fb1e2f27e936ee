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
// adapters the Go side picks one subgroup per workgroup instead.

override WTYPE: u32 = 3u;
override WG: u32 = 64u; // threads per workgroup, a power of two
override R: u32 = 4u;   // weight rows per workgroup, at most MAXR
override TB: u32 = 1u;  // tokens per workgroup, at most MAXTB

const MAXR: u32 = 8u;
const MAXTB: u32 = 4u;

//#if SUBGROUPS
// one slot per subgroup (subgroups have at least 4 invocations) per output
override RED: u32 = R * TB * (WG / 4u);
//#else
override RED: u32 = R * TB * WG;
//#endif

struct Params {
    n: u32,      // N: columns of out, over all parts
    k: u32,      // K
    row0: u32,   // first weight row of this part: its first column of out
    rows: u32,   // weight rows in this part
    t: u32,      // T
    chunks: u32, // 16-byte chunks per weight row
}

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;     // (rows, K) WTYPE values as 16-byte chunks
@group(0) @binding(1) var<storage, read> scales: array<u32>;      // (rows, K/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> x: array<vec4<f32>>;     // (T, K) f32
@group(0) @binding(3) var<storage, read_write> out: array<f32>;   // (T, N) f32
@group(0) @binding(4) var<uniform> p: Params;

var<workgroup> red: array<f32, RED>;

// Quantised values are widened without int-to-float conversions (an eighth
// of the FMA rate on some GPUs): the bits are placed at the top of an f32
// mantissa under exponent 0, giving 1 + q/16 for a nibble and 1 + u/256 for
// a byte u = q + 128. A dot product over them is Σx + Σqx/16 (or /256), from
// which the chunk's Σ(q-8)x (or Σqx) follows with the chunk's Σx, losing
// about two bits to cancellation (the tests hold 1e-5 of the row maximum).
const MM_ONE: u32 = 0x3F800000u;

// mm_q4lo and mm_q4hi give 1 + q/16 for the low and high nibbles of w's
// four bytes.
fn mm_q4lo(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(w << 19u, w << 11u, w << 3u, w >> 5u) & vec4<u32>(0x00780000u)) | vec4<u32>(MM_ONE));
}
fn mm_q4hi(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(w << 15u, w << 7u, w >> 1u, w >> 9u) & vec4<u32>(0x00780000u)) | vec4<u32>(MM_ONE));
}
// mm_q8 gives 1 + u/256 for w's four bytes, where u = q + 128 (w's sign
// bits already flipped by the caller).
fn mm_q8(w: u32) -> vec4<f32> {
    return bitcast<vec4<f32>>((vec4<u32>(w << 15u, w << 7u, w >> 1u, w >> 9u) & vec4<u32>(0x007F8000u)) | vec4<u32>(MM_ONE));
}
fn mm_half4(a: u32, b: u32) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(a), unpack2x16float(b));
}
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
    if (rbase >= p.rows) {
        return; // the whole workgroup: spare groups of a 2D dispatch
    }
    let tbase = wid.z * TB;
    var roff: array<u32, MAXR>;   // first chunk of each row
    for (var r = 0u; r < R; r++) {
        roff[r] = min(rbase + r, p.rows - 1u) * p.chunks;
    }
    var toff: array<u32, MAXTB>;  // first vec4 of each token's x row
    for (var t = 0u; t < TB; t++) {
        toff[t] = min(tbase + t, p.t - 1u) * (p.k / 4u);
    }
    var acc: array<f32, MAXR * MAXTB>; // acc[t * MAXR + r]

    for (var c = lid; c < p.chunks; c += WG) {
        var wv: array<vec4<u32>, MAXR>;
        for (var r = 0u; r < R; r++) {
            wv[r] = w[roff[r] + c];
        }
        if (WTYPE == WTYPE_Q4) {
            // one chunk is one group: word j holds elements 4j..4j+3 (low
            // nibbles) and 16+4j..16+4j+3 (high); value = scale * (q - 8)
            var sc: array<f32, MAXR>;
            for (var r = 0u; r < R; r++) {
                sc[r] = mm_scale(roff[r] + c);
            }
            for (var t = 0u; t < TB; t++) {
                let o = toff[t] + c * 8u;
                let x0 = x[o];
                let x1 = x[o + 1u];
                let x2 = x[o + 2u];
                let x3 = x[o + 3u];
                let x4 = x[o + 4u];
                let x5 = x[o + 5u];
                let x6 = x[o + 6u];
                let x7 = x[o + 7u];
                // Σ(q-8)x = 16 Σ(1+q/16)x - 24 Σx
                let xsum = 24.0 * dot((x0 + x1) + (x2 + x3) + (x4 + x5) + (x6 + x7), vec4<f32>(1.0));
                for (var r = 0u; r < R; r++) {
                    let q = wv[r];
                    let d = dot(mm_q4lo(q.x), x0) + dot(mm_q4hi(q.x), x4)
                          + dot(mm_q4lo(q.y), x1) + dot(mm_q4hi(q.y), x5)
                          + dot(mm_q4lo(q.z), x2) + dot(mm_q4hi(q.z), x6)
                          + dot(mm_q4lo(q.w), x3) + dot(mm_q4hi(q.w), x7);
                    acc[t * MAXR + r] += sc[r] * (16.0 * d - xsum);
                }
            }
        } else if (WTYPE == WTYPE_Q8) {
            // half a group: 16 int8, one scale per two chunks
            var sc: array<f32, MAXR>;
            for (var r = 0u; r < R; r++) {
                sc[r] = mm_scale((roff[r] + c) >> 1u);
            }
            for (var t = 0u; t < TB; t++) {
                let o = toff[t] + c * 4u;
                let x0 = x[o];
                let x1 = x[o + 1u];
                let x2 = x[o + 2u];
                let x3 = x[o + 3u];
                // Σqx = 256 Σ(1+u/256)x - 384 Σx
                let xsum = 384.0 * dot((x0 + x1) + (x2 + x3), vec4<f32>(1.0));
                for (var r = 0u; r < R; r++) {
                    let q = wv[r] ^ vec4<u32>(0x80808080u);
                    let d = dot(mm_q8(q.x), x0) + dot(mm_q8(q.y), x1) + dot(mm_q8(q.z), x2) + dot(mm_q8(q.w), x3);
                    acc[t * MAXR + r] += sc[r] * (256.0 * d - xsum);
                }
            }
        } else if (WTYPE == WTYPE_F16) {
            for (var t = 0u; t < TB; t++) {
                let o = toff[t] + c * 2u;
                let x0 = x[o];
                let x1 = x[o + 1u];
                for (var r = 0u; r < R; r++) {
                    let q = wv[r];
                    acc[t * MAXR + r] += dot(mm_half4(q.x, q.y), x0) + dot(mm_half4(q.z, q.w), x1);
                }
            }
        } else {
            for (var t = 0u; t < TB; t++) {
                let x0 = x[toff[t] + c];
                for (var r = 0u; r < R; r++) {
                    acc[t * MAXR + r] += dot(bitcast<vec4<f32>>(wv[r]), x0);
                }
            }
        }
    }

    let nv = R * TB;
//#if SUBGROUPS
    // Subgroups are taken to be runs of consecutive local indices, as on
    // every GPU we know of; slot lid / sg_size is then the subgroup's own.
    let nsg = (WG + sg_size - 1u) / sg_size;
    let slot = lid / sg_size;
    for (var v = 0u; v < nv; v++) {
        let s = subgroupAdd(acc[(v / R) * MAXR + v % R]);
        if (sg_lane == 0u) {
            red[v * (WG / 4u) + slot] = s;
        }
    }
    workgroupBarrier();
    for (var v = lid; v < nv; v += WG) {
        var s = 0.0;
        for (var i = 0u; i < nsg; i++) {
            s += red[v * (WG / 4u) + i];
        }
        mm_store(v, rbase, tbase, s);
    }
//#else
    for (var v = 0u; v < nv; v++) {
        red[v * WG + lid] = acc[(v / R) * MAXR + v % R];
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
        mm_store(v, rbase, tbase, red[v * WG]);
    }
//#endif
}

// mm_store writes output v (token v / R, row v % R of the workgroup) unless it
// lies past the part's rows or past T.
fn mm_store(v: u32, rbase: u32, tbase: u32, s: f32) {
    let r = rbase + v % R;
    let t = tbase + v / R;
    if (r < p.rows && t < p.t) {
        out[t * p.n + p.row0 + r] = s;
    }
}
