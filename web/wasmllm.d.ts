// Types of wasmllm.js: run a converted model folder in the browser with an
// OpenAI-shaped API.
//
//   import { createEngine } from "./wasmllm.js";
//   const engine = await createEngine({ model: "/models/stories260K/", onProgress });
//   const r = await engine.completions.create({ prompt: "Once upon a time", max_tokens: 32 });
//   for await (const c of await engine.chat.completions.create({ messages, stream: true })) {
//     text += c.choices[0]?.delta?.content ?? "";
//   }
//
// The engine runs in a Web Worker (worker.js beside wasmllm.js, which loads
// wasm_exec.js, loader.js and wasmllm.wasm from the same folder). Files the
// page must be able to fetch: those four plus the model folder. From another
// origin (a CDN, the npm package on another server) the worker starts
// through a same-origin blob; that server must send CORS headers.
//
// OpenAI's semantics, where WebLLM and OpenAI differ (webllm.js is the
// WebLLM-shaped entry point over the same engine):
// - create(body, {signal}) cancels one request; leaving a stream's
//   for-await early (or stream.controller.abort()) cancels it too;
// - a stream carries usage only with stream_options: {include_usage: true},
//   in a last chunk whose choices are []; a request that fails before its
//   first token rejects create() itself (WebLLM throws at the first next());
// - created is in seconds (WebLLM: milliseconds);
// - n > 1 is allowed with stream: true (WebLLM refuses it); the choices
//   stream one after another, each chunk with its index.

/** Error codes of WasmLLMError. */
export type ErrorCode =
  | "bad_request"      // a malformed request or parameter (details.param names it), or a logits processor's failure (see LogitsProcessor)
  | "bad_model"        // manifest, tensor table or tokenizer that does not parse (details: file, field, offset)
  | "model_too_large"  // a tensor, the KV cache or the whole model exceeds the device or the wasm heap (details: what, limit, need, have, over)
  | "quota_exceeded"   // the shards do not fit the origin's storage quota (details: need, available, short)
  | "integrity"        // a shard failed its sha256 check twice (details: shard, sha256, expected)
  | "network"          // a fetch failed after its retries, or HTTP 4xx (details: url, status, shard)
  | "context_overflow" // the prompt (plus max_tokens) does not fit the context (details: prompt_tokens, context_length)
  | "aborted"          // a load or a request stopped by its AbortSignal (engine.abort() and interrupts end requests with finish_reason "abort" instead)
  | "no_chat_template" // chat.completions on a model without a chat template: use completions
  | "no_tokenizer"     // text on a model folder without a tokenizer: pass token ids
  | "device_lost"      // the GPU device was lost (details: reason, message); the engine unloads itself: call engine.reload()
  | "cpu_rank_failed"  // a rank (Web Worker) of the CPU engine died or stopped answering (details: rank, op, reason); load again
  | "no_webgpu"        // backend "webgpu" was asked for and WebGPU is not available
  | "not_loaded"       // a request after unload()
  | "internal";        // anything else (a bug, or a backend failure)

/** Every failure of the API. */
export class WasmLLMError extends Error {
  readonly name: "WasmLLMError";
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
}

/** A download progress event; at most 10 a second, bytes never decrease, and the last has bytes === total. */
export interface Progress {
  bytes: number;        // bytes done, shards read from the cache included
  total: number;        // sum of the shard sizes
  shards_done: number;
  shards_total: number;
  rate: number;         // bytes per second over the last few seconds
  /** "gguf" while a GGUF is read and converted (bytes and total are the GGUF's; shards 0); absent for the shards. */
  stage?: "gguf";
}

