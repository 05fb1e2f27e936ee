// Package tokenizer turns text into token ids and back exactly as Hugging
// Face tokenizers and llama.cpp do, and renders chat templates.
//
// It supports byte-level BPE from a Hugging Face tokenizer.json (Llama-3,
// Qwen2/Qwen3, GPT-2 pre-tokenizers), vocabularies embedded in GGUF files
// (tokenizer.ggml.model "gpt2" and "llama"), and llama2.c's tokenizer.bin.
// Decoder is an incremental detokenizer for streaming output, and RenderChat
// renders a model's Jinja chat template.
//
// The package is pure Go and builds for GOOS=js GOARCH=wasm.
package tokenizer
