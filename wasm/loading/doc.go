// Package loading is the browser worker's side of loading a converted
// model folder: the plan that checks a manifest against the backend's
// limits before anything is downloaded (Check; web/loader.js checks the
// storage quota), the tokenizer built from the fetched files
// (BuildTokenizer, through package source as natively), and the assembly of
// the canonical weights shard by shard as each is verified (Assembler).
//
// The plan (Check) runs on manifest.json alone, so a model that cannot fit
// is refused before a byte of it is fetched: every tensor against the
// device's binding and buffer limits (a tensor larger than a binding is
// split by rows, experts whole, so one row or one expert's rows must fit),
// the KV cache, and the activations (model.ScratchBytes: a decode step's
// and a prefill batch's). On the CPU those count against the heap beside the
// weights and KV cache, per rank where the CPU engine runs on ranks (rank
// 0: what is not split, its share, the KV cache and a split tensor's rows
// in flight; each peer: its share). On WebGPU each must fit a binding, and
// a prefill batch whose (T, 2F) gate_up does not is shortened until it does
// (Plan.PrefillChunk, which the engine then uses). The backends' own
// scratch, such as MoE routing buffers, is not counted.
//
// A tensor in parts is staged (Stager) until its last part is in, in any
// order, then handed to the backend whole; the worker's stager keeps the
// parts in a JavaScript buffer, so the Go heap never holds them.
//
// Its errors are typed and carry their codes (package errcode), which
// api.Classify reports as the worker's error codes.
package loading