export interface EngineOptions {
  /**
   * The model folder's URL (holding manifest.json), absolute or relative to the page; or a GGUF
   * to read where it lies: its URL (a path ending in .gguf, on a server that answers Range
   * requests, such as a Hugging Face resolve/main link; of a split GGUF, any part's), or a File
   * (a file picker, a drop), or the Files of a split GGUF's parts (NAME-0000i-of-0000N.gguf).
   * A GGUF is converted in the worker, one tensor at a time, as cmd/convert -quant keep does,
   * into a folder in Cache Storage (its progress events have stage "gguf"); the next load of
   * the same file reads nothing of it.
   */
  model: string | Blob | Blob[];
  /**
   * The model is a text-embedding GGUF (bert, nomic-bert, or qwen3 with a pooling type, as
   * Qwen3-Embedding): it is read whole and built as it is (no conversion, no Cache Storage), and
   * engine.embeddings.create answers; chat and completions do not.
   */
  embedding?: boolean;
  /** Download progress. */
  onProgress?: (p: Progress) => void;
  /** Messages for the user: the CPU fallback, a shard that could not be cached. */
  onNotice?: (message: string) => void;
  /** "webgpu" (fail with no_webgpu without it), "cpu", or unset: WebGPU when there is an adapter, else the CPU with a notice. */
  backend?: "webgpu" | "cpu" | "";
  /** Stops loading: createEngine rejects with code "aborted". */
  signal?: AbortSignal;
  /** KV cache capacity in tokens; default: the model's maximum, at most 4096, lowered to what the GPU holds. */
  contextLength?: number;
  /**
   * What the KV cache stores: "f16" (default on WebGPU; half the memory and
   * bandwidth of f32, about 1e-3 relative error in attention; llama.cpp's
   * and WebLLM's default), "f32", or "q8": 8-bit values with an f32 scale
   * per 32 (per head where a head has fewer), 1.125 bytes a value, 56% of
   * f16 for heads of 128 (Llama-3.1-8B at 32k tokens: 2.4 GB instead of
   * 4.3 GB); stories260K's perplexity moves 0.2%. On WebGPU q8 needs heads
   * of a multiple of 16 values (else f16, with engine.info.notice). The CPU backend (and
   * the CPU fallback) keeps f32 for "f16" (its SIMD attention reads f32)
   * and q8 for "q8": engine.info.kv_cache_dtype reports the type used. Any
   * other value rejects with "bad_request" (details.param "kvCacheDtype").
   */
  kvCacheDtype?: "f32" | "f16" | "q8";
  /**
   * Ranks of the CPU engine (default: navigator.hardwareConcurrency, at
   * most 4; 1 for one). Ranks past the first are Web Workers, each its own
   * instance of the engine's wasm holding 1/N of every large weight matrix
   * (rows split as vLLM's column-parallel layers split them), exchanging
   * activations through a SharedArrayBuffer: the page must be cross-origin
   * isolated (COOP/COEP, as the bundled server sends). Without isolation
   * the engine runs one rank and engine.info.cpu_ranks_note says why.
   * Outputs are bit-identical for every rank count.
   */
  cpuRanks?: number;
  /** The smallest weight split across the CPU ranks, in bytes (default 1 MiB; tests use 1 to split every matrix). */
  cpuMinShardBytes?: number;
  /** Parallel shard downloads (default 4). */
  concurrency?: number;
  /** Retries of a dropped connection, each resuming with a Range request (default 5). */
  maxRetries?: number;
  /** false: do not use Cache Storage (no offline use, no quota check). */
  cache?: boolean;
  /** Bytes of weights the wasm heap may hold (default 2 GiB). */
  heapBytes?: number;
  /**
   * Where Gemma 4's per-layer embedding table goes on WebGPU: "auto" (the
   * default: the worker's memory when it outweighs the rest of the weights
   * and heapBytes holds it), "gpu", or "host" (the worker's memory; each
   * token uploads its row). info.plan says where it went.
   */
  perLayerEmbeddings?: "auto" | "gpu" | "host";
  /** Lower the WebGPU device's limits (testing, or to leave room for other work). */
  limits?: { maxStorageBufferBindingSize?: number; maxBufferSize?: number };
  /** Use these figures instead of navigator.storage.estimate() for the quota check (testing). */
  storageEstimate?: { quota: number; usage: number };
  /**
   * Before downloading at least persistBytes (default 1 GiB) into Cache
   * Storage, ask for persistent storage (navigator.storage.persist(): kept
   * from eviction, and in Firefox a quota beyond the ~10 GiB best-effort
   * one). info.load.persist says what the browser answered. false: never ask.
   */
  persist?: boolean;
  persistBytes?: number;
  /** Where worker.js and wasmllm.wasm are; default: beside wasmllm.js (shared-worker.js: beside worker.js). */
  workerURL?: string | URL;
  wasmURL?: string | URL;
  /**
   * One engine per origin and model, shared by the origin's tabs: the
   * engine runs in a SharedWorker (shared-worker.js beside worker.js), so a
   * tab asking for a model another tab has loaded (same model and the
   * options that shape the engine: backend, contextLength, kvCacheDtype,
   * cpuRanks, cpuMinShardBytes, heapBytes, perLayerEmbeddings, limits, wasmURL) joins it at
   * once, downloading and loading nothing; onProgress follows a load
   * already under way. Requests from the tabs take turns (round robin, one
   * request at a time), a tab that closes or navigates away has its own
   * requests cancelled (never another tab's), unload() lets go of this
   * tab only, and the engine unloads sharedIdleMs after its last tab left
   * (at once when the browser ends the worker with its last tab). Another
   * model is another shared engine, so both are held (each its own GPU
   * device: a second model that does not fit fails its own load, the
   * first is untouched). Where the SharedWorker gets no WebGPU adapter but
   * the page does, or there is no SharedWorker, or worker.js is on another
   * origin, the engine runs in this tab's own worker: engine.info.shared
   * says which and why.
   */
  shared?: boolean;
  /** With shared: how long the engine stays loaded once no tab uses it, in ms (default 5000). The last tab to leave decides. */
  sharedIdleMs?: number;
}

