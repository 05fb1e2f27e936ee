// wasmllm's WebLLM-compatible entry point: the names and shapes of
// @mlc-ai/web-llm over the wasmllm engine, so that a page written for
// WebLLM runs by changing its import line:
//
//   - import * as webllm from "@mlc-ai/web-llm";
//   + import * as webllm from "wasmllm/webllm";   // or "https://HOST/webllm.js"
//
//   const engine = await webllm.CreateMLCEngine("stories260K", { initProgressCallback });
//   const reply = await engine.chat.completions.create({ messages, n: 2, temperature: 0.7 });
//   console.log(reply.usage.extra.decode_tokens_per_s);
//
// Models are converted wasmllm model folders (go run ./cmd/convert), not
// MLC builds: appConfig.model_list holds {model_id, model} entries whose
// model is the folder's URL (model_lib, if present, is not used). With no
// appConfig, an id that prebuiltAppConfig does not list is looked up as the
// folder models/<id>/ beside this script. Each loaded model runs in a Web
// Worker of its own (wasmllm.js's createEngine), so one engine can hold
// several (reload([a, b]), then request.model picks one).
// CreateServiceWorkerMLCEngine (or engineConfig.shared) uses the origin's
// shared engine of each model instead, one for all the origin's tabs.
//
// Where WebLLM and OpenAI differ, this follows WebLLM for WebLLM-only
// matters and OpenAI otherwise; wasmllm.d.ts and webllm.d.ts list the
// cases (README: "WebLLM").

import { createEngine, WasmLLMError, deleteCachedModel, cacheNameFor } from "./wasmllm.js";

export { WasmLLMError };

/** The models this build ships: the bundled stories260K (no chat template: use completions). */
export const prebuiltAppConfig = Object.freeze({
	model_list: [
		{ model_id: "stories260K", model: new URL("./models/stories260K/", import.meta.url).href, model_lib: "", vram_required_MB: 2, low_resource_required: true },
	],
	useIndexedDBCache: false,
});

/** WebLLM exports these for its prebuilt model libraries; wasmllm has one engine wasm. */
export const modelVersion = "wasmllm";
export const modelLibURLPrefix = "";
export const functionCallingModelIds = [];

/** Model types, as WebLLM names them; only LLM is supported. */
export const ModelType = Object.freeze({ LLM: 0, embedding: 1, VLM: 2, 0: "LLM", 1: "embedding", 2: "VLM" });

const LOG_LEVELS = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "SILENT"];

const err = (code, message, details) => new WasmLLMError(code, message, details);

// baseURL is what relative model URLs resolve against: the page, or the
// worker's script.
const baseURL = () => (globalThis.document && globalThis.document.baseURI) || globalThis.location.href;

// findRecord returns the model record of id in appConfig.
function findRecord(id, appConfig) {
	const list = (appConfig && appConfig.model_list) || [];
	const rec = list.find((r) => r && r.model_id === id);
	if (rec) return rec;
	if (appConfig === prebuiltAppConfig && /^[A-Za-z0-9._-]+$/.test(id) && !id.startsWith(".")) {
		return { model_id: id, model: new URL(`./models/${id}/`, import.meta.url).href };
	}
	throw err("bad_request", `Cannot find model record in appConfig for ${id}. Please check if the model ID is correct and included in the model_list configuration.`,
		{ param: "modelId", model_id: id });
}

const mib = (n) => `${(n / (1 << 20)).toFixed(1)}MB`;

// progressReport turns a wasmllm download progress event into WebLLM's
// {progress, timeElapsed, text}.
function progressReport(p, t0, name) {
	const progress = p.total > 0 ? Math.min(1, p.bytes / p.total) : 0;
	const secs = (performance.now() - t0) / 1000;
	const text = `Fetching param cache[${p.shards_done}/${p.shards_total}] of ${name}: ${mib(p.bytes)} of ${mib(p.total)} fetched. ` +
		`${Math.floor(progress * 100)}% completed, ${Math.round(secs)} secs elapsed.` +
		(p.rate > 0 ? ` ${mib(p.rate)}/s.` : "");
	return { progress, timeElapsed: secs, text };
}

const deviceLabel = (info) => {
	if (info.backend !== "webgpu") return "CPU" + (info.notice ? " (WebGPU not used)" : "");
	const a = info.adapter || {};
	return "WebGPU - " + (a.description || a.vendor || a.architecture || "adapter");
};

