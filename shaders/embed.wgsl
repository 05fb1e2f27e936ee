// embed: out[t] = table[ids[t]] for the ids that fall in this part's rows
// [row0, row0 + rows); one thread per (d, t). WTYPE picks the table dtype.

override WTYPE: u32 = 0u;

struct Params {
    d: u32,    // D
    row0: u32, // first row of this part of the table
    rows: u32, // rows in this part
}

@group(0) @binding(0) var<storage, read> table: array<u32>;         // (rows, D) WTYPE values
@group(0) @binding(1) var<storage, read> scales: array<u32>;        // (rows, D/32) f16 pairs (q8, q4)
@group(0) @binding(2) var<storage, read> ids: array<i32>;           // (T) i32
@group(0) @binding(3) var<storage, read_write> out: array<f32>;     // (T, D) f32
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let d = gid.x;
    let t = gid.y;
    if (d >= p.d) {
        return;
    }
    let id = u32(ids[t]);
    if (id < p.row0 || id >= p.row0 + p.rows) {
        return;
    }
    let i = (id - p.row0) * p.d + d; // element index within the part
    var v: f32;
    switch WTYPE {
        case 0u: {
            v = bitcast<f32>(table[i]);
        }
        case 1u: {
            v = half_of(table[i / 2u], i);
        }
        case 2u: {
            let w = table[i / 4u];
            v = f32(i32(w << (24u - 8u * (i % 4u))) >> 24u) * half_of(scales[i / 64u], i / 32u);
        }
        default: {
            let j = i % 32u;
            let byte = (i / 32u) * 16u + (j % 16u);
            let shift = 8u * (byte % 4u) + select(0u, 4u, j >= 16u);
            let q = (table[byte / 4u] >> shift) & 15u;
            v = (f32(q) - 8.0) * half_of(scales[i / 64u], i / 32u);
        }
    }
    out[t * p.d + d] = v;
}