/** engine.info.shared, with createEngine({shared: true}). */
export interface SharedInfo {
  /** "shared-worker": the origin's engine, in a SharedWorker; "per-tab": this tab's own worker (reason says why). */
  mode: "shared-worker" | "per-tab";
  /** Why not shared, or why the shared engine runs on the CPU; "" when nothing is lacking. */
  reason: string;
  /** This tab joined an engine another tab had loaded (or was loading): nothing was downloaded or loaded for it. */
  reused: boolean;
  /** Tabs (engines) attached to the shared engine when this one joined, itself included; 1 per tab. */
  clients: number;
}

/** What engine.info reports. */
export interface EngineInfo {
  backend: "webgpu" | "cpu";
  /** Why the CPU runs instead of WebGPU, or "". */
  notice: string;
  adapter: null | {
    vendor: string; architecture: string; device: string; description: string;
    fallback: boolean; shader_f16: boolean; subgroups: boolean;
  };
  limits: null | { maxStorageBufferBindingSize: number; maxBufferSize: number };
  context_length: number;
  /** What the KV cache stores: kvCacheDtype on WebGPU; on the CPU "q8" when asked, else "f32". */
  kv_cache_dtype: "f32" | "f16" | "q8";
  /** The CPU engine's matmuls run on WebAssembly SIMD128 kernels (false: plain Go loops, a browser without SIMD128). */
  cpu_simd: boolean;
  /** The CPU engine's ranks (cpuRanks): 1, or the workers plus the engine's own; 0 on WebGPU. */
  cpu_ranks: number;
  /** Why the CPU engine runs fewer ranks than asked (not cross-origin isolated, a worker that did not start), or "". */
  cpu_ranks_note: string;
  model: {
    name: string; url: string; arch: string; quant: string;
    /** The manifest's config: vocab_size, hidden_size, num_layers, num_heads, ... */
    config: Record<string, unknown>;
    bytes: number; shards: number; tensors: number;
    has_tokenizer: boolean;
    has_chat_template: boolean;
    /** The chat template has Qwen3's enable_thinking switch. */
    thinking: boolean;
  };
  /** kv_bytes: the whole KV cache, in kv_cache_dtype, with a recurrent
   * model's (Qwen3.5's) f32 states; kv_bytes_per_token: one position's keys
   * and values over every layer; state_bytes: that part of kv_bytes which
   * is recurrent state, every copy the engine keeps (the live states, the
   * prompt's checkpoint, on WebGPU the pipelined decode step's saved copy),
   * the same at any context (0 for other models); activation_bytes: a
   * decode step's and a prefill batch's activations; prefill_chunk: the
   * tokens of a prefill batch (shortened to fit the device's binding limit). */
  plan: {
    weight_bytes: number; kv_bytes: number; kv_bytes_per_token: number; state_bytes: number;
    activation_bytes: number; prefill_chunk: number;
    /** Gemma 4: the per-layer table in the worker's memory (its bytes), and what a token uploads. */
    per_layer_on_host: boolean; per_layer_host_bytes: number; per_layer_token_bytes: number;
  };
  /**
   * A GGUF model: where its conversion is kept (folder), what was read (name, url, bytes, etag),
   * whether this load converted it (converted, convert_ms, lossless: every value equal to the
   * GGUF's) or found it converted, and offline when the GGUF could not be reached and the kept
   * conversion was used. Absent for a model folder.
   */
  /**
   * An engine made with embedding: true: its vectors' length, the model's pooling and the most
   * tokens an input may have. Such an engine's info has backend, notice, adapter and model's name,
   * url, arch and bytes; the rest is absent.
   */
  embedding?: { dimensions: number; pooling: "cls" | "mean" | "last"; max_tokens: number };
  gguf?: {
    folder: string; name: string; url?: string; bytes: number; etag?: string;
    converted: boolean; convert_ms?: number; lossless?: boolean; offline?: boolean;
  };
  load: {
    ms: number;
    phases_ms: Record<string, number>;
    network_bytes: number;   // shard bytes downloaded
    cached_bytes: number;    // shard bytes read from Cache Storage
    manifest_from_cache: boolean;
    gpu_direct_bytes: number; // bytes written from JavaScript straight into GPU buffers
    /** This load was engine.reload(): manifest and tokenizer from the worker's memory. */
    reload: boolean;
    /** What navigator.storage.persist() answered before a large download; null when not asked. */
    persist: null | { granted: boolean; asked: boolean; already: boolean };
  };
  /** With createEngine({shared: true}): where the engine runs and whether this tab joined it (the load figures above are the first tab's). */
  shared?: SharedInfo;
}