// extra is usage.extra, WebLLM's speeds, from the request's timings.
function extra(timings, usage, t0) {
	const t = timings || {};
	const completion = (usage && usage.completion_tokens) || 0;
	return {
		e2e_latency_s: (performance.now() - t0) / 1000,
		prefill_tokens_per_s: t.prefill_tokens_per_s || 0,
		decode_tokens_per_s: t.decode_tokens_per_s || 0,
		time_to_first_token_s: (t.prefill_ms || 0) / 1000,
		time_per_output_token_s: completion > 0 ? (t.decode_ms || 0) / 1000 / completion : 0,
	};
}

// webllmPromptTokens makes usage count the prompt as WebLLM does: only
// the part this request prefilled, not the part reused from the cache
// (WebLLM's own multi-round example checks that a second round's
// prompt_tokens is at most the first's). cached_tokens stays as it is.
function webllmPromptTokens(u) {
	const cached = (u.prompt_tokens_details && u.prompt_tokens_details.cached_tokens) || 0;
	if (cached > 0 && u.prompt_tokens >= cached) {
		u.prompt_tokens -= cached;
		u.total_tokens = u.prompt_tokens + (u.completion_tokens || 0);
	}
}

// Sampling fields of WebLLM's ChatOptions (mlc-chat-config.json) used as
// the defaults of every request to the model.
const CHAT_OPTION_DEFAULTS = ["temperature", "top_p", "repetition_penalty", "frequency_penalty", "presence_penalty"];

/**
 * The main engine: load models with reload(modelId), then use
 * chat.completions.create and completions.create (OpenAI's shapes, with
 * WebLLM's usage.extra), getMessage, runtimeStatsText, resetChat,
 * interruptGenerate and unload.
 */
export class MLCEngine {
	constructor(engineConfig = {}) {
		this._config = engineConfig || {};
		this.appConfig = this._config.appConfig || prebuiltAppConfig;
		this.initProgressCallback = this._config.initProgressCallback;
		this.logitProcessorRegistry = this._config.logitProcessorRegistry;
		this.logLevel = this._config.logLevel || "WARN";
		this._loaded = new Map(); // model_id -> {engine, record, chatOpts, message, stats, stats totals}
		this._reloading = null;
		this.chat = { completions: { create: (req) => this.chatCompletion(req) } };
		this.completions = { create: (req) => this.completion(req) };
		this.embeddings = { create: (req) => this.embedding(req) };
	}

	setAppConfig(appConfig) { this.appConfig = appConfig || prebuiltAppConfig; }
	setInitProgressCallback(cb) { this.initProgressCallback = cb; }
	getInitProgressCallback() { return this.initProgressCallback; }
	setLogitProcessorRegistry(registry) { this.logitProcessorRegistry = registry; }
	setLogLevel(level) {
		if (!LOG_LEVELS.includes(level)) throw err("bad_request", `unknown log level ${level}`, { param: "logLevel" });
		this.logLevel = level;
	}

	/**
	 * Unloads every model, then loads modelId (or each of a list, in order;
	 * chatOpts[i] for modelId[i]: context_window_size and the sampling
	 * defaults temperature, top_p, repetition_penalty, frequency_penalty,
	 * presence_penalty). unload() during a reload stops it.
	 */
	async reload(modelId, chatOpts) {
		await this.unload();
		const ids = Array.isArray(modelId) ? modelId : [modelId];
		const opts = chatOpts === undefined ? undefined : Array.isArray(chatOpts) ? chatOpts : [chatOpts];
		if (!ids.length || ids.some((id) => typeof id !== "string" || !id)) throw err("bad_request", "reload: modelId must be a model_id or a list of them", { param: "modelId" });
		if (opts && opts.length !== ids.length) throw err("bad_request", `reload: ${ids.length} model ids but ${opts.length} chatOpts`, { param: "chatOpts" });
		if (new Set(ids).size !== ids.length) throw err("bad_request", `reload: model ids must be unique: ${ids.join(", ")}`, { param: "modelId" });
		const records = ids.map((id) => findRecord(id, this.appConfig));
		const abort = new AbortController();
		this._reloading = abort;
		try {
			for (let i = 0; i < ids.length; i++) await this._loadOne(records[i], opts ? opts[i] : undefined, abort.signal);
		} catch (e) {
			if (abort.signal.aborted) return; // unload() stopped it, as in WebLLM
			await this.unload();
			throw e;
		} finally {
			if (this._reloading === abort) this._reloading = null;
		}
	}

