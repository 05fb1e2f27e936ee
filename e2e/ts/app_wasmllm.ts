// A sample app over wasmllm's OpenAI-shaped API: it uses every part of
// wasmllm.d.ts, and the lines marked @ts-expect-error must not compile.
// e2e/types_test.go compiles it with tsc --strict against the npm package.
import { createEngine, deleteCachedModel, cacheNameFor, WasmLLMError } from "wasmllm";
import type {
  ChatCompletion, ChatCompletionChunk, Completion, EngineInfo, EngineOptions, ErrorCode, Progress, Stream,
  Timings, LogitsProcessor, ChatMessage, Usage, FinishReason, SharedInfo,
} from "wasmllm";

const say = (...xs: unknown[]) => console.log(...xs);

export async function main(): Promise<void> {
  const opts: EngineOptions = {
    model: "/models/stories260K/",
    backend: "cpu",
    contextLength: 512,
    kvCacheDtype: "f16",
    concurrency: 2,
    maxRetries: 3,
    cache: true,
    heapBytes: 1 << 30,
    onProgress: (p: Progress) => say(p.bytes / p.total, p.shards_done, p.shards_total, p.rate),
    onNotice: (m: string) => say(m),
    signal: new AbortController().signal,
  };
  const engine = await createEngine(opts);
  const info: EngineInfo = engine.info;
  // One engine for every tab of the origin.
  const shared = await createEngine({ model: "/models/stories260K/", shared: true, sharedIdleMs: 10000 });
  const how: SharedInfo | undefined = shared.info.shared;
  if (how) say(how.mode === "per-tab" ? how.reason : `shared by ${how.clients} tabs, reused ${how.reused}`);
  // @ts-expect-error mode is "shared-worker" or "per-tab"
  const badMode: SharedInfo["mode"] = "service-worker";
  say(badMode);
  await shared.unload();
  say(info.backend, info.context_length, info.kv_cache_dtype, info.model.name, info.model.has_chat_template, info.load.ms);

  const messages: ChatMessage[] = [
    { role: "developer", content: "Answer briefly." },
    { role: "user", content: [{ type: "text", text: "Hi" }, { type: "text", text: "there" }] },
    { role: "assistant", content: null, tool_calls: [] },
    { role: "tool", content: "42", tool_call_id: "c1" },
  ];
  const r: ChatCompletion = await engine.chat.completions.create({
    messages, n: 2, seed: 1, max_tokens: 8, temperature: 0.7, top_p: 0.9, top_k: 40, logit_bias: { "5": -100 },
    response_format: { type: "text" }, tool_choice: "none", tools: [], logprobs: true, top_logprobs: 2,
    chat_template_kwargs: { enable_thinking: false }, stop: ["\n"], model: null, user: null,
  });
  for (const c of r.choices) {
    const fr: FinishReason = c.finish_reason;
    say(c.index, c.message.content, fr, c.logprobs?.content[0]?.top_logprobs[0]?.token);
  }
  const u: Usage = r.usage;
  say(u.prompt_tokens, u.completion_tokens, u.prompt_tokens_details.cached_tokens, r.timings.decode_tokens_per_s);

  const ac = new AbortController();
  const stream: Stream<ChatCompletionChunk> = await engine.chat.completions.create(
    { messages, stream: true, stream_options: { include_usage: true } }, { signal: ac.signal });
  let text = "";
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    if (chunk.usage) say(chunk.usage.total_tokens);
    if (text.length > 10) break; // cancels the request
  }
  stream.controller.abort();
  ac.abort();

  const veto: LogitsProcessor = (logits, ids) => { logits[0] = -Infinity; say(ids.length); };
  const c: Completion = await engine.completions.create({ prompt: [1, 2, 3], max_tokens: 4, logprobs: 2, logits_processors: [veto] });
  say(c.choices[0]?.text, c.usage?.prompt_tokens, c.timings?.decode_tokens_per_s, c.choices[0]?.logprobs?.tokens);
  for await (const x of await engine.completions.create({ prompt: "Once", stream: true, n: 2 })) say(x.choices[0]?.index, x.choices[0]?.text);
  const either = await engine.chat.completions.create({ messages, stream: Math.random() > 0.5 });
  if (Symbol.asyncIterator in either) for await (const x of either) say(x.id); else say(either.choices.length);

  engine.abort();
  await engine.resetCache();
  const stats: Timings | null = engine.stats;
  say(stats?.prefill_tokens_per_s);
  await engine.reload();
  await engine.reload("/models/other/");
  await engine.reload({ model: "/models/stories260K/", onProgress: (p) => say(p.bytes), onNotice: say });
  await engine.deleteCachedModel();
  await engine.unload();
  say(await deleteCachedModel("/models/x/"), cacheNameFor("/models/x/"));
  try {
    await createEngine({ model: "/missing/" });
  } catch (e) {
    if (e instanceof WasmLLMError) {
      const code: ErrorCode = e.code;
      say(code === "aborted" || code === "network", e.details, e.message);
    }
  }

  // @ts-expect-error: not a chat role
  await engine.chat.completions.create({ messages: [{ role: "narrator", content: "x" }] });
  // Constrained decoding and forced tool calls.
  const j: ChatCompletion = await engine.chat.completions.create({ messages, response_format: { type: "json_schema", json_schema: { name: "p", schema: { type: "object" }, strict: true } } });
  say(j.choices[0]?.message.content ?? "");
  await engine.chat.completions.create({ messages, response_format: { type: "json_object" } });
  await engine.chat.completions.create({ messages, response_format: { type: "grammar", grammar: 'root ::= "a"' } });
  await engine.completions.create({ prompt: "x", guided_choice: ["a", "b"], guided_regex: null, structured_outputs: { regex: "[0-9]+" } });
  const tc: ChatCompletion = await engine.chat.completions.create({
    messages, tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }], tool_choice: "required", parallel_tool_calls: false,
  });
  for (const call of tc.choices[0]?.message.tool_calls ?? []) say(call.id, call.function?.name, call.function?.arguments);
  const fr2: FinishReason = "grammar_dead_end";
  say(fr2);
  // @ts-expect-error: not a response format
  await engine.chat.completions.create({ messages, response_format: { type: "yaml" } });
  // @ts-expect-error: tool_choice is a mode or a function
  await engine.chat.completions.create({ messages, tool_choice: "always" });
  // @ts-expect-error: a completion needs a prompt
  await engine.completions.create({ max_tokens: 3 });
}