/** A request's speeds (a wasmllm extension of the responses, also engine.stats). */
export interface Timings {
  prefill_tokens: number;       // prompt tokens run (not reused from the cache)
  prefill_ms: number;
  prefill_tokens_per_s: number;
  decode_tokens: number;
  decode_ms: number;
  decode_tokens_per_s: number;
  /**
   * Decode steps submitted before the previous token was read back
   * (pipelined decode, on WebGPU for plain greedy requests); 0 where the
   * sampler needs more than the argmax on the host (sampling, logprobs,
   * penalties, structured output) or on the CPU.
   */
  decode_steps_ahead: number;
}

/**
 * A custom logits processor: it gets the full row of next-token logits (one
 * per vocabulary entry) and the ids generated so far in this request (empty
 * for the first token; one more per step; prompt not included), and either
 * changes the row in place and returns nothing, or returns an array of the
 * same length whose values replace the row (copied in, so an array kept
 * across calls stays usable). It may be async. Set a logit to -Infinity to
 * ban a token; add to it to favour one.
 *
 * Where it runs: in the sampler's order, after allowed_token_ids,
 * bad_words, logit_bias and min_tokens (so those are already in the row),
 * and before the penalties, temperature, min_p, top_k and top_p, as vLLM's
 * custom processors do. The processors run in the page, because functions
 * cannot be sent to the engine's worker.
 *
 * Cost: one round trip between the worker and the page per token, with the
 * full row (4 bytes times the vocabulary: about 600 KB for Qwen3's 151,936)
 * transferred each way (no structured clone; one copy in and out of the
 * wasm heap in the worker). On WebGPU such a request also reads the whole
 * row back from the GPU every token, where greedy and top_k requests
 * without processors read only a few candidates. The
 * engine waits for the page: a processor that never settles holds the
 * request until engine.abort(), which ends it at once with finish_reason
 * "abort" (the processor's late result is ignored).
 *
 * Errors: a processor that throws (or rejects, or returns something that is
 * not an array of the row's length) ends the request with a WasmLLMError of
 * code "bad_request", details {param: "logits_processors", index, reason:
 * "processor_error"}, index being its position in the list. A NaN or
 * +Infinity left in the row ends it with code "bad_request", details
 * {param: "logits_processors", index, token, reason: "invalid_logit"}, and
 * the sampler's message ("sampler: logit T is NaN (written by
 * logits_processors[I])"). Every token at -Infinity ends it with
 * "bad_request" (the sampler's "every token is masked").
 */
export type LogitsProcessor = (logits: Float32Array, outputIds: readonly number[]) =>
  void | ArrayLike<number> | Promise<void | ArrayLike<number>>;

/** Sampling parameters: vLLM's, with its defaults. */
export interface SamplingParams {
  temperature?: number;          // default 1; 0 is greedy
  top_p?: number;                // default 1
  top_k?: number;                // 0 or -1: off
  min_p?: number;
  seed?: number;                 // unset or -1: random
  repetition_penalty?: number;   // default 1
  frequency_penalty?: number;
  presence_penalty?: number;
  logit_bias?: Record<string, number>;  // token id -> bias
  allowed_token_ids?: number[];
  bad_words?: string[];
  min_tokens?: number;
  stop?: string | string[];
  stop_token_ids?: number[];
  ignore_eos?: boolean;
  include_stop_str_in_output?: boolean;
  logprobs_mode?: "raw_logprobs" | "processed_logprobs";
  /** Tokens to generate, at least 1 (0 is refused, as OpenAI does); default: chat until it stops or the context is full, completions 16. */
  max_tokens?: number | null;
  /** "error" (default): a prompt that does not fit fails with context_overflow; "truncate": drop the oldest turns (chat) or tokens. */
  context_overflow?: "error" | "truncate";
  /**
   * Custom logits processors, run in this page, in order, once per
   * generated token (see LogitsProcessor). A wasmllm extension; not JSON.
   */
  logits_processors?: LogitsProcessor[];
  /** Accepted for OpenAI clients: model and user are ignored (webllm.js uses model to pick a loaded model). */
  model?: string | null;
  user?: string | null;
  /**
   * Choices to generate, 1 to 16 (default 1), one after another; with a
   * seed, choice i uses seed + i. Usage counts the prompt once.
   */
  n?: number | null;
  /** include_usage: end the stream with a chunk of usage and no choices (else a stream has no usage). */
  stream_options?: { include_usage?: boolean } | null;
}