	async _loadOne(record, chatOpts, signal) {
		const t0 = performance.now();
		const cb = this.initProgressCallback;
		const merged = Object.assign({}, record.overrides || {}, chatOpts || {});
		const c = this._config;
		if (cb) cb({ progress: 0, timeElapsed: 0, text: `Start to fetch params of ${record.model_id}` });
		const embedding = record.model_type === ModelType.embedding;
		const engine = await createEngine({
			model: new URL(record.model, baseURL()).href,
			embedding,
			contextLength: merged.context_window_size > 0 ? merged.context_window_size : 0,
			signal,
			onProgress: cb ? (p) => cb(progressReport(p, t0, record.model_id)) : undefined,
			onNotice: c.onNotice,
			backend: c.backend, kvCacheDtype: merged.kv_cache_dtype ?? c.kvCacheDtype, workerURL: c.workerURL, wasmURL: c.wasmURL,
			cache: c.cache, shared: !!c.shared, sharedIdleMs: c.sharedIdleMs,
		});
		if (signal.aborted) {
			engine.unload();
			throw err("aborted", "reload was aborted");
		}
		this._loaded.set(record.model_id, { engine, record, embedding, chatOpts: merged, message: "", last: null,
			totals: { prefill_tokens: 0, prefill_ms: 0, decode_tokens: 0, decode_ms: 0 } });
		if (cb) cb({ progress: 1, timeElapsed: (performance.now() - t0) / 1000, text: `Finish loading on ${deviceLabel(engine.info)}` });
	}

	/** Unloads every model (their workers stop); reload() loads again. */
	async unload() {
		if (this._reloading) {
			this._reloading.abort();
			this._reloading = null;
		}
		const all = [...this._loaded.values()];
		this._loaded.clear();
		await Promise.all(all.map((s) => s.engine.unload().catch(() => {})));
	}

	// _state picks the loaded model a request or call is for.
	_state(what, modelId) {
		if (this._loaded.size === 0) throw err("not_loaded", `${what}: no model is loaded; call reload(modelId) first`);
		if (modelId != null && modelId !== "") {
			const s = this._loaded.get(modelId);
			if (!s) throw err("bad_request", `${what}: model ${modelId} is not loaded (loaded: ${[...this._loaded.keys()].join(", ")})`, { param: "model" });
			return [modelId, s];
		}
		if (this._loaded.size > 1) {
			throw err("bad_request", `${what}: several models are loaded (${[...this._loaded.keys()].join(", ")}): say which with the model field`, { param: "model" });
		}
		return this._loaded.entries().next().value;
	}

	// _body turns a WebLLM request into a wasmllm one.
	_body(req, s, modelId) {
		const body = Object.assign({}, req);
		for (const k of CHAT_OPTION_DEFAULTS) {
			if (body[k] == null && s.chatOpts[k] != null) body[k] = s.chatOpts[k];
		}
		if (body.extra_body != null) {
			const eb = body.extra_body;
			delete body.extra_body;
			if (eb && eb.enable_thinking != null) {
				body.chat_template_kwargs = Object.assign({ enable_thinking: !!eb.enable_thinking }, body.chat_template_kwargs || {});
			}
		}
		const proc = this.logitProcessorRegistry && this.logitProcessorRegistry.get && this.logitProcessorRegistry.get(modelId);
		if (proc) body.logits_processors = [adaptProcessor(proc), ...(body.logits_processors || [])];
		return body;
	}

	_record(s, response, t0) {
		const tm = response && response.timings;
		if (tm) {
			s.last = tm;
			for (const k of Object.keys(s.totals)) s.totals[k] += tm[k] || 0;
		}
		if (response && response.usage) {
			response.usage.extra = extra(tm, response.usage, t0);
			webllmPromptTokens(response.usage);
		}
	}

