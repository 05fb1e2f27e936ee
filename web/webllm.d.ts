// Types of webllm.js: @mlc-ai/web-llm's names and shapes over the wasmllm
// engine. A page written for WebLLM changes its import line only:
//
//   import * as webllm from "wasmllm/webllm";
//   const engine: webllm.MLCEngineInterface = await webllm.CreateMLCEngine("stories260K", { initProgressCallback });
//
// Differences from WebLLM, where its behaviour and OpenAI's differ (this
// follows OpenAI's):
// - a streaming create() rejects when the request fails before its first
//   token (WebLLM: the first next() throws);
// - n > 1 is allowed with stream: true (WebLLM refuses it);
// - created is in seconds; ids are "chatcmpl-..." and "cmpl-...";
// - usage.prompt_tokens counts the whole prompt, with
//   prompt_tokens_details.cached_tokens for the part reused from the KV
//   cache (WebLLM counts only the new part).
// And where wasmllm differs from WebLLM:
// - models are converted wasmllm folders ({model_id, model: folder URL});
//   model_lib is not used, and ModelRecord.overrides and chatOpts read
//   only context_window_size and the sampling defaults listed in ChatOptions;
// - a LogitProcessor runs after logit_bias (WebLLM: before);
// - response_format takes WebLLM's forms (json_object with a schema
//   string, grammar with GBNF) and OpenAI's json_schema;
// - embeddings need a model record with model_type ModelType.embedding
//   whose model is a GGUF URL (bert, nomic-bert, Qwen3-Embedding);
//   forwardTokensAndSample is refused (bad_request);
// - errors are WasmLLMError with a code (see wasmllm.d.ts), not WebLLM's
//   error classes.

import type {
  EmbeddingCreateParams,
  CreateEmbeddingResponse,
  ChatCompletionRequest as WasmChatRequest,
  CompletionRequest as WasmCompletionRequest,
  ChatCompletion as WasmChatCompletion,
  ChatCompletionChunk as WasmChatCompletionChunk,
  Completion as WasmCompletion,
  ChatMessage,
  Usage,
  EngineInfo,
  EngineOptions,
  Engine,
  Stream,
} from "./wasmllm.js";

export { WasmLLMError } from "./wasmllm.js";
export type { ErrorCode, Timings, FinishReason, TokenLogprob, TopLogprob, ChatMessage, EngineInfo, Stream } from "./wasmllm.js";

/** A loading report: progress in [0, 1], seconds since reload() began, and a line for people. */
export interface InitProgressReport {
  progress: number;
  timeElapsed: number;
  text: string;
}
export type InitProgressCallback = (report: InitProgressReport) => void;

export type LogLevel = "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR" | "SILENT";

/** Model types as WebLLM numbers them; only LLM is supported. */
export declare enum ModelType {
  LLM = 0,
  embedding = 1,
  VLM = 2,
}

/**
 * What a model's chat config sets, as request defaults: context_window_size
 * (the KV cache's tokens), and the sampling defaults used when a request
 * leaves them out. Other mlc-chat-config.json keys are accepted and ignored.
 */
export interface ChatOptions {
  context_window_size?: number;
  /** wasmllm: this model's KV cache type, over the engine config's kvCacheDtype. */
  kv_cache_dtype?: EngineOptions["kvCacheDtype"];
  temperature?: number;
  top_p?: number;
  repetition_penalty?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  [key: string]: unknown;
}

/** One model: model_id names it, model is its converted folder's URL (absolute, or relative to the page). */
export interface ModelRecord {
  model: string;
  model_id: string;
  /** Not used: wasmllm has one engine wasm for every model. */
  model_lib?: string;
  overrides?: ChatOptions;
  vram_required_MB?: number;
  low_resource_required?: boolean;
  buffer_size_required_bytes?: number;
  required_features?: string[];
  model_type?: ModelType;
  [key: string]: unknown;
}

export interface AppConfig {
  model_list: ModelRecord[];
  /** Accepted and ignored: models are kept in Cache Storage. */
  useIndexedDBCache?: boolean;
  cacheBackend?: string;
}

/** A stateful logits processor per model id (MLCEngineConfig.logitProcessorRegistry). */
export interface LogitProcessor {
  processLogits: (logits: Float32Array) => Float32Array;
  processSampledToken: (token: number) => void;
  resetState: () => void;
}