/** The second argument of create(), as in OpenAI's client. */
export interface RequestOptions {
  /**
   * Cancels this request (queued or running, within one token): create()
   * rejects, or the stream's next read rejects, with code "aborted".
   * Other requests are not touched.
   */
  signal?: AbortSignal;
}

/** What a streaming create() resolves to. */
export interface Stream<T> extends AsyncIterable<T> {
  /** Aborting it cancels the request; the next read rejects with code "aborted". */
  readonly controller: AbortController;
}

/** A text part of a message's content: parts are joined with "\n" (images and audio are refused). */
export interface TextContentPart { type: "text"; text: string }

/**
 * A chat message. role "developer" is given to the template as "system";
 * any other role than these is refused (bad_request). content is required
 * (a string or text parts) except on assistant messages.
 */
export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content?: string | TextContentPart[] | null;
  [key: string]: unknown;  // tool_calls, tool_call_id, name, reasoning_content... passed to the template
}

export interface ChatCompletionRequest extends SamplingParams, StructuredOutputParams {
  messages: ChatMessage[];
  stream?: boolean;
  max_completion_tokens?: number;
  /** Per-token logprobs, with top_logprobs (0..20) alternatives. */
  logprobs?: boolean;
  top_logprobs?: number;
  /** Extra chat template variables, e.g. { enable_thinking: false } for Qwen3. */
  chat_template_kwargs?: Record<string, unknown>;
  /**
   * Tools, given to the chat template. When the template teaches a
   * tool-call syntax (Qwen's and Hermes' <tool_call>, Llama 3's JSON,
   * DeepSeek-R1's), calls in the reply come back as message.tool_calls
   * (delta.tool_calls when streaming) with finish_reason "tool_calls".
   */
  tools?: ChatTool[] | null;
  /**
   * "auto" (the default with tools), "none" (the template does not see
   * the tools), "required" or a named function: the reply is then forced
   * to be calls (constrained decoding; a template without a tool-call
   * syntax fails with bad_request).
   */
  tool_choice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } } | null;
  /** false: tool_choice "required" makes exactly one call. */
  parallel_tool_calls?: boolean | null;
  /** Constrained decoding; at most one of response_format and the StructuredOutputParams. */
  response_format?: ResponseFormat | null;
}

/** An OpenAI tool: a function the model may call, its arguments' JSON Schema in parameters. */
export interface ChatTool {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown> | null; strict?: boolean | null };
}

/**
 * OpenAI's response formats (text; json_object: any JSON object;
 * json_schema: JSON valid for the schema) and WebLLM's (json_object with a
 * schema as JSON text; grammar: a GBNF grammar, start rule root).
 * Schemas and grammars that cannot be compiled fail with bad_request
 * naming the field (details.param) and the place (details.pointer,
 * offset, line, column).
 */
export type ResponseFormat =
  | { type: "text" }
  | { type: "json_object"; schema?: string | null }
  | { type: "json_schema"; json_schema: { name?: string; description?: string; schema?: Record<string, unknown> | boolean; strict?: boolean | null } }
  | { type: "grammar"; grammar: string };

/** vLLM's structured-output parameters (each constrains the whole reply; give at most one). */
export interface StructuredOutputParams {
  /** A JSON Schema, or its JSON text. */
  guided_json?: Record<string, unknown> | string | null;
  /** A regular expression the whole reply matches (RE2 syntax: no lookaround or backreferences). */
  guided_regex?: string | null;
  /** The reply is exactly one of these strings. */
  guided_choice?: string[] | null;
  /** A GBNF grammar (llama.cpp's dialect, start rule root). */
  guided_grammar?: string | null;
  /** Accepted and ignored: there is one engine. */
  guided_decoding_backend?: string | null;
  /** vLLM's newer form of the same: one of json, regex, choice, grammar, json_object. */
  structured_outputs?: { json?: Record<string, unknown> | string | null; regex?: string | null; choice?: string[] | null; grammar?: string | null; json_object?: boolean | null } | null;
  /**
   * A constrained reply (any of the above, response_format, or a forced tool call) ends within
   * max_tokens and the context: once few tokens are left, only tokens after which the grammar can
   * still end in the rest are allowed, so strings and structures close early and the reply is whole
   * (finish_reason "stop") instead of cut (finish_reason "length"). A wasmllm extension; default false.
   */
  fit_max_tokens?: boolean | null;
}