	async _generate(kind, req) {
		if (!req || typeof req !== "object") throw err("bad_request", "create() needs a request object");
		const t0 = performance.now();
		const [modelId, s] = this._state(kind === "chat" ? "ChatCompletionRequest" : "CompletionCreateParams", req.model);
		const body = this._body(req, s, modelId);
		const api = kind === "chat" ? s.engine.chat.completions : s.engine.completions;
		s.message = "";
		if (!req.stream) {
			const r = await api.create(body);
			r.model = modelId;
			this._record(s, r, t0);
			const c0 = r.choices[0];
			s.message = c0 ? (c0.message ? c0.message.content : c0.text) || "" : "";
			return r;
		}
		const inner = await api.create(body);
		const self = this;
		let timings = null;
		return (async function* () {
			for await (const c of inner) {
				c.model = modelId;
				const c0 = c.choices[0];
				if (c0 && c0.index === 0) s.message += (c0.delta ? c0.delta.content : c0.text) || "";
				if (c.timings) timings = c.timings;
				if (c.usage) {
					c.timings = c.timings || timings;
					self._record(s, c, t0);
				} else if (c0 && c0.finish_reason && c.timings && !body.stream_options?.include_usage) {
					self._record(s, { timings: c.timings }, t0);
				}
				yield c;
			}
		})();
	}

	/** OpenAI's chat.completions.create (engine.chat.completions.create calls it). */
	chatCompletion(req) { return this._generate("chat", req); }

	/** OpenAI's completions.create (engine.completions.create calls it). */
	completion(req) { return this._generate("completion", req); }

	/** Embeddings are not supported by wasmllm. */
	/**
	 * OpenAI's embeddings.create (engine.embeddings.create calls it), for a
	 * model whose record has model_type ModelType.embedding: a GGUF of
	 * bert, nomic-bert or Qwen3-Embedding.
	 */
	async embedding(req) {
		if (!req || typeof req !== "object") throw err("bad_request", "embeddings.create() needs a request object");
		const [modelId, s] = this._state("EmbeddingCreateParams", req.model);
		if (!s.embedding) throw err("bad_request", `EmbeddingCreateParams: ${modelId} is not an embedding model (its record's model_type is not ModelType.embedding)`, { param: "model" });
		const r = await s.engine.embeddings.create(Object.assign({}, req, { model: modelId }));
		r.model = modelId;
		return r;
	}

	/** Stops the request being generated: it ends with finish_reason "abort" and what it has so far. */
	interruptGenerate() {
		for (const s of this._loaded.values()) s.engine._interrupt();
	}

	/** The text generated so far by the last (or running) request: its first choice. */
	async getMessage(modelId) {
		return this._state("getMessage", modelId)[1].message;
	}

	/** Prefill and decode speeds since the model was loaded (or since resetChat(false)). */
	async runtimeStatsText(modelId) {
		const t = this._state("runtimeStatsText", modelId)[1].totals;
		const rate = (n, ms) => (ms > 0 ? n / ms * 1000 : 0).toFixed(4);
		return `prefill: ${rate(t.prefill_tokens, t.prefill_ms)} tokens/sec, decoding: ${rate(Math.max(0, t.decode_tokens - 1), t.decode_ms)} tokens/sec`;
	}

	/** Forgets the conversation kept in the KV cache (the next request prefills all of its prompt) and, unless keepStats, the statistics. */
	async resetChat(keepStats = false, modelId) {
		if (this._loaded.size === 0) return;
		const [id, s] = this._state("resetChat", modelId);
		await s.engine.resetCache();
		s.message = "";
		if (!keepStats) {
			s.last = null;
			for (const k of Object.keys(s.totals)) s.totals[k] = 0;
		}
		const proc = this.logitProcessorRegistry && this.logitProcessorRegistry.get && this.logitProcessorRegistry.get(id);
		if (proc && proc.resetState) proc.resetState();
	}

	async getMaxStorageBufferBindingSize() {
		for (const s of this._loaded.values()) if (s.engine.info.limits) return s.engine.info.limits.maxStorageBufferBindingSize;
		const a = globalThis.navigator && navigator.gpu && await navigator.gpu.requestAdapter();
		return a ? a.limits.maxStorageBufferBindingSize : 0;
	}

	async getGPUVendor() {
		for (const s of this._loaded.values()) if (s.engine.info.adapter) return s.engine.info.adapter.vendor || "";
		const a = globalThis.navigator && navigator.gpu && await navigator.gpu.requestAdapter();
		return (a && a.info && a.info.vendor) || "";
	}