export interface MLCEngineConfig {
  /** The models reload() may load; default prebuiltAppConfig. */
  appConfig?: AppConfig;
  initProgressCallback?: InitProgressCallback;
  logitProcessorRegistry?: Map<string, LogitProcessor>;
  logLevel?: LogLevel;
  /** wasmllm: "webgpu", "cpu", or unset (WebGPU when there is a usable adapter). */
  backend?: EngineOptions["backend"];
  /** wasmllm: the KV cache's type: "f16" (default on WebGPU), "f32", or "q8" (8-bit with a scale per 32 values, 28% of f32's bytes for heads of 128); a model's ChatOptions.kv_cache_dtype wins. */
  kvCacheDtype?: EngineOptions["kvCacheDtype"];
  /** wasmllm: false to keep models out of Cache Storage. */
  cache?: boolean;
  /** wasmllm: messages such as the CPU fallback. */
  onNotice?: (message: string) => void;
  /** wasmllm: where worker.js and wasmllm.wasm are (default: beside wasmllm.js). */
  workerURL?: string | URL;
  wasmURL?: string | URL;
  /** wasmllm: use the origin's shared engine of each model (EngineOptions.shared); CreateServiceWorkerMLCEngine sets it. */
  shared?: boolean;
  /** wasmllm: EngineOptions.sharedIdleMs. */
  sharedIdleMs?: number;
  /** WebLLM's older place for CreateServiceWorkerMLCEngine's chatOpts. */
  chatOpts?: ChatOptions | ChatOptions[];
}

/** usage, with WebLLM's speeds in extra. */
export interface CompletionUsage extends Usage {
  extra: {
    /** Seconds from create() to the end of the response. */
    e2e_latency_s: number;
    prefill_tokens_per_s: number;
    decode_tokens_per_s: number;
    /** Seconds of prefill (until the first token's logits). */
    time_to_first_token_s: number;
    /** Seconds of decoding per generated token. */
    time_per_output_token_s: number;
  };
}

export type ChatCompletionMessageParam = ChatMessage;

/** WebLLM's extra_body: enable_thinking becomes chat_template_kwargs.enable_thinking. */
export interface ExtraBody {
  enable_thinking?: boolean | null;
  enable_latency_breakdown?: boolean | null;
}

export interface ChatCompletionRequestBase extends Omit<WasmChatRequest, "stream"> {
  stream?: boolean | null;
  extra_body?: ExtraBody | null;
}
export interface ChatCompletionRequestStreaming extends ChatCompletionRequestBase { stream: true }
export interface ChatCompletionRequestNonStreaming extends ChatCompletionRequestBase { stream?: false | null }
export type ChatCompletionRequest = ChatCompletionRequestStreaming | ChatCompletionRequestNonStreaming;

export interface CompletionCreateParamsBase extends Omit<WasmCompletionRequest, "stream"> {
  stream?: boolean | null;
}
export interface CompletionCreateParamsStreaming extends CompletionCreateParamsBase { stream: true }
export interface CompletionCreateParamsNonStreaming extends CompletionCreateParamsBase { stream?: false | null }
export type CompletionCreateParams = CompletionCreateParamsStreaming | CompletionCreateParamsNonStreaming;

/** A chat completion: model is the model_id; usage has extra. */
export interface ChatCompletion extends Omit<WasmChatCompletion, "usage"> { usage: CompletionUsage }
/** A chunk; only the include_usage chunk (choices []) has usage. */
export interface ChatCompletionChunk extends Omit<WasmChatCompletionChunk, "usage"> { usage?: CompletionUsage }
/** A completion or completion chunk. */
export interface Completion extends Omit<WasmCompletion, "usage"> { usage?: CompletionUsage }

