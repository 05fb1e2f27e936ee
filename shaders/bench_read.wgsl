// bench_read: roofline probes for memory bandwidth. Entry stream_read streams src
// once (grid-stride, one coalesced vec4<u32> per thread per step) and folds
// it into a value that is stored only when it equals p.magic, so the loads
// cannot be optimised away yet nothing is written. Entry stream_copy copies src to
// dst. The dispatch may be 2D (x * y workgroups); WG is the workgroup size.

override WG: u32 = 256u;

struct Params {
    n: u32,     // vec4<u32> elements of src
    magic: u32, // stream_read: the fold value that would be stored (never, in practice)
}

@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;       // (n) vec4<u32>, any data
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>; // copy: (n); read: (threads), normally untouched
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WG)
fn stream_read(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let first = (wid.y * nwg.x + wid.x) * WG + lid;
    let stride = nwg.x * nwg.y * WG;
    var acc = vec4<u32>(0u);
    for (var i = first; i < p.n; i += stride) {
        acc ^= src[i];
    }
    if (acc.x == p.magic && acc.y == p.magic) {
        dst[first] = acc;
    }
}

@compute @workgroup_size(WG)
fn stream_copy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let stride = nwg.x * nwg.y * WG;
    for (var i = (wid.y * nwg.x + wid.x) * WG + lid; i < p.n; i += stride) {
        dst[i] = src[i];
    }
}
