// The official OpenAI client (npm "openai", pinned in package-lock.json)
// against the native engine's API (go run . -api). Run by TestOpenAIClient
// in server/openai/client_test.go, which starts the server and sets:
//   WASMLLM_BASE_URL    http://127.0.0.1:PORT/v1
//   WASMLLM_TEXT_MODEL  a model without a chat template (stories260K)
//   WASMLLM_CHAT_MODEL  a model with one (tiny-qwen3 converted with Qwen3's)
//   WASMLLM_ABORT_TOKENS  max_tokens of the request the abort test cuts short
//   WASMLLM_EMBED_MODEL   an embedding model of -api-embed (tiny-bert-cls-q4_0)
//   WASMLLM_EMBED_GOLDEN  its llama.cpp golden (.json.gz)
import { test } from "node:test";
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
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
  assert.deepEqual(ids.sort(), [chatModel, textModel, process.env.WASMLLM_EMBED_MODEL].sort());
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

// Structured output and tools. The chat model's template has Qwen3's
// thinking switch: off, so the reply is the constrained text itself.
const noThink = { chat_template_kwargs: { enable_thinking: false } };
const placeSchema = {
  type: "object",
  properties: { city: { enum: ["Paris", "Rome"] }, sunny: { type: "boolean" } },
  required: ["city", "sunny"],
  additionalProperties: false,
};
const checkPlace = (p) => {
  assert.ok(["Paris", "Rome"].includes(p.city), JSON.stringify(p));
  assert.equal(typeof p.sunny, "boolean", JSON.stringify(p));
  assert.deepEqual(Object.keys(p).sort(), ["city", "sunny"]);
};

test("response_format json_schema: the reply parses and validates", async () => {
  const params = {
    model: chatModel, messages, max_tokens: 400, temperature: 0, ...noThink,
    response_format: { type: "json_schema", json_schema: { name: "place", strict: true, schema: placeSchema } },
  };
  // parse() is the client's own structured-output path: it JSON-parses
  // the content into message.parsed (and refuses a reply cut by length).
  const whole = await client.chat.completions.parse(params);
  assert.equal(whole.choices[0].finish_reason, "stop");
  checkPlace(whole.choices[0].message.parsed);

  let text = "";
  for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
    for (const c of chunk.choices) text += c.delta.content ?? "";
  }
  assert.equal(text, whole.choices[0].message.content);

  await assert.rejects(
    client.chat.completions.create({ ...params, response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "nonsense" } } } }),
    (err) => {
      assert.ok(err instanceof BadRequestError, `${err}`);
      assert.equal(err.param, "response_format.json_schema.schema");
      return true;
    },
  );
});

test("vLLM's guided_choice and guided_regex", async () => {
  const choices = ["happy", "sad", "very sad"];
  const c = await client.completions.create({ model: textModel, prompt: "Once upon a time", max_tokens: 10, temperature: 0, guided_choice: choices });
  assert.ok(choices.includes(c.choices[0].text), c.choices[0].text);
  assert.equal(c.choices[0].finish_reason, "stop");
  const chat = await client.chat.completions.create({ model: chatModel, messages, max_tokens: 10, temperature: 0, ...noThink, guided_choice: choices });
  assert.ok(choices.includes(chat.choices[0].message.content), chat.choices[0].message.content);
  const r = await client.completions.create({ model: textModel, prompt: "Lily", max_tokens: 10, temperature: 0, guided_regex: "[0-9]{3}-[a-z]{2}" });
  assert.match(r.choices[0].text, /^[0-9]{3}-[a-z]{2}$/);
  await assert.rejects(client.completions.create({ model: textModel, prompt: "x", guided_regex: "a(" }), (err) => {
    assert.ok(err instanceof BadRequestError, `${err}`);
    assert.equal(err.param, "guided_regex");
    return true;
  });
});

