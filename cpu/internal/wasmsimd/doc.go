// Package wasmsimd emits a small WebAssembly module of SIMD128 kernels
// for the CPU engine's hot loops: Go's js/wasm port emits no SIMD, so the
// kernels are written here, instruction by instruction, and the module's
// bytes are built at start-up (Module); there is no assembler in the build.
// The module imports the Go instance's memory (env.mem), which the page's
// loader hands over as globalThis.wasmllmGoMemory (web/worker.js, the
// wasmexec and bench pages), so a kernel reads weights and activations
// where Go keeps them and writes its results back there; one call (about
// 3 µs through syscall/js) covers a whole matrix, or the attention of every
// (token, head) in a range.
//
// Each kernel computes what its plain-Go twin in package cpu computes, in
// the same order, bit for bit: F32 is gemmF32, Q8_0 dotQ8_0, Q4_0
// dotQ4_0, Q8 dotQ8, Q4 dotQ4, the DQ* kernels loader's dequantisation
// (cpu's row), Attn attnTask.run, Exp expf, Silu siluMul, DeltaStep a
// Gated DeltaNet decode step of one value head (deltaTask.step: the
// state's decay, the delta rule and the read-out, four state columns at a
// time); Batch makes a table of kernel calls in one call from Go.
//
// What runs where: decode rows directly from the quantised blocks; a
// prefill through 16 dequantised rows at a time and the F32 kernel over
// all the tokens, four at a time; the cached attention (scores, softmax,
// the weighted sum of V) for every (token, head) of a call, four keys'
// scores at a time and up to sixteen outputs kept in registers while V is
// summed, so each V row is read once; the element-wise SiLU. The K-quants
// (Q2_K..Q6_K) have dequantisation kernels of their own (kquant.go: the
// sub-block scales unpacked with scalar instructions, the weights 16 at a
// time, each value the f32 products loader's dequantisation computes).
//
// Batch exists because a call costs about as much as a small expert's
// matmul: a prompt's MoE experts run grouped by expert (each expert's
// tokens gathered into one matmul through gate_up, SiLU and down, as
// llama.cpp's mul_mat_id), every expert's gate_up in one call and every
// down in another. A 16-token prompt on tiny-qwen3moe-f32 went from 1197 to
// 3550 tok/s (A/B in one benchmark), and tiny-qwen3moe-q4_0's prefill from
// 0.44-0.73x wllama's to 1.08x once the quantised experts' tiles went
// through the table too.
//
// Measured in Chromium on this project's machine (BenchmarkSIMDMatMul,
// BenchmarkSIMDAttention, BenchmarkSIMDDeltaNet in package cpu): a Gated
// DeltaNet decode step of a 128 × 128 head state 0.97 ms against the Go
// loop's 7.8 ms (8.1x, a loaded machine); a 2048x2048 decode GEMV runs
// 5.4x (f32), 6.8x (Q8_0) and 6.9x (Q4_0) faster than the Go loops, a
// 16-token prefill 5x, in Firefox 8-9x; attention of 128 tokens over 512
// positions 12.7x; a 2048x2048 Q4_K GEMV took 22.7 ms on the Go dot product
// and 4.6 ms on the tiles (Q6_K: 21.7 and 5.0 ms; measured while a CI run
// shared the machine).
package wasmsimd