	async forwardTokensAndSample() {
		throw err("bad_request", "forwardTokensAndSample is not supported by wasmllm: use completions.create with a prompt of token ids");
	}

	/** wasmllm's engine of a loaded model (info, stats, deleteCachedModel). */
	engineOf(modelId) {
		return this._state("engineOf", modelId)[1].engine;
	}
}

// adaptProcessor runs a WebLLM LogitProcessor ({processLogits,
// processSampledToken, resetState}) as a wasmllm logits processor: each
// token sampled since the last call goes to processSampledToken first.
function adaptProcessor(p) {
	let seen = 0;
	return (logits, ids) => {
		if (ids.length < seen) seen = 0; // a new request
		for (; seen < ids.length; seen++) if (p.processSampledToken) p.processSampledToken(ids[seen]);
		return p.processLogits(logits);
	};
}

/** Creates an MLCEngine and loads modelId into it. */
export async function CreateMLCEngine(modelId, engineConfig, chatOpts) {
	const engine = new MLCEngine(engineConfig);
	await engine.reload(modelId, chatOpts);
	return engine;
}

// ---- One engine per origin: WebLLM's service-worker engine ----

/**
 * WebLLM's ServiceWorkerMLCEngine: an MLCEngine whose models are the
 * origin's shared engines (createEngine({shared: true})), loaded once and
 * used by every tab of the origin that asks for them. They live in a
 * SharedWorker, not in a ServiceWorker (README, "One engine per origin":
 * Firefox gives a ServiceWorker no WebGPU, and Chromium stops an idle
 * one), so nothing needs a registered service worker or keep-alive pings.
 * The constructor takes WebLLM's arguments (the service worker, which is
 * not used, or an engine config; keepAliveMs).
 */
export class ServiceWorkerMLCEngine extends MLCEngine {
	constructor(engineConfig = {}, keepAliveMs = 10000) {
		const cfg = engineConfig && typeof engineConfig.postMessage === "function" ? {} : engineConfig || {};
		super(Object.assign({}, cfg, { shared: true }));
		/** Accepted for WebLLM's sake; a SharedWorker needs no keep-alive. */
		this.keepAliveMs = keepAliveMs;
	}

	/** WebLLM's init: sets appConfig when given, then reload(modelId, chatOpts). */
	async init(modelId, chatOpts, appConfig) {
		if (appConfig) this.setAppConfig(appConfig);
		await this.reload(modelId, chatOpts);
	}
}

/**
 * Creates a ServiceWorkerMLCEngine and loads modelId: the origin's shared
 * engine for it, joined when another tab has loaded it. chatOpts default
 * to engineConfig.chatOpts (WebLLM's older signature).
 */
export async function CreateServiceWorkerMLCEngine(modelId, engineConfig, chatOpts, keepAliveMs) {
	const engine = new ServiceWorkerMLCEngine(engineConfig, keepAliveMs);
	await engine.reload(modelId, chatOpts !== undefined ? chatOpts : engineConfig && engineConfig.chatOpts);
	return engine;
}

/**
 * WebLLM's ServiceWorkerMLCEngineHandler, for a page's service worker
 * written for WebLLM (new ServiceWorkerMLCEngineHandler() in its activate
 * handler). wasmllm's shared engine is not in the service worker (see
 * ServiceWorkerMLCEngine), so the handler holds no engine: it answers
 * WebLLM's keep-alive messages with a heartbeat, and any other WebLLM
 * message with an error that says where the engine is.
 */
export class ServiceWorkerMLCEngineHandler {
	constructor() {
		if (typeof globalThis.addEventListener === "function") globalThis.addEventListener("message", (ev) => this.onmessage(ev));
	}

	onmessage(event) {
		const m = event && event.data;
		const to = event && event.source;
		if (!m || typeof m !== "object" || !m.uuid || !to || typeof to.postMessage !== "function") return;
		if (m.kind === "keepAlive") {
			to.postMessage({ kind: "heartbeat", uuid: m.uuid, content: "" });
			return;
		}
		to.postMessage({ kind: "throw", uuid: m.uuid,
			content: "wasmllm's shared engine runs in a SharedWorker, not in the service worker: use CreateServiceWorkerMLCEngine from wasmllm's webllm.js" });
	}
}

// ---- Web Worker: the page talks to an MLCEngine inside a worker it made ----