test("tools with tool_choice required, whole and streamed", async () => {
  const tools = [
    { type: "function", function: { name: "get_weather", description: "The weather in a city", strict: true, parameters: placeSchema } },
    { type: "function", function: { name: "get_time", strict: true, parameters: { type: "object", properties: { zone: { enum: ["UTC", "CET"] } }, required: ["zone"], additionalProperties: false } } },
  ];
  const ask = [{ role: "user", content: "Weather in Paris?" }];
  const params = { model: chatModel, messages: ask, tools, tool_choice: { type: "function", function: { name: "get_weather" } }, max_tokens: 400, temperature: 0, ...noThink };
  // parse() checks the calls are function calls and, the tools being
  // strict, JSON-parses their arguments.
  const whole = await client.chat.completions.parse(params);
  const msg = whole.choices[0].message;
  assert.equal(whole.choices[0].finish_reason, "tool_calls");
  assert.equal(msg.content, null);
  assert.equal(msg.tool_calls.length, 1);
  const call = msg.tool_calls[0];
  assert.equal(call.type, "function");
  assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
  assert.equal(call.function.name, "get_weather");
  checkPlace(call.function.parsed_arguments);

  // The client's stream helper puts the deltas together as OpenAI's
  // stream sends them (it refuses pieces without index, id, type, name).
  const final = await client.chat.completions.stream(params).finalChatCompletion();
  assert.equal(final.choices[0].finish_reason, "tool_calls");
  const sc = final.choices[0].message.tool_calls;
  assert.equal(sc.length, 1);
  assert.equal(sc[0].function.name, "get_weather");
  assert.equal(sc[0].function.arguments, call.function.arguments);
  assert.match(sc[0].id, /^call_/);

  // "required" with one call at most; then the result goes back.
  const req = await client.chat.completions.create({ ...params, tool_choice: "required", parallel_tool_calls: false });
  const rc = req.choices[0].message.tool_calls;
  assert.equal(req.choices[0].finish_reason, "tool_calls");
  assert.equal(rc.length, 1);
  assert.ok(["get_weather", "get_time"].includes(rc[0].function.name));
  JSON.parse(rc[0].function.arguments);
  const history = [...ask, { role: "assistant", content: null, tool_calls: rc }, { role: "tool", tool_call_id: rc[0].id, content: '{"temperature": 21}' }];
  const next = await client.chat.completions.create({ model: chatModel, messages: history, tools, max_tokens: 4, temperature: 0, ...noThink });
  assert.ok(next.usage.prompt_tokens > req.usage.prompt_tokens);
  assert.ok(next.usage.completion_tokens > 0);
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
  // ignore_eos: a sampled end of turn after one token (the tiny model's
  // output is random) is not what this checks.
  const next = await client.chat.completions.create({ model: chatModel, messages, max_tokens: 4, ignore_eos: true });
  const waited = Date.now() - start;
  assert.equal(next.usage.completion_tokens, 4);
  assert.ok(waited < 10_000, `the next request took ${waited} ms: the aborted one went on`);
});

test("embeddings.create: float, base64 (the client's default), batches, dimensions, errors", async () => {
  const embedModel = process.env.WASMLLM_EMBED_MODEL;
  const golden = JSON.parse(gunzipSync(readFileSync(process.env.WASMLLM_EMBED_GOLDEN)).toString("utf8"));
  const relErr = (got, want) => {
    let d = 0, w = 0;
    for (let i = 0; i < want.length; i++) {
      d = Math.max(d, Math.abs(got[i] - want[i]));
      w = Math.max(w, Math.abs(want[i]));
    }
    assert.equal(got.length, want.length);
    return d / w;
  };
  const texts = [golden.input_texts[3], golden.input_texts[4], golden.input_texts[5]];
  const tokens = golden.inputs[3].length + golden.inputs[4].length + golden.inputs[5].length;
  // The client asks for base64 unless told otherwise and decodes it.
  for (const format of [undefined, "float", "base64"]) {
    const res = await client.embeddings.create({ model: embedModel, input: texts, ...(format ? { encoding_format: format } : {}) });
    assert.equal(res.object, "list");
    assert.equal(res.model, embedModel);
    assert.equal(res.data.length, 3);
    assert.equal(res.usage.prompt_tokens, tokens);
    assert.equal(res.usage.total_tokens, tokens);
    res.data.forEach((d, i) => {
      assert.equal(d.index, i);
      let v = d.embedding;
      if (format === "base64") {
        const b = Buffer.from(v, "base64");
        v = Array.from(new Float32Array(b.buffer, b.byteOffset, b.length / 4));
      }
      assert.ok(relErr(v, golden.embeddings_normalized[3 + i]) <= golden.tolerance, `${format} item ${i}`);
    });
  }
  const ids = await client.embeddings.create({ model: embedModel, input: golden.inputs[1], encoding_format: "float" });
  assert.ok(relErr(ids.data[0].embedding, golden.embeddings_normalized[1]) <= golden.tolerance);
  const dims = await client.embeddings.create({ model: embedModel, input: "the sun", dimensions: 16, encoding_format: "float" });
  assert.equal(dims.data[0].embedding.length, 16);
  await assert.rejects(client.embeddings.create({ model: embedModel, input: "the sun ".repeat(200) }), (e) => e instanceof BadRequestError && /input 0 has \d+ tokens/.test(e.message));
  await assert.rejects(client.embeddings.create({ model: "no-such-model", input: "a" }), NotFoundError);
});
