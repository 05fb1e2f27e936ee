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
//
// # Shard layouts
//
// The converter writes q4 and q8 planar (planar.go): all of a tensor's
// quantised values, then all its f16 scales (one per 32 values), each
// plane 4-byte aligned. Q4 keeps ggml Q4_0's nibble order inside a group,
// so GGUF Q4_0 and Q8_0 repack losslessly (bit-identical dequantisation,
// tested) and a kernel loads a u32 of values and a scale pair with no
// per-block header. F32 and F16 are kept, BF16 is widened to F32, and the
// K-quants (Q2_K..Q6_K) stay ggml's blocks byte for byte, so a K-quant GGUF
// converts with zero error. Why blocks and not planes for them: their
// sub-block scales and mins are 6- or 8-bit fields packed beside the
// quants, so there is no single scale plane to split off; a block is
// self-contained and rows are whole blocks (K a multiple of 256), so row
// merges, row splits and expert slices stay byte copies; and
// dequantisation is ggml's by construction. The cost is alignment: Q2_K
// (84 bytes), Q3_K (110) and Q6_K (210) blocks are not 16-byte multiples,
// which the GPU pads at upload (package gpu).
package loader
