// Package convert turns an opened model source (a GGUF file, a Hugging
// Face folder, a llama2.c checkpoint, or a converted folder) into a model
// folder: the canonical tensors in the layouts the kernels read, in
// content-hashed shards, with the tokenizer's files and manifest.json. It
// holds one tensor at a time. cmd/convert is its command line; the
// browser's worker runs it on a GGUF read over the network or from a
// local file, into Cache Storage (manifest.Store).
//
// Each tensor's layout comes from a -quant mode (plan.go); keep, the
// default, is lossless wherever a kernel layout allows, and every
// conversion measures the written values against the source's exactly
// dequantised ones (Report). Q4_1, Q5_0 and Q5_1 have no kernel layout:
// they are re-quantised, never to fewer bits, with the error reported. A
// merge whose parts differ in type (Q4_K_M's Q4_K q/k with a Q6_K v; a
// Q8_0 or Q4_0 fallback beside K-quants) is written as row blocks, each
// in its own part's keep layout (manifest.TensorInfo.Stack), so the
// folder's weight bytes are the GGUF's; the other modes re-quantise it
// whole.
//
// GGUF and Hugging Face inputs are opened lazily (source.Options.Lazy):
// each canonical tensor, merged ones included, is read from the files only
// when it is encoded. Layout gives every tensor's type, shape and bytes from
// the source's header alone, so the browser can check a GGUF against the
// device's limits before it reads a tensor.
package convert
