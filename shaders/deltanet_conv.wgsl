// deltanet_conv: a Gated DeltaNet layer's causal depthwise conv with its
// SiLU (model.Backend's DeltaNet; cpu.deltaConv and the SiLU after it),
// for a batch of tokens of one sequence. One thread per channel c of the
// conv's ConvDim, looping over the batch, so that it reads its channel's
// K-1 kept rows before it overwrites them (the threads share nothing):
//   act[t, c] = silu(Σ_i X[t+i, c] · w[c, i]),  X = [conv state; the batch's q k v rows]
// and the conv state then holds the last K-1 rows of X, raw (before the
// conv), oldest first. Consecutive threads read consecutive channels of a
// row, so the loads coalesce.

struct Params {
    cd: u32, // ConvDim: channels
    w: u32,  // W: proj's row width, [q k v | z | beta | alpha]
    t0: u32, // the batch's first row of proj
    t: u32,  // tokens in the batch
    k: u32,  // K: the conv's kernel
}

@group(0) @binding(0) var<storage, read> proj: array<f32>;       // (T, W) f32, the layer's input projection
@group(0) @binding(1) var<storage, read> cw: array<f32>;         // (ConvDim, K) f32 the conv's weights
@group(0) @binding(2) var<storage, read_write> cs: array<f32>;   // (K-1, ConvDim) f32 the conv state
@group(0) @binding(3) var<storage, read_write> act: array<f32>;  // (t, ConvDim) f32 silu(conv), the batch's rows from 0
@group(0) @binding(4) var<uniform> p: Params;

const WG: u32 = 64u;

// xrow is row r of X for channel c: the kept rows, then the batch's.
fn xrow(r: u32, c: u32) -> f32 {
    if (r < p.k - 1u) {
        return cs[r * p.cd + c];
    }
    return proj[(p.t0 + r - (p.k - 1u)) * p.w + c];
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    if (c >= p.cd) {
        return;
    }
    for (var t = 0u; t < p.t; t++) {
        var sum = 0.0;
        for (var i = 0u; i < p.k; i++) {
            sum += xrow(t + i, c) * cw[c * p.k + i];
        }
        act[t * p.cd + c] = silu(sum);
    }
    // the new state: rows t..t+K-2 of X; row r reads row t+r > r, not yet
    // overwritten
    for (var r = 0u; r + 1u < p.k; r++) {
        cs[r * p.cd + c] = xrow(p.t + r, c);
    }
}