const KIND = "wasmllm-webllm";

// wireError makes an error cloneable across postMessage.
const wireError = (e) => ({ name: e && e.name, code: e && e.code || "internal", message: String(e && e.message || e), details: e && e.details });
const unwireError = (d) => new WasmLLMError(d.code || "internal", d.message, d.details);

// resolveAppConfig makes the model URLs of appConfig absolute against the
// page, so that the worker loads what the page means.
function resolveAppConfig(appConfig) {
	if (!appConfig) return undefined;
	return Object.assign({}, appConfig, {
		model_list: (appConfig.model_list || []).map((r) => Object.assign({}, r, { model: new URL(r.model, baseURL()).href })),
	});
}

/**
 * Runs an MLCEngine in a worker for a WebWorkerMLCEngine in the page:
 *
 *   // worker.js (new Worker(new URL("./worker.js", import.meta.url), {type: "module"}))
 *   import { WebWorkerMLCEngineHandler } from "wasmllm/webllm";
 *   const handler = new WebWorkerMLCEngineHandler();
 *   self.onmessage = (msg) => { handler.onmessage(msg); };
 */
export class WebWorkerMLCEngineHandler {
	constructor() {
		this.engine = new MLCEngine();
		this.engine.setInitProgressCallback((report) => this.postMessage({ kind: KIND, type: "progress", content: report }));
		this._streams = new Map(); // uuid -> async iterator
	}

	postMessage(msg) {
		globalThis.postMessage(msg);
	}

	setLogitProcessorRegistry(registry) {
		this.engine.setLogitProcessorRegistry(registry);
	}

	onmessage(event) {
		const m = event && "data" in event ? event.data : event;
		if (!m || m.kind !== KIND) return;
		const { uuid, method, args = [] } = m;
		const reply = (type, content) => this.postMessage({ kind: KIND, uuid, type, content });
		if (method === "streamNext" || method === "streamReturn") {
			const it = this._streams.get(uuid);
			if (!it) return reply("end");
			if (method === "streamReturn") {
				this._streams.delete(uuid);
				it.return().then(() => reply("end"), () => reply("end"));
				return;
			}
			it.next().then(({ value, done }) => {
				if (done) {
					this._streams.delete(uuid);
					reply("end");
				} else {
					reply("chunk", value);
				}
			}, (e) => {
				this._streams.delete(uuid);
				reply("throw", wireError(e));
			});
			return;
		}
		const run = async () => {
			const e = this.engine;
			switch (method) {
			case "reload":
				if (args[2]) e.setAppConfig(args[2]);
				await e.reload(args[0], args[1]);
				return null;
			case "chatCompletion":
			case "completion": {
				const r = await e[method](args[0]);
				if (args[0] && args[0].stream) {
					this._streams.set(uuid, r[Symbol.asyncIterator]());
					return { stream: true };
				}
				return r;
			}
			case "info": {
				const [, s] = e._state("info", args[0]);
				return s.engine.info;
			}
			case "interruptGenerate":
			case "unload":
			case "getMessage":
			case "runtimeStatsText":
			case "resetChat":
			case "getMaxStorageBufferBindingSize":
			case "getGPUVendor":
			case "embedding":
			case "forwardTokensAndSample":
				return (await e[method](...args)) ?? null;
			default:
				throw err("bad_request", `unknown method ${method}`);
			}
		};
		run().then((v) => reply("return", v), (e) => reply("throw", wireError(e)));
	}
}

/**
 * The page side of an engine in a worker (see WebWorkerMLCEngineHandler):
 * the same interface as MLCEngine, every call sent to the worker.
 */
export class WebWorkerMLCEngine {
	constructor(worker, engineConfig = {}) {
		this.worker = worker;
		this._config = engineConfig || {};
		this.appConfig = this._config.appConfig;
		this.initProgressCallback = this._config.initProgressCallback;
		this.modelId = undefined;
		this.chatOpts = undefined;
		this._pending = new Map();
		this._next = 1;
		worker.onmessage = (ev) => this.onmessage(ev);
		this.chat = { completions: { create: (req) => this.chatCompletion(req) } };
		this.completions = { create: (req) => this.completion(req) };
		this.embeddings = { create: (req) => this.embedding(req) };
	}

