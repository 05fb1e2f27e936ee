// Package loader reads model files: GGUF (v1-v3, ReadGGUF/ParseGGUF, or
// OpenGGUF to read only the header), Hugging Face safetensors (a file or a
// sharded folder, OpenSafetensors) and legacy llama2.c checkpoints
// (ReadLlama2C). It holds the tensor types (DType: ggml's types plus the
// planar Q4/Q8 shard layouts of planar.go), dequantisation bit-exact with
// ggml's reference, the Q8_0/Q4_0 quantisers llama-quantize uses, and a GGUF
// writer.
//
// Malformed input never panics: every parser returns a *FormatError naming
// the file, the field and the byte offset, wrapping one of the Err* causes,
// and checks every count it reads against the bytes that remain before it
// allocates.
package loader
