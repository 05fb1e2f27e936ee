// topk: each row's k largest logits in descending order, ties to the lowest
// index, in two passes, for the sampler.
//
// Entry block, grid (NB, T): workgroup (b, t) takes the CH = WG*PER logits
// [b*CH, (b+1)*CH) of row t into workgroup memory; thread j owns elements
// j, j+WG, ... and finds its best. A tournament tree over the threads then
// gives the block's best; thread 0 emits it, rescans the winner's PER
// elements for its next best and replays the winner's path to the root, k
// times: k*(PER + log2 WG) steps with no barrier. Its candidates, padded
// with (LOWEST, NONE) when the block is short, go to cv/ci (T, NB, k).
// Entry merge, grid (T): a k-way merge of the NB sorted candidate lists with
// the same tree over the lists' heads.

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

const WG: u32 = 256u;
const PER: u32 = 8u;
const CH: u32 = WG * PER;
const MAX_L: u32 = 512u;
const NONE: u32 = 0xffffffffu;
const LOWEST: f32 = -0x1.fffffep+127f; // value of a missing candidate; NONE orders it last

var<workgroup> sv: array<f32, CH>;       // block: the block's logits
var<workgroup> cand: array<u32, WG>;     // block: each thread's best remaining element, or NONE
var<workgroup> tree: array<u32, 2u * MAX_L>; // node -> winning leaf; leaves at L..2L-1
var<workgroup> hv: array<f32, MAX_L>;    // merge: each list's head value
var<workgroup> hi: array<u32, MAX_L>;    // merge: its index (NONE past the end)
var<workgroup> hp: array<u32, MAX_L>;    // merge: its position in the list

// before orders block elements: larger value, then lower index; NONE last.
fn before(a: u32, b: u32) -> bool {
    if (b == NONE) {
        return a != NONE;
    }
    return a != NONE && (sv[a] > sv[b] || (sv[a] == sv[b] && a < b));
}

fn win(a: u32, b: u32) -> u32 {
    return select(b, a, before(cand[a], cand[b]));
}

// head_before orders list heads like before orders elements.
fn head_before(a: u32, b: u32) -> bool {
    if (hi[b] == NONE) {
        return hi[a] != NONE;
    }
    return hi[a] != NONE && (hv[a] > hv[b] || (hv[a] == hv[b] && hi[a] < hi[b]));
}

fn head_win(a: u32, b: u32) -> u32 {
    return select(b, a, head_before(a, b));
}

// best_of is thread w's best element ordered after `after` (NONE: any).
fn best_of(w: u32, after: u32, n: u32) -> u32 {
    var best = NONE;
    for (var m = 0u; m < PER; m++) {
        let c = w + WG * m;
        if (c < n && (after == NONE || before(after, c)) && before(c, best)) {
            best = c;
        }
    }
    return best;
}

@compute @workgroup_size(WG)
fn block(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wg.x;
    let t = wg.y;
    let base = b * CH;
    let n = min(CH, p.v - base); // elements in this block
    for (var m = 0u; m < PER; m++) {
        let c = lid + WG * m;
        if (c < n) {
            sv[c] = logits[t * p.v + base + c];
        }
    }
    workgroupBarrier();
    cand[lid] = best_of(lid, NONE, n);
    tree[WG + lid] = lid;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s /= 2u) {
        if (lid < s) {
            tree[s + lid] = win(tree[2u * (s + lid)], tree[2u * (s + lid) + 1u]);
        }
        workgroupBarrier();
    }
    if (lid != 0u) {
        return;
    }
    let o = (t * p.nb + b) * p.k;
    for (var r = 0u; r < p.k; r++) {
        let w = tree[1];
        let c = cand[w];
        if (c == NONE) {
            cv[o + r] = LOWEST;
            ci[o + r] = NONE;
            continue;
        }
        cv[o + r] = sv[c];
        ci[o + r] = base + c;
        cand[w] = best_of(w, c, n);
        for (var node = (WG + w) / 2u; node > 0u; node /= 2u) {
            tree[node] = win(tree[2u * node], tree[2u * node + 1u]);
        }
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
        tree[l + j] = j;
    }
    workgroupBarrier();
    for (var s = l / 2u; s > 0u; s /= 2u) {
        for (var j = lid; j < s; j += WG) {
            tree[s + j] = head_win(tree[2u * (s + j)], tree[2u * (s + j) + 1u]);
        }
        workgroupBarrier();
    }
    if (lid != 0u) {
        return;
    }
    for (var r = 0u; r < p.k; r++) {
        let w = tree[1];
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
        for (var node = (l + w) / 2u; node > 0u; node /= 2u) {
            tree[node] = head_win(tree[2u * node], tree[2u * node + 1u]);
        }
    }
}