export interface CompletionRequest extends SamplingParams, StructuredOutputParams {
  /** Text (BOS added when the tokenizer says so), or token ids used as given. */
  prompt: string | number[];
  /**
   * Special tokens written in a text prompt ("<s>", "<|im_start|>") are the
   * special tokens (true, the default, as in Hugging Face and llama.cpp), or
   * plain text (false, as Google SentencePiece reads them). Chat templates
   * always render them as special tokens.
   */
  parse_special?: boolean;
  stream?: boolean;
  /** Top alternatives per token (0..20). */
  logprobs?: number;
  /** Constrained decoding, as in chat. */
  response_format?: ResponseFormat | null;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** cached_tokens: prompt tokens reused from the previous request's KV cache. */
  prompt_tokens_details: { cached_tokens: number };
}

/**
 * A tool call read from the reply (by the engine, or by a remote engine's
 * server: vLLM with --enable-auto-tool-choice). In a message: id, type,
 * function.name and function.arguments (JSON text). Streamed in pieces by
 * index: the first with id, type, name and arguments "", then argument
 * fragments.
 */
export interface ToolCall {
  index?: number;
  id?: string;
  type?: "function";
  function?: { name?: string; arguments?: string };
}

/**
 * "abort" when engine.abort() (or webllm's interruptGenerate) stopped the
 * request; "tool_calls" when the reply ends with tool calls;
 * "grammar_dead_end" when constrained decoding found no token the other
 * sampling parameters allow.
 */
export type FinishReason = "stop" | "length" | "abort" | "tool_calls" | "grammar_dead_end";

export interface TopLogprob { token: string; logprob: number; bytes: number[] }
export interface TokenLogprob extends TopLogprob { top_logprobs: TopLogprob[] }

export interface ChatCompletionChoice {
  /** 0 to n - 1. */
  index: number;
  /** content is null when the reply is only tool calls; reasoning_content comes only from a remote engine's server (vLLM's parsers). */
  message: { role: "assistant"; content: string | null; reasoning_content?: string | null; tool_calls?: ToolCall[] };
  finish_reason: FinishReason;
  logprobs: { content: TokenLogprob[] } | null;
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  /** Unix time in seconds. */
  created: number;
  model: string;
  /** n of them, in index order. */
  choices: ChatCompletionChoice[];
  usage: Usage;
  timings: Timings;
}

export interface ChatCompletionChunkChoice {
  index: number;
  /** tool_calls as OpenAI streams them; reasoning_content from a remote engine's server, as vLLM streams it. */
  delta: { role?: "assistant"; content?: string | null; reasoning_content?: string | null; tool_calls?: ToolCall[] };
  finish_reason: FinishReason | null;
  logprobs: { content: TokenLogprob[] } | null;
}

/**
 * Chunks of a stream: each choice's first has delta.role, its last has
 * finish_reason and that choice's timings; with stream_options.include_usage
 * one more chunk ends the stream with usage, the request's timings and
 * choices [].
 */
export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: ChatCompletionChunkChoice[];
  usage?: Usage;
  timings?: Timings;
}

export interface TextLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Record<string, number>[];
  text_offset: number[];  // in UTF-16 code units
}

export interface CompletionChoice { index: number; text: string; finish_reason: FinishReason | null; logprobs: TextLogprobs | null }

/**
 * A text_completion response or stream chunk (as in chat: each choice's
 * last chunk has finish_reason and timings, and the include_usage chunk has
 * usage and choices []).
 */
export interface Completion {
  id: string;
  object: "text_completion";
  created: number;
  model: string;
  choices: CompletionChoice[];
  usage?: Usage;
  timings?: Timings;
}

/** OpenAI's CreateEmbeddingRequest, with vLLM's truncate_prompt_tokens. */
export interface EmbeddingCreateParams {
  /** A string, strings, token ids (used as given), or arrays of token ids; at most 2048 inputs. */
  input: string | string[] | number[] | number[][];
  model?: string;
  /** "float" (the default) or "base64": the little-endian float32 bytes, base64-encoded. */
  encoding_format?: "float" | "base64";
  /** Keep the first N values and renormalise (Matryoshka). */
  dimensions?: number;
  /** -1: cut an input over the model's length to it; N: to N tokens. Unset: such an input is a bad_request naming it. */
  truncate_prompt_tokens?: number;
  user?: string;
}

/** One embedding: the model's pooling, L2-normalised. */
export interface EmbeddingItem {
  object: "embedding";
  index: number;
  embedding: number[] | string;
  encoding_format?: "base64";
}

