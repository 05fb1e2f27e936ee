// moe_group: groups a chunk's (token, slot) entries by expert for the tiled
// prefill kernels, in one workgroup: count the entries of each expert, scan
// the counts into list offsets and tile offsets, write the tile table, then
// scatter the entry indices (t*A + a) into per-expert lists. The counters
// live in a storage buffer, not workgroup memory, so any E fits. A tile is a run
// of at most TT entries of one expert; the table holds at most
// ceil(n/TT) + min(E, n) tiles. The order of entries inside a list varies
// from run to run, which changes no result: every entry's outputs are
// computed on their own.

struct Params {
    e: u32,  // E
    n: u32,  // entries: nt*A
    tt: u32, // entries per tile
}

@group(0) @binding(0) var<storage, read> ids: array<u32>;               // (n) expert of each entry
@group(0) @binding(1) var<storage, read_write> order: array<u32>;       // (n) entries grouped by expert
@group(0) @binding(2) var<storage, read_write> tiles: array<vec4<u32>>; // 1 + max tiles: [0].x = tiles; then (expert, first, count, 0)
@group(0) @binding(3) var<storage, read_write> cnt: array<atomic<u32>>; // (3E): counts, list offsets, tile offsets
@group(0) @binding(4) var<uniform> p: Params;

const WG: u32 = 64u;

fn off(e: u32) -> u32 {
    return atomicLoad(&cnt[p.e + e]);
}

fn toff(e: u32) -> u32 {
    return atomicLoad(&cnt[2u * p.e + e]);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    for (var e = lid; e < p.e; e += WG) {
        atomicStore(&cnt[e], 0u);
    }
    storageBarrier();
    for (var i = lid; i < p.n; i += WG) {
        atomicAdd(&cnt[min(ids[i], p.e - 1u)], 1u);
    }
    storageBarrier();
    if (lid == 0u) {
        var o = 0u;
        var to = 0u;
        for (var e = 0u; e < p.e; e++) {
            let c = atomicLoad(&cnt[e]);
            atomicStore(&cnt[p.e + e], o);
            atomicStore(&cnt[2u * p.e + e], to);
            o += c;
            to += (c + p.tt - 1u) / p.tt;
        }
        tiles[0] = vec4<u32>(to, 0u, 0u, 0u);
    }
    storageBarrier();
    for (var e = lid; e < p.e; e += WG) {
        let c = atomicLoad(&cnt[e]);
        for (var j = 0u; j * p.tt < c; j++) {
            tiles[1u + toff(e) + j] = vec4<u32>(e, off(e) + j * p.tt, min(p.tt, c - j * p.tt), 0u);
        }
    }
    storageBarrier();
    for (var e = lid; e < p.e; e += WG) {
        atomicStore(&cnt[e], 0u);
    }
    storageBarrier();
    for (var i = lid; i < p.n; i += WG) {
        let e = min(ids[i], p.e - 1u);
        order[off(e) + atomicAdd(&cnt[e], 1u)] = i;
    }
}
