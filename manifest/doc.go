// Package manifest is wasmllm's converted-model format: a folder holding
// manifest.json and shard files.
//
// manifest.json (format_version 1, or 2 when a tensor is in parts) carries
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
package manifest