/** OpenAI's CreateEmbeddingResponse. */
export interface CreateEmbeddingResponse {
  object: "list";
  data: EmbeddingItem[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface Engine {
  readonly info: EngineInfo;
  /** engine.embeddings.create, for an engine made with embedding: true. */
  readonly embeddings: {
    create(req: EmbeddingCreateParams, options?: RequestOptions): Promise<CreateEmbeddingResponse>;
  };
  /** Timings of the last finished request; null before the first. */
  readonly stats: Timings | null;
  readonly chat: {
    completions: {
      create(req: ChatCompletionRequest & { stream: true }, options?: RequestOptions): Promise<Stream<ChatCompletionChunk>>;
      create(req: ChatCompletionRequest & { stream?: false | null }, options?: RequestOptions): Promise<ChatCompletion>;
      create(req: ChatCompletionRequest, options?: RequestOptions): Promise<Stream<ChatCompletionChunk> | ChatCompletion>;
    };
  };
  readonly completions: {
    create(req: CompletionRequest & { stream: true }, options?: RequestOptions): Promise<Stream<Completion>>;
    create(req: CompletionRequest & { stream?: false | null }, options?: RequestOptions): Promise<Completion>;
    create(req: CompletionRequest, options?: RequestOptions): Promise<Stream<Completion> | Completion>;
  };
  /**
   * Stops the running request within one token, and any queued ones: they
   * end normally with finish_reason "abort" and what was generated so far.
   * Requests sent after abort() run as usual.
   */
  abort(): void;
  /**
   * Forgets what the KV cache holds: the next request prefills all of its
   * prompt (cached_tokens 0). Runs in order with the requests.
   */
  resetCache(): Promise<void>;
  /**
   * With a model (opts.model, or a string: a model folder's URL) other than
   * the loaded one: loads that model instead, in the same worker, with the
   * other createEngine options as they were; engine.info then describes it.
   * A shared engine joins (or loads) the origin's shared engine of that
   * model and lets go of the old one, which other tabs keep using; this
   * tab's requests still running on the old one are cancelled.
   *
   * Otherwise: loads the model again, in the same worker and engine object, on a newly
   * opened GPU device; resolves to the new info (also engine.info).
   *
   * Device loss. When the browser loses the GPU device (a GPU process crash
   * or reset, a driver update), the request running then, or the next one,
   * fails with a WasmLLMError of code "device_lost" whose details.reason is
   * the GPUDeviceLostInfo's reason ("unknown" for a crash) and
   * details.message its message. Text streamed before the loss was computed
   * before it and is correct; nothing after it is produced. The engine then
   * frees the model; every request fails with "device_lost" until reload()
   * succeeds. The page does not need to be reloaded.
   *
   * reload() takes the manifest and tokenizer from the worker's memory and
   * the shards from Cache Storage, so it makes no network request when the
   * model was cached (info.load.network_bytes === 0); with cache: false it
   * downloads the shards again. It generates what the engine generated
   * before the loss. It may be called at any time (a fresh device, an empty
   * KV cache); requests sent meanwhile wait for it. Chromium blocks WebGPU
   * for a while after repeated GPU crashes: reload() then fails with
   * "no_webgpu" when backend "webgpu" was asked for, or, with backend unset,
   * runs on the CPU with a notice. It fails with "not_loaded" after unload().
   * onProgress and onNotice default to createEngine's.
   */
  reload(opts?: string | { model?: string | Blob | Blob[]; onProgress?: (p: Progress) => void; onNotice?: (message: string) => void }): Promise<EngineInfo>;
  /**
   * Frees the model (GPU memory included) and stops the worker. A shared
   * engine lets go of this tab only (its requests are cancelled); the
   * model unloads sharedIdleMs after the last tab lets go.
   */
  unload(): Promise<void>;
  /** Deletes this model's cached files; the loaded model keeps working. */
  deleteCachedModel(): Promise<boolean>;
}

/**
 * createEngine's options for a model served by an OpenAI-compatible HTTP
 * API (vLLM, or the Go server's `-api` / `-upstream` on this origin, e.g.
 * endpoint "/v1"). Requests go to endpoint + "/chat/completions" and
 * "/completions" as they are (with model set), streams are read as
 * Server-Sent Events chunk by chunk, and the server's fields (usage,
 * logprobs, reasoning_content, tool_calls, timings) pass through.
 *
 * Errors, as WasmLLMError codes (details: status, url, type, param):
 * HTTP 413 and context-length errors (param "input_tokens" or
 * "max_tokens", or vLLM's "maximum context length" message) are
 * "context_overflow" (details.context_length, prompt_tokens when the
 * message names them); other 400s, 404 (an unknown model: details.param
 * "model"), 405, 415 and 422 are "bad_request"; 401, 403, 429, 5xx, a
 * dropped connection or a body that does not parse are "network"; an
 * {"error": ...} event in a stream is mapped the same way. GET /models and
 * non-streamed requests are retried (maxRetries times) after a network
 * failure or a 408/429/5xx answer; a stream is never sent twice.
 */
export interface RemoteEngineOptions {
  /** The API's base URL, with its /v1 (absolute, or relative to the page). */
  endpoint: string;
  /** A model id of GET endpoint/models; may be left out when it lists one. An id it does not list rejects with "bad_request" (details.param "model"). */
  model?: string;
  /** Sent as Authorization: Bearer KEY. (A page that talks to its own -upstream needs none: the server holds the key.) */
  apiKey?: string;
  /** More request headers. */
  headers?: Record<string, string>;
  /** Retries of idempotent calls (default 2). */
  maxRetries?: number;
  /** Stops the model check: createEngine rejects with "aborted". */
  signal?: AbortSignal;
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof fetch;
}

/** What a remote engine's info reports. */
export interface RemoteEngineInfo {
  backend: "remote";
  /** The endpoint, absolute, without a trailing "/". */
  endpoint: string;
  notice: string;
  adapter: null;
  limits: null;
  /** The model card's max_model_len (0 when the server does not say). */
  context_length: number;
  kv_cache_dtype: null;
  model: {
    id: string; name: string; url: string; owned_by: string; root: string;
    has_tokenizer: true;
    /** Assumed: the server applies the template (a model without one fails a chat request with bad_request). */
    has_chat_template: true;
    thinking: false;
  };
  load: { ms: number; network_bytes: 0; cached_bytes: 0 };
}

/** A chat request to a remote engine: the server's own options (no logits processors). */
export interface RemoteChatCompletionRequest extends Omit<ChatCompletionRequest, "response_format" | "tool_choice" | "logits_processors"> {
  response_format?: { type: "text" } | { type: "json_object" } | { type: "json_schema"; json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean } } | null;
  tool_choice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } } | null;
}

