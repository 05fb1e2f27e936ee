// Package manifest is wasmllm's converted-model format: a folder holding
// manifest.json and shard files.
//
// manifest.json (format_version 1, 2 when a tensor is in parts, 3 when one
// is stacked) carries
// the model config, the tokenizer source, the chat template, the shard list
// and the tensor table:
//
//	{
//	  "format_version": 1,
//	  "name": "tiny-llama3", "arch": "llama", "quant": "q4",
//	  "config": { ...model.Config... },
//	  "tokenizer": { ...free-form object, see Manifest.Tokenizer... },
//	  "chat_template": "...",
//	  "shards":  [{"file": "shard-00000-0123456789abcdef.bin", "bytes": 33554176, "sha256": "0123...ef"}],
//	  "tensors": [{"name": "token_embd.weight", "dtype": "q4", "shape": [512, 128],
//	               "shard": 0, "offset": 0, "bytes": 36864},
//	              {"name": "output.weight", "dtype": "q8", "shape": [128256, 8192],
//	               "shard": 1, "offset": 0, "bytes": 1116340224,
//	               "parts": [{"shard": 1, "offset": 0, "bytes": 33554432}, ...]}]
//	}
//
// Shards are raw concatenations of tensor bytes in the layout the kernels
// read (see loader.DType). Every tensor starts at a multiple of Align inside
// its shard and lies within one shard, except one larger than a shard,
// which the Writer puts in parts over consecutive fresh shards
// (TensorInfo.Parts); tensors and parts do not overlap. Shard file
// names end in "-<hex>.bin" where hex is the first 16 to 64 hex digits of the
// shard's sha256, so a server and a browser may cache them forever
// (IsHashedName).
//
// Why parts: no shard is larger than the converter's shard size (32 MiB by
// default), which keeps every shard verifiable as one ArrayBuffer in the
// browser. The founding rule, "a tensor never spans shards", made a tensor
// over the browser's 1 GiB shard limit unloadable
// (DeepSeek-R1-Distill-Llama-70B's Q8 head is 1.117 GB). A tensor's shard
// and offset are its first part's, and format_version 2 makes a build that
// predates parts refuse the folder instead of reading a first part as the
// whole. Reader reads the parts in turn; the browser stages them in a
// JavaScript buffer as they arrive, in any order (wasm/loading's Stager).
//
// A stacked tensor (dtype "mixed", TensorInfo.Stack) is a merged
// projection whose row blocks have different types (llama-quantize's
// Q4_K_M: Q4_K q and k rows, Q6_K v rows on some layers): each block is an
// entry of its own type named "<name>#<i>" (model.StackPartName), and the
// stacked entry names them in order and has no bytes of its own. Why: the
// blocks keep their types, so the folder costs the GGUF's bytes (widened
// to F32 they cost 7x, +21% for Llama-3.2-1B Q4_K_M), and every block is
// an ordinary tensor to the shard writer, the verifier and the browser's
// loader; format_version 3 makes an older build refuse the folder.
package manifest
