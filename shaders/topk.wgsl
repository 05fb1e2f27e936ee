// topk: each row's k largest logits in descending order, ties to the lowest
// index, in two passes, for the sampler. NaN reads as +Inf.
//
// Entry block, grid (NB, T): workgroup (b, t) takes the CH = WG*PER logits
// [b*CH, (b+1)*CH) of row t; thread j owns elements j, j+WG, ... and finds
// its best. A tournament tree over the threads gives the block's best; thread
// 0 emits it, rescans the winner's PER elements for its next best and replays
// the winner's path to the root, k times: k*(PER + log2 WG) steps with no
// barrier. The block's k candidates, padded with (LOWEST, NONE) when it is
// short, go to cv/ci (T, NB, k).
// Entry merge, grid (T): a k-way merge of the NB sorted candidate lists with
// the same tree over the lists' heads.
// Workgroup arrays are kept small: SwiftShader's compile time grows with them.

struct Params {
    v: u32,  // V
    nb: u32, // blocks per row, at most MAX_L
    k: u32,  // k
    l: u32,  // merge: leaves, a power of two >= nb
}

@group(0) @binding(0) var<storage, read> logits: array<f32>;      // (T, V) f32
@group(0) @binding(1) var<storage, read_write> cv: array<f32>;    // (T, NB, k) candidate values
@group(0) @binding(2) var<storage, read_write> ci: array<u32>;    // (T, NB, k) candidate indices (NONE: none)
@group(0) @binding(3) var<storage, read_write> ids: array<i32>;   // (T, k) i32
@group(0) @binding(4) var<storage, read_write> vals: array<f32>;  // (T, k) f32
@group(0) @binding(5) var<uniform> p: Params;

const WG: u32 = 64u;
const PER: u32 = 32u;
const CH: u32 = WG * PER;
const MAX_L: u32 = 128u;
const NONE: u32 = 0xffffffffu;
const LOWEST: f32 = -0x1.fffffep+127f; // value of a missing candidate; NONE orders it last

// Tournament trees: internal node n (1 <= n < leaves) holds the winning
// leaf of its subtree; nodes n >= leaves are the leaves n - leaves.
var<workgroup> tree: array<u32, MAX_L>;
var<workgroup> hi: array<u32, MAX_L>; // block: each thread's best remaining element; merge: each list's head index
var<workgroup> hv: array<f32, MAX_L>; // its value
var<workgroup> hp: array<u32, MAX_L>; // merge: the head's position in its list

// before orders leaves by their heads: larger value, then lower index; NONE last.
fn before(a: u32, b: u32) -> bool {
    if (hi[b] == NONE) {
        return hi[a] != NONE;
    }
    return hi[a] != NONE && (hv[a] > hv[b] || (hv[a] == hv[b] && hi[a] < hi[b]));
}

fn winner(n: u32, leaves: u32) -> u32 {
    if (n >= leaves) {
        return n - leaves;
    }
    return tree[n];
}

fn play(n: u32, leaves: u32) {
    let a = winner(2u * n, leaves);
    let b = winner(2u * n + 1u, leaves);
    tree[n] = select(b, a, before(a, b));
}

// build fills the internal nodes, level by level.
fn build(leaves: u32, lid: u32) {
    for (var s = leaves / 2u; s > 0u; s /= 2u) {
        for (var j = lid; j < s; j += WG) {
            play(s + j, leaves);
        }
        workgroupBarrier();
    }
}

// replay updates the path from leaf w to the root.
fn replay(w: u32, leaves: u32) {
    for (var n = (leaves + w) / 2u; n > 0u; n /= 2u) {
        play(n, leaves);
    }
}

// rescan sets thread w's head to its best element of row `row` (block-local
// indices below n) ordered after (av, ai); ai = NONE: the best of all.
fn rescan(w: u32, row: u32, n: u32, av: f32, ai: u32) {
    var bi = NONE;
    var bv = LOWEST;
    for (var m = 0u; m < PER; m++) {
        let c = w + WG * m;
        if (c >= n) {
            break;
        }
        let v = nan_as_inf(logits[row + c]);
        let after = ai == NONE || v < av || (v == av && c > ai);
        if (after && (bi == NONE || v > bv)) {
            bi = c;
            bv = v;
        }
    }
    hi[w] = bi;
    hv[w] = bv;
}

@compute @workgroup_size(WG)
fn block(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wg.x;
    let t = wg.y;
    let base = b * CH;
    let n = min(CH, p.v - base); // elements in this block
    let row = t * p.v + base;
    rescan(lid, row, n, 0.0, NONE);
    workgroupBarrier();
    build(WG, lid);
    if (lid != 0u) {
        return;
    }
    let o = (t * p.nb + b) * p.k;
    for (var r = 0u; r < p.k; r++) {
        let w = winner(1u, WG);
        let c = hi[w];
        if (c == NONE) {
            cv[o + r] = LOWEST;
            ci[o + r] = NONE;
            continue;
        }
        cv[o + r] = hv[w];
        ci[o + r] = base + c;
        rescan(w, row, n, hv[w], c);
        replay(w, WG);
    }
}

@compute @workgroup_size(WG)
fn merge(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let t = wg.x;
    let l = p.l;
    for (var j = lid; j < l; j += WG) {
        hp[j] = 0u;
        hv[j] = LOWEST;
        hi[j] = NONE;
        if (j < p.nb) {
            let o = (t * p.nb + j) * p.k;
            hv[j] = cv[o];
            hi[j] = ci[o];
        }
    }
    workgroupBarrier();
    build(l, lid);
    if (lid != 0u) {
        return;
    }
    for (var r = 0u; r < p.k; r++) {
        let w = winner(1u, l);
        ids[t * p.k + r] = select(i32(hi[w]), -1, hi[w] == NONE);
        vals[t * p.k + r] = hv[w];
        let q = hp[w] + 1u;
        hp[w] = q;
        if (q < p.k) {
            let o = (t * p.nb + w) * p.k + q;
            hv[w] = cv[o];
            hi[w] = ci[o];
        } else {
            hv[w] = LOWEST;
            hi[w] = NONE;
        }
        replay(w, l);
    }
}