/** A completion request to a remote engine. */
export interface RemoteCompletionRequest extends Omit<CompletionRequest, "logits_processors"> {}

/**
 * An engine over an endpoint: the same create() calls, streams and
 * cancelling (create(body, {signal}), leaving a for-await, stream.controller).
 * engine.abort() closes every request in flight: a stream then ends with a
 * last chunk of finish_reason "abort" for each unfinished choice; a plain
 * request rejects with "aborted" (its text never arrived).
 */
export interface RemoteEngine {
  readonly info: RemoteEngineInfo;
  /** The endpoint's /v1/embeddings: req.model names an embedding model (none: the server's only one). */
  readonly embeddings: {
    create(req: EmbeddingCreateParams, options?: RequestOptions): Promise<CreateEmbeddingResponse>;
  };
  /** The timings of the last response that had them (the Go server's -api sends them; vLLM does not). */
  readonly stats: Timings | null;
  readonly chat: {
    completions: {
      create(req: RemoteChatCompletionRequest & { stream: true }, options?: RequestOptions): Promise<Stream<ChatCompletionChunk>>;
      create(req: RemoteChatCompletionRequest & { stream?: false | null }, options?: RequestOptions): Promise<ChatCompletion>;
      create(req: RemoteChatCompletionRequest, options?: RequestOptions): Promise<Stream<ChatCompletionChunk> | ChatCompletion>;
    };
  };
  readonly completions: {
    create(req: RemoteCompletionRequest & { stream: true }, options?: RequestOptions): Promise<Stream<Completion>>;
    create(req: RemoteCompletionRequest & { stream?: false | null }, options?: RequestOptions): Promise<Completion>;
    create(req: RemoteCompletionRequest, options?: RequestOptions): Promise<Stream<Completion> | Completion>;
  };
  abort(): void;
  /** Does nothing: the server keeps its own cache. */
  resetCache(): Promise<void>;
  /** Reads GET /models again, or switches to another model id of the endpoint. */
  reload(opts?: string | { model?: string }): Promise<RemoteEngineInfo>;
  /** Closes the requests in flight; requests after it reject with "not_loaded". */
  unload(): Promise<void>;
  /** Resolves to false: nothing is cached. */
  deleteCachedModel(): Promise<boolean>;
}

/** With an endpoint: an engine over that OpenAI-compatible API (see RemoteEngineOptions). */
export function createEngine(opts: RemoteEngineOptions): Promise<RemoteEngine>;

/**
 * Starts a worker, checks the model against the device and the storage
 * quota before downloading anything, then downloads (or reads from Cache
 * Storage), verifies and loads it. Requests on one engine run one at a time,
 * in order; a chat's next turn prefills only the tokens it does not share
 * with the previous request (usage.prompt_tokens_details.cached_tokens).
 */
export function createEngine(opts: EngineOptions): Promise<Engine>;

/** Deletes a model folder's cached files without an engine. */
export function deleteCachedModel(model: string): Promise<boolean>;

/** The Cache Storage name holding a model folder's files. */
export function cacheNameFor(model: string): string;
