// The official OpenAI client (npm "openai", pinned in package-lock.json)
// against the native engine's API (go run . -api). Run by TestOpenAIClient
// in server/openai/client_test.go, which starts the server and sets:
//   WASMLLM_BASE_URL    http://127.0.0.1:PORT/v1
//   WASMLLM_TEXT_MODEL  a model without a chat template (stories260K)
//   WASMLLM_CHAT_MODEL  a model with one (tiny-qwen3 converted with Qwen3's)
//   WASMLLM_ABORT_TOKENS  max_tokens of the request the abort test cuts short
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { APIError, BadRequestError, NotFoundError } from "openai";

const baseURL = process.env.WASMLLM_BASE_URL;
const textModel = process.env.WASMLLM_TEXT_MODEL;
const chatModel = process.env.WASMLLM_CHAT_MODEL;
const abortTokens = Number(process.env.WASMLLM_ABORT_TOKENS || 8000);
assert.ok(baseURL && textModel && chatModel, "run through TestOpenAIClient (go test ./server/openai/)");

// No retries: every answer is checked as the server gave it.
const client = new OpenAI({ baseURL, apiKey: "not-needed", maxRetries: 0, timeout: 120_000 });
const messages = [{ role: "user", content: "Hello" }];

test("models.list and models.retrieve", async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.object, "model");
    ids.push(m.id);
  }
  assert.deepEqual(ids.sort(), [chatModel, textModel].sort());
  const m = await client.models.retrieve(textModel);
  assert.equal(m.id, textModel);
});

test("completions, whole and streamed, with usage", async () => {
  const params = { model: textModel, prompt: "Once upon a time", max_tokens: 16, temperature: 0 };
  const whole = await client.completions.create(params);
  assert.equal(whole.object, "text_completion");
  assert.equal(whole.model, textModel);
  assert.equal(whole.choices.length, 1);
  assert.equal(whole.choices[0].finish_reason, "length");
  assert.ok(whole.choices[0].text.length > 0);
  assert.equal(whole.usage.completion_tokens, 16);
  assert.equal(whole.usage.total_tokens, whole.usage.prompt_tokens + 16);

  const stream = await client.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = "";
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(usage, null, "a chunk after the usage chunk");
    if (chunk.usage) {
      assert.equal(chunk.choices.length, 0, "the usage chunk has no choices");
      usage = chunk.usage;
    }
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(chunks > 2);
  assert.equal(text, whole.choices[0].text);
  assert.equal(finish, "length");
  assert.equal(usage.completion_tokens, 16);
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens);
  // The same prompt again: the KV cache holds all of it but the last token.
  assert.equal(usage.prompt_tokens_details.cached_tokens, whole.usage.prompt_tokens - 1);

  // Without include_usage a stream carries no usage.
  for await (const chunk of await client.completions.create({ ...params, stream: true })) {
    assert.ok(!chunk.usage, "usage without stream_options.include_usage");
  }
});

test("chat completions, whole and streamed", async () => {
  const params = { model: chatModel, messages, max_tokens: 12, temperature: 0 };
  const whole = await client.chat.completions.create(params);
  assert.equal(whole.object, "chat.completion");
  assert.equal(whole.choices[0].message.role, "assistant");
  assert.equal(typeof whole.choices[0].message.content, "string");
  assert.ok(["length", "stop"].includes(whole.choices[0].finish_reason));
  assert.ok(whole.usage.prompt_tokens > 0 && whole.usage.completion_tokens > 0);

  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let first = true;
  let content = "";
  let usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    if (first) {
      assert.equal(chunk.choices[0].delta.role, "assistant");
      first = false;
    }
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) content += c.delta.content ?? "";
  }
  assert.equal(content, whole.choices[0].message.content);
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens);
});

test("errors are the client's error classes", async () => {
  await assert.rejects(client.chat.completions.create({ model: "no-such-model", messages }), (err) => {
    assert.ok(err instanceof NotFoundError, `${err}`);
    assert.equal(err.status, 404);
    assert.equal(err.param, "model");
    assert.equal(err.type, "NotFoundError");
    return true;
  });
  await assert.rejects(client.completions.create({ model: textModel, prompt: "x", temperature: 5 }), (err) => {
    assert.ok(err instanceof BadRequestError, `${err}`);
    assert.equal(err.status, 400);
    assert.equal(err.param, "temperature");
    return true;
  });
  // A streamed request that cannot run fails as create() rejects, with its status.
  await assert.rejects(client.completions.create({ model: textModel, prompt: "x", max_tokens: 100000, stream: true }), (err) => {
    assert.ok(err instanceof BadRequestError, `${err}`);
    assert.equal(err.param, "max_tokens");
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: textModel, messages }), (err) => {
    assert.ok(err instanceof APIError && err.status === 400, `${err}`);
    return true;
  });
});

test("abort stops the server's generation", async () => {
  const controller = new AbortController();
  const stream = await client.chat.completions.create(
    { model: chatModel, messages, max_tokens: abortTokens, ignore_eos: true, stream: true },
    { signal: controller.signal },
  );
  let chunks = 0;
  try {
    for await (const _ of stream) {
      if (++chunks === 3) controller.abort();
    }
  } catch (err) {
    assert.ok(controller.signal.aborted, `${err}`);
  }
  assert.ok(chunks >= 3 && chunks < abortTokens);
  // The same model answers one request at a time: this one would wait for
  // the whole of the first if the first went on.
  const start = Date.now();
  const next = await client.chat.completions.create({ model: chatModel, messages, max_tokens: 4 });
  const waited = Date.now() - start;
  assert.equal(next.usage.completion_tokens, 4);
  assert.ok(waited < 10_000, `the next request took ${waited} ms: the aborted one went on`);
});
