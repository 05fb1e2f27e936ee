// argmax: each row's largest logit, ties to the lowest index, in two passes.
// NaN reads as +Inf; a row whose maximum is +Inf gives -1-i (i the lowest
// index holding NaN or +Inf), as cpu.Argmax.
// Entry partial: workgroup (b, t) reduces elements [b*CH, (b+1)*CH) of row t
// to one (value, index) pair; grid (NB, T). Entry merge: one workgroup per
// row reduces the NB pairs; grid (T).

struct Params {
    v: u32,  // V
    nb: u32, // blocks per row
    ch: u32, // elements per block
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;      // (T, V) f32
@group(0) @binding(1) var<storage, read_write> part: array<u32>;  // (T, NB, 2): f32 bits, index
@group(0) @binding(2) var<storage, read_write> out: array<i32>;   // (T) i32
@group(0) @binding(3) var<uniform> p: Params;

const WG: u32 = 64u;
const NONE: u32 = 0xffffffffu;

var<workgroup> bv: array<f32, WG>;
var<workgroup> bi: array<u32, WG>;

// better orders (v, i) before (w, j): larger value, then lower index; an
// index of NONE is last.
fn better(v: f32, i: u32, w: f32, j: u32) -> bool {
    if (j == NONE) {
        return i != NONE;
    }
    return i != NONE && (v > w || (v == w && i < j));
}

// reduce leaves the workgroup's best pair in bv[0], bi[0].
fn reduce(v: f32, i: u32, lid: u32) {
    bv[lid] = v;
    bi[lid] = i;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s /= 2u) {
        if (lid < s && better(bv[lid + s], bi[lid + s], bv[lid], bi[lid])) {
            bv[lid] = bv[lid + s];
            bi[lid] = bi[lid + s];
        }
        workgroupBarrier();
    }
}

@compute @workgroup_size(WG)
fn partial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wg.x;
    let t = wg.y;
    let end = min(p.v, (b + 1u) * p.ch);
    var v = 0.0;
    var i = NONE;
    for (var j = b * p.ch + lid; j < end; j += WG) {
        let x = nan_as_inf(logits[t * p.v + j]);
        if (better(x, j, v, i)) {
            v = x;
            i = j;
        }
    }
    reduce(v, i, lid);
    if (lid == 0u) {
        let o = 2u * (t * p.nb + b);
        part[o] = bitcast<u32>(bv[0]);
        part[o + 1u] = bi[0];
    }
}

@compute @workgroup_size(WG)
fn merge(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.x;
    var v = 0.0;
    var i = NONE;
    for (var b = lid; b < p.nb; b += WG) {
        let o = 2u * (t * p.nb + b);
        let x = bitcast<f32>(part[o]);
        let j = part[o + 1u];
        if (better(x, j, v, i)) {
            v = x;
            i = j;
        }
    }
    reduce(v, i, lid);
    if (lid == 0u) {
        let id = select(i32(bi[0]), 0, bi[0] == NONE);
        out[t] = select(id, -1 - id, bi[0] != NONE && is_pos_inf(bv[0]));
    }
}
