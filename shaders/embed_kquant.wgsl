// embed_kquant: out[t] = table[ids[t]] for a K-quant table (Q2_K .. Q6_K as
// ggml's blocks, KTYPE; see common.wgsl's KQUANT section), for the ids that
// fall in this part's rows [row0, row0 + rows); one thread per four values
// of a row (d, d+1, d+2, d+3) and token. Grid (ceil(D/256), T).

//#define KQUANT
override KTYPE: u32 = 12u;

struct Params {
    d: u32,    // D, a multiple of 256
    row0: u32, // first row of this part of the table
    rows: u32, // rows in this part
}

@group(0) @binding(0) var<storage, read> w: array<u32>;            // (rows, D/256) KTYPE blocks (kq_block_bytes each)
@group(0) @binding(1) var<storage, read> ids: array<i32>;          // (T) i32
@group(0) @binding(2) var<storage, read_write> out: array<f32>;    // (T, D) f32
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = gid.x * 4u;
    let t = gid.y;
    if (d >= p.d) {
        return;
    }
    let id = u32(ids[t]);
    if (id < p.row0 || id >= p.row0 + p.rows) {
        return;
    }
    let v = kq_get4(((id - p.row0) * (p.d / 256u) + d / 256u) * kq_block_bytes(), d % 256u);
    let o = t * p.d + d;
    out[o] = v.x;
    out[o + 1u] = v.y;
    out[o + 2u] = v.z;
    out[o + 3u] = v.w;
}
