// Sample pages written against WebLLM's API the way its examples write
// them (get started, streaming, a web worker, several models), importing
// wasmllm's WebLLM entry point instead: e2e/types_test.go compiles them
// with tsc --strict against the npm package.
import * as webllm from "wasmllm/webllm";

function setLabel(id: string, text: string) {
  const label = document.getElementById(id);
  if (label == null) {
    throw Error("Cannot find label " + id);
  }
  label.innerText = text;
}

export async function getStarted() {
  const initProgressCallback = (report: webllm.InitProgressReport) => {
    setLabel("init-label", report.text);
  };
  const selectedModel = "tiny-qwen3";
  const engine: webllm.MLCEngineInterface = await webllm.CreateMLCEngine(
    selectedModel,
    { initProgressCallback: initProgressCallback, logLevel: "INFO" },
    { context_window_size: 2048 },
  );
  const reply0 = await engine.chat.completions.create({
    messages: [{ role: "user", content: "List three US states." }],
    n: 3,
    temperature: 1.5,
    max_tokens: 256,
    logit_bias: { "46": -100, "71": 5 },
    logprobs: true,
    top_logprobs: 2,
  });
  console.log(reply0);
  console.log(reply0.usage, reply0.usage.extra.decode_tokens_per_s, reply0.choices[2]?.message.content);
  console.log(await engine.runtimeStatsText());
}

export async function streaming() {
  const engine: webllm.MLCEngineInterface = await webllm.CreateMLCEngine("tiny-qwen3", {
    initProgressCallback: (report: webllm.InitProgressReport) => setLabel("init-label", report.text),
  });
  const request: webllm.ChatCompletionRequest = {
    stream: true,
    stream_options: { include_usage: true },
    messages: [
      { role: "system", content: "You are a pirate chatbot who always responds in pirate speak!" },
      { role: "user", content: "Who are you?" },
    ],
    logprobs: true,
    top_logprobs: 2,
    extra_body: { enable_thinking: false },
  };
  const asyncChunkGenerator = await engine.chat.completions.create(request);
  let message = "";
  for await (const chunk of asyncChunkGenerator) {
    message += chunk.choices[0]?.delta?.content || "";
    setLabel("generate-label", message);
    if (chunk.usage) {
      console.log(chunk.usage.extra.e2e_latency_s);
    }
    engine.interruptGenerate();
  }
  console.log("Final message:\n", await engine.getMessage());
  await engine.resetChat();
  await engine.unload();
}

export async function customModels() {
  const appConfig: webllm.AppConfig = {
    model_list: [
      { model: "/models/tiny-qwen3/", model_id: "tiny-qwen3", model_lib: "unused", overrides: { context_window_size: 1024 } },
      { model: "/models/stories260K/", model_id: "stories" },
    ],
  };
  const engine = new webllm.MLCEngine({ appConfig, initProgressCallback: (r) => console.log(r.progress) });
  await engine.reload(["tiny-qwen3", "stories"], [{ temperature: 0.5 }, {}]);
  const story = await engine.completions.create({ model: "stories", prompt: "Once upon a time", max_tokens: 16 });
  const chat = await engine.chat.completions.create({ model: "tiny-qwen3", messages: [{ role: "user", content: "Hi" }], max_tokens: 8 });
  console.log(story.choices[0]?.text, chat.choices[0]?.message.content, engine.engineOf("stories").info.backend);
  for await (const c of await engine.completions.create({ model: "stories", prompt: "Lily", stream: true })) console.log(c.choices[0]?.text);
  console.log(await engine.getGPUVendor(), await engine.getMaxStorageBufferBindingSize(), webllm.prebuiltAppConfig.model_list.map((m) => m.model_id));
  console.log(await webllm.hasModelInCache("stories", appConfig));
  await webllm.deleteModelAllInfoInCache("stories", appConfig);
}

export async function inAWorker() {
  const engine: webllm.MLCEngineInterface = await webllm.CreateWebWorkerMLCEngine(
    new Worker(new URL("./worker.js", import.meta.url), { type: "module" }),
    "tiny-qwen3",
    { initProgressCallback: (report: webllm.InitProgressReport) => setLabel("init-label", report.text) },
  );
  const reply = await engine.chat.completions.create({ messages: [{ role: "user", content: "Two more please!" }], n: 2, max_tokens: 16 });
  console.log(reply.choices.length, reply.usage.extra.prefill_tokens_per_s);
}

// One engine for the origin's tabs, as WebLLM's service-worker example
// makes it.
export async function inEveryTab() {
  const engine: webllm.ServiceWorkerMLCEngine = await webllm.CreateServiceWorkerMLCEngine(
    "tiny-qwen3",
    { initProgressCallback: (report: webllm.InitProgressReport) => setLabel("init-label", report.text) },
    undefined,
    10000,
  );
  const reply = await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi" }], max_tokens: 16 });
  console.log(reply.choices[0]?.message.content, engine.engineOf().info.shared?.reused, engine.keepAliveMs);
  await engine.init("tiny-qwen3");
}

// The service worker of a WebLLM page (the engine is not there: its
// handler answers keep-alive messages).
export function serviceWorkerMain() {
  let handler: webllm.ServiceWorkerMLCEngineHandler | undefined;
  self.addEventListener("activate", () => {
    handler = new webllm.ServiceWorkerMLCEngineHandler();
  });
  return () => handler;
}

// The worker side of inAWorker.
export function workerMain() {
  const handler = new webllm.WebWorkerMLCEngineHandler();
  self.onmessage = (msg: MessageEvent) => {
    handler.onmessage(msg);
  };
}

export async function embeddings() {
  const appConfig: webllm.AppConfig = {
    model_list: [{ model: "/models/snowflake-arctic-embed-m-q8_0.gguf", model_id: "snowflake-arctic-embed-m", model_type: webllm.ModelType.embedding }],
  };
  const engine = await webllm.CreateMLCEngine("snowflake-arctic-embed-m", { appConfig });
  const reply = await engine.embeddings.create({ input: ["[CLS] What is snowflake? [SEP]", "[CLS] Where can I get the best tacos? [SEP]"] });
  console.log(reply.data.length, reply.usage.prompt_tokens);
}
