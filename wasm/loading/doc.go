// Package loading is the browser worker's side of loading a converted
// model folder: the plan that checks a manifest against the backend's limits
// and the storage quota before anything is downloaded (Check), the
// tokenizer built from the fetched files (BuildTokenizer, through package
// source as natively), and the assembly of the canonical weights shard by
// shard as each is verified (Assembler).
//
// Its errors are typed and carry their codes (package errcode), which
// api.Classify reports as the worker's error codes.
package loading