// The same API over an OpenAI-compatible endpoint (vLLM, or go run . -api / -upstream).
import type { RemoteEngine, RemoteEngineInfo, RemoteEngineOptions, ToolCall } from "wasmllm";

export async function remote(): Promise<void> {
  const opts: RemoteEngineOptions = { endpoint: "/v1", model: "Qwen/Qwen3-8B", apiKey: "k", maxRetries: 1, headers: { "X-Request-Id": "1" }, signal: new AbortController().signal };
  const engine: RemoteEngine = await createEngine(opts);
  const emb = await engine.embeddings.create({ model: "bge-small-en-v1.5-q8_0", input: "a query", encoding_format: "float" });
  say(emb.data[0]?.embedding, emb.usage.total_tokens);
  const info: RemoteEngineInfo = engine.info;
  say(info.backend === "remote", info.endpoint, info.model.id, info.context_length);
  const r = await engine.chat.completions.create({
    messages: [{ role: "user", content: "Hi" }], response_format: { type: "json_object" }, tool_choice: "required", tools: [],
    logprobs: true, top_logprobs: 1, max_tokens: 8,
  });
  const calls: ToolCall[] | undefined = r.choices[0]?.message.tool_calls;
  say(r.choices[0]?.message.reasoning_content, calls?.[0]?.function?.name, r.usage.total_tokens);
  const ac = new AbortController();
  for await (const c of await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi" }], stream: true, stream_options: { include_usage: true } }, { signal: ac.signal })) {
    const d = c.choices[0]?.delta;
    say(d?.content, d?.reasoning_content, d?.tool_calls?.[0]?.function?.arguments, c.usage?.completion_tokens);
  }
  const t = await engine.completions.create({ prompt: "Once", max_tokens: 4, logprobs: 1 });
  say(t.choices[0]?.text, t.choices[0]?.logprobs?.tokens);
  engine.abort();
  await engine.reload("other-model");
  await engine.unload();
  // @ts-expect-error: logits processors run only with a local model
  await engine.completions.create({ prompt: "x", logits_processors: [() => {}] });
}

export async function embeddings(): Promise<void> {
  const engine = await createEngine({ model: "/models/bge-small-en-v1.5-q8_0.gguf", embedding: true, backend: "webgpu" });
  say(engine.info.embedding?.dimensions, engine.info.embedding?.pooling, engine.info.model.arch);
  const r = await engine.embeddings.create({ input: ["a", "b"], dimensions: 128, truncate_prompt_tokens: -1 });
  const v: number[] | string | undefined = r.data[0]?.embedding;
  say(r.object, r.model, r.usage.prompt_tokens, v);
  const b = await engine.embeddings.create({ input: [[101, 2054, 102]], encoding_format: "base64" });
  say(b.data[0]?.encoding_format, b.data[0]?.index);
  // @ts-expect-error: encoding_format is float or base64
  await engine.embeddings.create({ input: "a", encoding_format: "hex" });
}
