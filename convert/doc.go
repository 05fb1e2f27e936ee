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
// dequantised ones (Report).
package convert
