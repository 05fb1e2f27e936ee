// moe_route: Qwen3-MoE routing, one workgroup per token: softmax over the E
// router logits, the A largest (ties to the lowest expert id), their
// probabilities, renormalised to sum 1 when norm is set. Each thread ranks
// its experts against all E (rank = experts ordered before it), reading the
// token's logits from the buffer (every thread reads the same ones), so the
// selection needs one barrier; thread 0 computes the softmax sum.
// With a shared expert (Qwen3.5-MoE, p.d > 0) the workgroup also computes
// the token's shared-expert weight, sigmoid(xn · gate), from the
// normalised row the router's GEMV wrote: no dispatch of its own.
// With p.scaled (Gemma 4) each chosen expert's weight, after the
// renormalisation, is multiplied by its own scale escale[e].

struct Params {
    e: u32,    // E
    a: u32,    // A, at most MAX_A and E
    norm: u32, // 1: renormalise the A weights
    nt: u32,   // tokens in this chunk
    d: u32,    // D with a shared expert (its gate's length); 0 without
    scaled: u32, // 1: multiply each chosen weight by escale[expert]
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;      // (nt, E) f32
@group(0) @binding(1) var<storage, read_write> ids: array<u32>;   // (nt, A) chosen experts, best first
@group(0) @binding(2) var<storage, read_write> wts: array<f32>;   // (nt, A) their weights
@group(0) @binding(3) var<storage, read> xn: array<f32>;          // (nt, D) f32 the normalised rows; a dummy unless p.d > 0
@group(0) @binding(4) var<storage, read> gate: array<f32>;        // (D) f32 the shared expert's gate; a dummy unless p.d > 0
@group(0) @binding(5) var<storage, read_write> shw: array<f32>;   // (nt) f32 the shared expert's weights; a dummy unless p.d > 0
@group(0) @binding(6) var<storage, read> escale: array<f32>;      // (E) f32 the experts' output scales; a dummy unless p.scaled
@group(0) @binding(7) var<uniform> p: Params;

const WG: u32 = 64u;
const MAX_A: u32 = 64u;

var<workgroup> sid: array<u32, MAX_A>;
var<workgroup> sv: array<f32, MAX_A>;
var<workgroup> gsum: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.x;
    if (t >= p.nt) {
        return;
    }
    let row = t * p.e;
    for (var a = lid; a < p.a; a += WG) {
        sid[a] = p.e; // no expert: only reached when logits are NaN
        sv[a] = 0.0;
    }
    workgroupBarrier();
    for (var e = lid; e < p.e; e += WG) {
        let v = logits[row + e];
        var rank = 0u;
        for (var j = 0u; j < p.e; j++) {
            let u = logits[row + j];
            rank += u32(u > v || (u == v && j < e));
        }
        if (rank < p.a) {
            sid[rank] = e;
            sv[rank] = v;
        }
    }
    if (p.d > 0u) {
        var g = 0.0;
        for (var i = lid; i < p.d; i += WG) {
            g += xn[t * p.d + i] * gate[i];
        }
        gsum[lid] = g;
    }
    workgroupBarrier();
    if (lid != 0u) {
        return;
    }
    if (p.d > 0u) {
        var g = 0.0;
        for (var i = 0u; i < WG; i++) {
            g += gsum[i];
        }
        shw[t] = 1.0 / (1.0 + exp(-g));
    }
    let m = sv[0];
    var sum = 0.0;
    for (var j = 0u; j < p.e; j++) {
        sum += exp(logits[row + j] - m);
    }
    var total = 0.0;
    for (var a = 0u; a < p.a; a++) {
        let ok = sid[a] < p.e;
        let pr = select(0.0, exp(sv[a] - m) / sum, ok);
        sv[a] = pr;
        total += pr;
    }
    let scale = select(1.0, 1.0 / total, p.norm == 1u && total > 0.0);
    for (var a = 0u; a < p.a; a++) {
        ids[t * p.a + a] = select(0u, sid[a], sid[a] < p.e);
        var wt = sv[a] * scale;
        if (p.scaled == 1u && sid[a] < p.e) {
            wt *= escale[sid[a]];
        }
        wts[t * p.a + a] = wt;
    }
}