	onmessage(ev) {
		const m = ev && ev.data;
		if (!m || m.kind !== KIND) return;
		if (m.type === "progress") {
			if (this.initProgressCallback) this.initProgressCallback(m.content);
			return;
		}
		const p = this._pending.get(m.uuid);
		if (!p) return;
		this._pending.delete(m.uuid);
		if (m.type === "throw") p.reject(unwireError(m.content));
		else p.resolve(m);
	}

	_send(method, args, uuid) {
		const id = uuid || `${this._next++}-${Math.random().toString(36).slice(2)}`;
		return new Promise((resolve, reject) => {
			this._pending.set(id, { resolve, reject });
			this.worker.postMessage({ kind: KIND, uuid: id, method, args });
		}).then((m) => (uuid ? m : Object.assign(m, { uuid: id })));
	}

	async _call(method, ...args) {
		return (await this._send(method, args)).content;
	}

	setAppConfig(appConfig) { this.appConfig = appConfig; }
	setInitProgressCallback(cb) { this.initProgressCallback = cb; }
	getInitProgressCallback() { return this.initProgressCallback; }
	setLogLevel(level) {
		if (!LOG_LEVELS.includes(level)) throw err("bad_request", `unknown log level ${level}`, { param: "logLevel" });
	}

	async reload(modelId, chatOpts) {
		this.modelId = Array.isArray(modelId) ? modelId : [modelId];
		this.chatOpts = chatOpts === undefined ? undefined : Array.isArray(chatOpts) ? chatOpts : [chatOpts];
		await this._call("reload", modelId, chatOpts, resolveAppConfig(this.appConfig));
	}

	async _generate(method, req) {
		const first = await this._send(method, [req]);
		if (!req || !req.stream) return first.content;
		const uuid = first.uuid;
		const self = this;
		return (async function* () {
			let done = false;
			try {
				for (;;) {
					const m = await self._send("streamNext", [], uuid);
					if (m.type === "end") {
						done = true;
						return;
					}
					yield m.content;
				}
			} finally {
				if (!done) await self._send("streamReturn", [], uuid).catch(() => {});
			}
		})();
	}

	chatCompletion(req) { return this._generate("chatCompletion", req); }
	completion(req) { return this._generate("completion", req); }
	embedding(req) { return this._call("embedding", req); }
	interruptGenerate() { this._call("interruptGenerate").catch(() => {}); }
	unload() { return this._call("unload"); }
	getMessage(modelId) { return this._call("getMessage", modelId); }
	runtimeStatsText(modelId) { return this._call("runtimeStatsText", modelId); }
	resetChat(keepStats = false, modelId) { return this._call("resetChat", keepStats, modelId); }
	getMaxStorageBufferBindingSize() { return this._call("getMaxStorageBufferBindingSize"); }
	getGPUVendor() { return this._call("getGPUVendor"); }
	forwardTokensAndSample(...args) { return this._call("forwardTokensAndSample", ...args); }
	/** wasmllm's engine info of a loaded model (backend, adapter, context length...). */
	info(modelId) { return this._call("info", modelId); }
}

/** Creates a WebWorkerMLCEngine over worker (running a WebWorkerMLCEngineHandler) and loads modelId. */
export async function CreateWebWorkerMLCEngine(worker, modelId, engineConfig, chatOpts) {
	const engine = new WebWorkerMLCEngine(worker, engineConfig);
	await engine.reload(modelId, chatOpts);
	return engine;
}

/** Whether a model's files are in Cache Storage (its manifest was cached by a finished load). */
export async function hasModelInCache(modelId, appConfig = prebuiltAppConfig) {
	if (typeof caches === "undefined") return false;
	const url = new URL(findRecord(modelId, appConfig).model, baseURL());
	if (!url.pathname.endsWith("/")) url.pathname += "/";
	const name = cacheNameFor(url.href);
	if (!(await caches.has(name))) return false;
	return !!(await (await caches.open(name)).match(new URL("manifest.json", url).href));
}

/** Deletes a model's cached files. */
export async function deleteModelAllInfoInCache(modelId, appConfig = prebuiltAppConfig) {
	await deleteCachedModel(new URL(findRecord(modelId, appConfig).model, baseURL()).href);
}
export const deleteModelInCache = deleteModelAllInfoInCache;
export async function deleteChatConfigInCache() {}
export async function deleteModelWasmInCache() {}