export interface Chat {
  completions: {
    create(req: ChatCompletionRequestNonStreaming): Promise<ChatCompletion>;
    create(req: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>>;
    create(req: ChatCompletionRequestBase): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion>;
  };
}
export interface Completions {
  create(req: CompletionCreateParamsNonStreaming): Promise<Completion>;
  create(req: CompletionCreateParamsStreaming): Promise<AsyncIterable<Completion>>;
  create(req: CompletionCreateParamsBase): Promise<AsyncIterable<Completion> | Completion>;
}
export interface Embeddings {
  /** OpenAI's embeddings.create, for a model loaded from a record with model_type ModelType.embedding. */
  create(req: EmbeddingCreateParams): Promise<CreateEmbeddingResponse>;
}

/** What both MLCEngine and WebWorkerMLCEngine offer. */
export interface MLCEngineInterface {
  chat: Chat;
  completions: Completions;
  embeddings: Embeddings;
  setInitProgressCallback(initProgressCallback: InitProgressCallback): void;
  getInitProgressCallback(): InitProgressCallback | undefined;
  setAppConfig(appConfig: AppConfig): void;
  /**
   * Unloads every model, then loads modelId, or each of a list (then
   * request.model picks one; each model has a worker of its own).
   * chatOpts[i] goes with modelId[i]. unload() during a reload stops it.
   */
  reload(modelId: string | string[], chatOpts?: ChatOptions | ChatOptions[]): Promise<void>;
  chatCompletion(request: ChatCompletionRequestNonStreaming): Promise<ChatCompletion>;
  chatCompletion(request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>>;
  chatCompletion(request: ChatCompletionRequestBase): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion>;
  completion(request: CompletionCreateParamsNonStreaming): Promise<Completion>;
  completion(request: CompletionCreateParamsStreaming): Promise<AsyncIterable<Completion>>;
  completion(request: CompletionCreateParamsBase): Promise<AsyncIterable<Completion> | Completion>;
  embedding(request: EmbeddingCreateParams): Promise<CreateEmbeddingResponse>;
  /** "prefill: N tokens/sec, decoding: N tokens/sec", since the load or the last resetChat(). */
  runtimeStatsText(modelId?: string): Promise<string>;
  /** Stops the request being generated: it ends with finish_reason "abort" and the text so far. */
  interruptGenerate(): void;
  unload(): Promise<void>;
  /** Empties the KV cache (the next request prefills its whole prompt) and, unless keepStats, the statistics. */
  resetChat(keepStats?: boolean, modelId?: string): Promise<void>;
  /** The text of the last (or running) request's first choice. */
  getMessage(modelId?: string): Promise<string>;
  getMaxStorageBufferBindingSize(): Promise<number>;
  getGPUVendor(): Promise<string>;
  /** Not supported: rejects with bad_request. */
  forwardTokensAndSample(inputIds: number[], isPrefill: boolean, modelId?: string): Promise<number>;
  setLogLevel(logLevel: LogLevel): void;
}

/** The engine in this page (its models run in workers of their own). */
export declare class MLCEngine implements MLCEngineInterface {
  constructor(engineConfig?: MLCEngineConfig);
  chat: Chat;
  completions: Completions;
  embeddings: Embeddings;
  appConfig: AppConfig;
  setInitProgressCallback(initProgressCallback: InitProgressCallback): void;
  getInitProgressCallback(): InitProgressCallback | undefined;
  setAppConfig(appConfig: AppConfig): void;
  setLogitProcessorRegistry(registry?: Map<string, LogitProcessor>): void;
  reload(modelId: string | string[], chatOpts?: ChatOptions | ChatOptions[]): Promise<void>;
  chatCompletion(request: ChatCompletionRequestNonStreaming): Promise<ChatCompletion>;
  chatCompletion(request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>>;
  chatCompletion(request: ChatCompletionRequestBase): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion>;
  completion(request: CompletionCreateParamsNonStreaming): Promise<Completion>;
  completion(request: CompletionCreateParamsStreaming): Promise<AsyncIterable<Completion>>;
  completion(request: CompletionCreateParamsBase): Promise<AsyncIterable<Completion> | Completion>;
  embedding(request: EmbeddingCreateParams): Promise<CreateEmbeddingResponse>;
  runtimeStatsText(modelId?: string): Promise<string>;
  interruptGenerate(): void;
  unload(): Promise<void>;
  resetChat(keepStats?: boolean, modelId?: string): Promise<void>;
  getMessage(modelId?: string): Promise<string>;
  getMaxStorageBufferBindingSize(): Promise<number>;
  getGPUVendor(): Promise<string>;
  forwardTokensAndSample(inputIds: number[], isPrefill: boolean, modelId?: string): Promise<number>;
  setLogLevel(logLevel: LogLevel): void;
  /** wasmllm: the engine of a loaded model (info, stats, deleteCachedModel, logits_processors...). */
  engineOf(modelId?: string): Engine;
}

/** Creates an MLCEngine and loads modelId (see MLCEngineInterface.reload). */
export function CreateMLCEngine(modelId: string | string[], engineConfig?: MLCEngineConfig, chatOpts?: ChatOptions | ChatOptions[]): Promise<MLCEngine>;

/** Runs an MLCEngine inside a worker: `self.onmessage = (msg) => handler.onmessage(msg)`. */
export declare class WebWorkerMLCEngineHandler {
  constructor();
  engine: MLCEngine;
  onmessage(event: MessageEvent | unknown): void;
  postMessage(msg: unknown): void;
  setLogitProcessorRegistry(registry?: Map<string, LogitProcessor>): void;
}

/** The page's side of an MLCEngine in a worker that runs a WebWorkerMLCEngineHandler. */
export declare class WebWorkerMLCEngine implements MLCEngineInterface {
  constructor(worker: Worker, engineConfig?: MLCEngineConfig);
  worker: Worker;
  modelId?: string[];
  chatOpts?: ChatOptions[];
  chat: Chat;
  completions: Completions;
  embeddings: Embeddings;
  setInitProgressCallback(initProgressCallback: InitProgressCallback): void;
  getInitProgressCallback(): InitProgressCallback | undefined;
  setAppConfig(appConfig: AppConfig): void;
  reload(modelId: string | string[], chatOpts?: ChatOptions | ChatOptions[]): Promise<void>;
  chatCompletion(request: ChatCompletionRequestNonStreaming): Promise<ChatCompletion>;
  chatCompletion(request: ChatCompletionRequestStreaming): Promise<AsyncIterable<ChatCompletionChunk>>;
  chatCompletion(request: ChatCompletionRequestBase): Promise<AsyncIterable<ChatCompletionChunk> | ChatCompletion>;
  completion(request: CompletionCreateParamsNonStreaming): Promise<Completion>;
  completion(request: CompletionCreateParamsStreaming): Promise<AsyncIterable<Completion>>;
  completion(request: CompletionCreateParamsBase): Promise<AsyncIterable<Completion> | Completion>;
  embedding(request: EmbeddingCreateParams): Promise<CreateEmbeddingResponse>;
  runtimeStatsText(modelId?: string): Promise<string>;
  interruptGenerate(): void;
  unload(): Promise<void>;
  resetChat(keepStats?: boolean, modelId?: string): Promise<void>;
  getMessage(modelId?: string): Promise<string>;
  getMaxStorageBufferBindingSize(): Promise<number>;
  getGPUVendor(): Promise<string>;
  forwardTokensAndSample(inputIds: number[], isPrefill: boolean, modelId?: string): Promise<number>;
  setLogLevel(logLevel: LogLevel): void;
  /** wasmllm: engine.info of a loaded model. */
  info(modelId?: string): Promise<EngineInfo>;
}

/** Creates a WebWorkerMLCEngine over worker and loads modelId. */
export function CreateWebWorkerMLCEngine(worker: Worker, modelId: string | string[], engineConfig?: MLCEngineConfig, chatOpts?: ChatOptions | ChatOptions[]): Promise<WebWorkerMLCEngine>;

/**
 * WebLLM's service-worker engine: an MLCEngine whose models are the
 * origin's shared engines (EngineOptions.shared), loaded once for every tab
 * of the origin. They run in a SharedWorker, not a ServiceWorker (README:
 * Firefox gives a ServiceWorker no WebGPU, Chromium stops an idle one), so
 * no service worker needs to be registered; the first argument may be
 * WebLLM's service worker (not used) or an engine config.
 */
export declare class ServiceWorkerMLCEngine extends MLCEngine {
  constructor(engineConfigOrServiceWorker?: MLCEngineConfig | ServiceWorker, keepAliveMs?: number);
  /** Accepted for WebLLM's sake; unused. */
  keepAliveMs: number;
  /** setAppConfig(appConfig) when given, then reload(modelId, chatOpts). */
  init(modelId: string | string[], chatOpts?: ChatOptions | ChatOptions[], appConfig?: AppConfig): Promise<void>;
}

/** Creates a ServiceWorkerMLCEngine and loads modelId (joining another tab's engine of it); chatOpts default to engineConfig.chatOpts. */
export function CreateServiceWorkerMLCEngine(modelId: string | string[], engineConfig?: MLCEngineConfig, chatOpts?: ChatOptions | ChatOptions[], keepAliveMs?: number): Promise<ServiceWorkerMLCEngine>;

/**
 * For a service worker written for WebLLM (`new ServiceWorkerMLCEngineHandler()`
 * in its activate handler): it holds no engine (wasmllm's is in a
 * SharedWorker). It answers WebLLM's keepAlive messages with a heartbeat,
 * and any other WebLLM message with a "throw" that says where the engine is.
 */
export declare class ServiceWorkerMLCEngineHandler {
  constructor();
  onmessage(event: MessageEvent): void;
}

/**
 * The models shipped beside webllm.js (the bundled stories260K). With no
 * appConfig, an id it does not list is looked up as models/<id>/ beside
 * webllm.js.
 */
export const prebuiltAppConfig: AppConfig;
export const modelVersion: string;
export const modelLibURLPrefix: string;
export const functionCallingModelIds: string[];

/** Whether a finished load cached the model (in Cache Storage). */
export function hasModelInCache(modelId: string, appConfig?: AppConfig): Promise<boolean>;
/** Deletes a model's cached files. */
export function deleteModelAllInfoInCache(modelId: string, appConfig?: AppConfig): Promise<void>;
export function deleteModelInCache(modelId: string, appConfig?: AppConfig): Promise<void>;
/** No-ops: wasmllm keeps no separate chat config or model wasm. */
export function deleteChatConfigInCache(modelId: string, appConfig?: AppConfig): Promise<void>;
export function deleteModelWasmInCache(modelId: string, appConfig?: AppConfig): Promise<void>;
