// wasmllm: run a converted Llama / Qwen3 / Qwen3-MoE model in the browser,
// on WebGPU (or the CPU when there is none), with an OpenAI-shaped API.
//
//   import { createEngine } from "./wasmllm.js";
//   const engine = await createEngine({ model: "/models/stories260K/", onProgress: (p) => console.log(p.bytes, p.total) });
//   const reply = await engine.chat.completions.create({ messages: [{ role: "user", content: "Hi" }] });
//   for await (const chunk of await engine.chat.completions.create({ messages, stream: true, temperature: 0.7 })) {
//     out.textContent += chunk.choices[0]?.delta?.content ?? "";
//   }
//
// The engine runs in a Web Worker (worker.js next to this file, also when
// this module is imported from another origin), so the page never freezes;
// with shared: true, in the origin's SharedWorker for the model, which
// every tab asking for it shares (shared.js).
// Every failure is a WasmLLMError with a `code` (see wasmllm.d.ts for the
// list). Types and every option are documented in wasmllm.d.ts. Requests
// follow OpenAI's semantics: create(body, {signal}) cancels one request,
// breaking out of a stream's for-await cancels it, a stream carries usage
// only with stream_options.include_usage (in a last chunk with no choices),
// and a request that fails before its first token rejects create() itself.

import { createRemoteEngine } from "./remote.js";
import { WasmLLMError, Stream, abortError } from "./stream.js";
import { openShared, SHARED_IDLE_MS } from "./shared.js";

export { WasmLLMError };

const CACHE_PREFIX = "wasmllm-model:"; // must match loader.js

const toError = (d) => new WasmLLMError(d && d.code || "internal", d && d.message || "unknown error", d && d.details);

// isGGUF reports a model given as a GGUF to read where it lies: a File or
// Blob (or a split GGUF's parts as Files), or a URL whose path ends in
// .gguf (as web/loader.js isGGUF).
const isBlob = (m) => typeof Blob !== "undefined" && m instanceof Blob;
// isFiles is a model given as Files: one GGUF, or a split GGUF's parts.
const isFiles = (m) => isBlob(m) || (Array.isArray(m) && m.length > 0 && m.every(isBlob));
const firstPart = (m) => (isBlob(m) ? m : [...m].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))[0]);
const isGGUF = (model) => isFiles(model) ||
	(typeof model === "string" || model instanceof URL) && /\.gguf$/i.test(new URL(model, globalThis.location.href).pathname);

// ggufFolder is where a GGUF's conversion is cached (as web/loader.js
// ggufFolder).
const ggufFolder = (model) => {
	const base = new URL("/", globalThis.location.href).href;
	if (isFiles(model)) {
		const first = firstPart(model);
		const size = isBlob(model) ? model.size : model.reduce((n, p) => n + p.size, 0);
		return `${base}__wasmllm/file/${encodeURIComponent(`${first.name || "model.gguf"}-${size}-${first.lastModified || 0}`)}/`;
	}
	const u = new URL(model, globalThis.location.href);
	u.pathname = u.pathname.replace(/-\d{5}-of-(\d{5})\.gguf$/i, "-00001-of-$1.gguf"); // a split's first part
	return `${base}__wasmllm/gguf/${encodeURIComponent(u.href)}/`;
};

// modelKey is a model's URL for the load message: a folder's, ending in
// "/", a GGUF's as it is, or a File's name.
const modelKey = (model) => {
	if (isFiles(model)) return firstPart(model).name || "model.gguf";
	return isGGUF(model) ? new URL(model, globalThis.location.href).href : folderURL(model);
};

// folderURL resolves a model folder against the page and ends it with "/".
const folderURL = (model) => {
	const u = new URL(model, globalThis.location.href);
	if (!u.pathname.endsWith("/")) u.pathname += "/";
	return u.href;
};

/** The Cache Storage name used for a model folder (or a GGUF's conversion). */
export const cacheNameFor = (model) => CACHE_PREFIX + (isGGUF(model) ? ggufFolder(model) : folderURL(model));

/**
 * Deletes everything cached for a model folder (its shards, tokenizer and
 * manifest). Resolves to true when something was deleted.
 */
export async function deleteCachedModel(model) {
	if (typeof caches === "undefined") return false;
	return caches.delete(cacheNameFor(model));
}

// Connection is the page side of one worker: request ids and routing.
class Connection {
	constructor(worker, workerURL) {
		this.worker = worker;
		this.workerURL = workerURL;
		this.ranks = new Map(); // key -> {worker, blob}: the CPU rank workers the engine asked for
		this.next = 1;
		this.pending = new Map();
		this.dead = null;
		worker.onmessage = (ev) => this.receive(ev.data);
		worker.onerror = (ev) => {
			ev.preventDefault();
			this.fail(new WasmLLMError("internal", `worker error: ${ev.message || "failed to start"}`));
		};
	}

	receive(m) {
		if (!m) return;
		if (m.type === "rank" || m.type === "rank_end") {
			this.rank(m.type, m.data);
			return;
		}
		if (m.type === "fatal") {
			this.fail(toError(m.data));
			return;
		}
		const p = this.pending.get(m.id);
		if (!p) return;
		switch (m.type) {
		case "progress":
			if (p.onProgress) p.onProgress(m.data);
			break;
		case "notice":
			if (p.onNotice) p.onNotice(m.data.message);
			break;
		case "chunk":
			if (p.onChunk) p.onChunk(m.data);
			break;
		case "process":
			this.process(m.id, p.processors || [], m.data);
			break;
		case "persist":
			requestPersist().then((r) => { if (!this.dead) this.worker.postMessage(Object.assign({ id: m.id, op: "persisted" }, r)); });
			break;
		case "result":
			this.pending.delete(m.id);
			p.resolve(m.data);
			break;
		case "error":
			this.pending.delete(m.id);
			p.reject(toError(m.data));
			break;
		}
	}

	// process runs a request's logits processors on one token's row and
	// transfers the row back to the worker.
	async process(id, fns, data) {
		const logits = data.logits;
		const answer = await runProcessors(fns, logits, data.output);
		if (this.dead) return;
		const transfer = logits.buffer.byteLength ? [logits.buffer] : [];
		this.worker.postMessage(Object.assign({ id, op: "processed", logits }, answer), transfer);
	}

	// rank starts or ends a worker of the CPU engine's ranks (web/rank.js,
	// beside worker.js): the page starts them, not the engine's worker.
	rank(type, d) {
		if (type === "rank_end") {
			this.endRank(d.key);
			return;
		}
		if (this.dead) return;
		const started = startWorker(new URL("./rank.js", this.workerURL));
		this.ranks.set(d.key, Object.assign(started, { init: d.init }));
		// A worker whose script does not load never runs rank.js, which marks
		// its rank dead itself: mark it here, so the engine's start fails at
		// once instead of after its timeout.
		started.worker.addEventListener("error", (ev) => {
			ev.preventDefault();
			const ctrl = new Int32Array(d.init.ctrl);
			const w = 64 + 8 * d.init.rank;
			Atomics.store(ctrl, w + 3, 1);
			Atomics.notify(ctrl, w);
		});
		started.worker.postMessage(d.init);
	}

	endRank(key) {
		const started = this.ranks.get(key);
		this.ranks.delete(key);
		if (!started) return;
		started.worker.terminate();
		if (started.blob) URL.revokeObjectURL(started.blob);
	}

	fail(err) {
		this.dead = err;
		for (const p of this.pending.values()) p.reject(err);
		this.pending.clear();
	}

	// start posts {id, op, ...fields} and returns the id and a promise of
	// the result.
	start(op, fields, handlers) {
		if (this.dead) return { id: 0, promise: Promise.reject(this.dead) };
		const id = this.next++;
		const promise = new Promise((resolve, reject) => {
			this.pending.set(id, Object.assign({ resolve, reject }, handlers));
			this.worker.postMessage(Object.assign({ id, op }, fields));
		});
		return { id, promise };
	}

	// call posts {id, op, ...fields} and resolves with the result.
	call(op, fields, handlers) {
		return this.start(op, fields, handlers).promise;
	}

	abort() {
		if (!this.dead) this.worker.postMessage({ op: "abort" });
	}

	// cancel stops one request, queued or running: it ends (in the worker)
	// with finish_reason "abort" within one token.
	cancel(id) {
		if (!this.dead && id) this.worker.postMessage({ op: "cancel", id });
	}

	terminate(err) {
		this.worker.terminate();
		for (const key of [...this.ranks.keys()]) this.endRank(key);
		this.fail(err || new WasmLLMError("not_loaded", "the engine was unloaded"));
	}
}

// runProcessors runs fns in order on logits (in place, or by copying a
// returned array into it) and checks each one's output. It resolves to {}
// on success, {error} when a processor threw or returned a bad value, or
// {invalid} when one wrote NaN or +Infinity.
// requestPersist asks the browser to keep this origin's storage (a large
// model's shards) from eviction, once: {granted, asked, already}. A browser
// that prompts the user (Firefox) and gets no answer within PERSIST_WAIT_MS
// counts as not granted, and the load goes on.
const PERSIST_WAIT_MS = 15000;
let persistAsked = null;
function requestPersist() {
	const st = typeof navigator !== "undefined" ? navigator.storage : null;
	if (!st || !st.persist) return Promise.resolve({ granted: false, asked: false });
	if (!persistAsked) {
		persistAsked = (async () => {
			try {
				if (st.persisted && await st.persisted()) return { granted: true, asked: false, already: true };
				const timeout = new Promise((resolve) => setTimeout(() => resolve(false), PERSIST_WAIT_MS));
				return { granted: !!(await Promise.race([st.persist(), timeout])), asked: true };
			} catch (e) {
				return { granted: false, asked: true };
			}
		})();
	}
	return persistAsked;
}

async function runProcessors(fns, logits, output) {
	const n = logits.length;
	const ids = Object.freeze(Array.from(output));
	for (let i = 0; i < fns.length; i++) {
		const fail = (why) => ({ error: { code: "bad_request", message: `logits_processors[${i}] ${why}`,
			details: { param: "logits_processors", index: i, reason: "processor_error" } } });
		let ret;
		try {
			ret = await fns[i](logits, ids);
		} catch (e) {
			return fail(`threw: ${e && e.message || e}`);
		}
		if (logits.length !== n) return fail("detached the logits buffer");
		if (ret != null && ret !== logits) {
			if (typeof ret !== "object" || ret.length !== n) {
				return fail(`returned ${typeof ret === "object" ? `${ret.length} values` : typeof ret}, want nothing or ${n} logits`);
			}
			try {
				logits.set(ret);
			} catch (e) {
				return fail(`returned an array that cannot be read: ${e && e.message || e}`);
			}
		}
		for (let k = 0; k < n; k++) {
			const v = logits[k];
			if (v !== v || v === Infinity) return { invalid: { index: i, token: k, value: v !== v ? "NaN" : "Infinity" } };
		}
	}
	return {};
}



/** A loaded model. Create one with createEngine. */
export class Engine {
	constructor(conn, info, load, handlers) {
		this._conn = conn;
		this._load = load;
		this._model = load.model;
		this._file = handlers && handlers.file || null;
		this._handlers = handlers || {};
		this._shared = handlers && handlers.shared || null; // createEngine's options when shared was asked
		this._inflight = []; // ids of the requests sent and not finished, oldest first
		/** backend, adapter, model config, context length, load statistics. */
		this.info = info;
		/** Timings of the last finished request (null before the first). */
		this.stats = null;
		this.chat = { completions: { create: (req, options) => this._create("chat", req, options) } };
		this.completions = { create: (req, options) => this._create("completion", req, options) };
		/**
		 * OpenAI's embeddings.create for an engine made with embedding: true:
		 * {input, model, encoding_format, dimensions, truncate_prompt_tokens}
		 * to {object: "list", data: [{object, index, embedding}], model, usage}.
		 */
		this.embeddings = { create: (req, options) => this._embed(req, options) };
	}

	_embed(req, options) {
		if (!req || typeof req !== "object") return Promise.reject(new WasmLLMError("bad_request", "embeddings.create() needs a request object"));
		const signal = options && options.signal;
		if (signal && signal.aborted) return Promise.reject(abortError());
		let body;
		try {
			body = JSON.stringify(req);
		} catch (e) {
			return Promise.reject(new WasmLLMError("bad_request", `the request is not JSON: ${e.message}`));
		}
		return this._conn.call("embeddings", { body });
	}

	_create(op, req, options) {
		if (!req || typeof req !== "object") return Promise.reject(new WasmLLMError("bad_request", "create() needs a request object"));
		const signal = options && options.signal;
		if (signal && signal.aborted) return Promise.reject(abortError());
		let processors = [];
		if ("logits_processors" in req) {
			const lp = req.logits_processors;
			if (lp != null && (!Array.isArray(lp) || lp.some((f) => typeof f !== "function"))) {
				return Promise.reject(new WasmLLMError("bad_request", "request: logits_processors must be an array of functions",
					{ param: "logits_processors" }));
			}
			processors = lp ? lp.slice() : [];
			req = Object.assign({}, req);
			delete req.logits_processors;
		}
		let body;
		try {
			body = JSON.stringify(req);
		} catch (e) {
			return Promise.reject(new WasmLLMError("bad_request", `the request is not JSON: ${e.message}`));
		}
		const fields = { body, processors: processors.length };
		const done = (data) => {
			if (data && data.timings) this.stats = data.timings;
			return data ? data.response : null;
		};
		let id = 0, stream = null;
		const track = () => {
			this._inflight.push(id);
			const untrack = () => {
				const i = this._inflight.indexOf(id);
				if (i >= 0) this._inflight.splice(i, 1);
			};
			return untrack;
		};
		if (!req.stream) {
			const started = this._conn.start(op, fields, { processors });
			id = started.id;
			const untrack = track();
			const result = started.promise.then(done);
			result.then(untrack, untrack);
			if (!signal) return result;
			return new Promise((resolve, reject) => {
				const onAbort = () => {
					this._conn.cancel(id);
					reject(abortError());
				};
				signal.addEventListener("abort", onAbort, { once: true });
				result.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
			});
		}
		// A stream: create() resolves with its first chunk (so a request
		// that fails before generating anything rejects here), or with an
		// empty stream when the request ends without one.
		return new Promise((resolve, reject) => {
			let opened = false;
			const open = () => {
				if (!opened) {
					opened = true;
					resolve(stream);
				}
			};
			stream = new Stream(() => this._conn.cancel(id));
			const started = this._conn.start(op, fields, { processors, onChunk: (c) => { stream.push(c); open(); } });
			id = started.id;
			const untrack = track();
			const onAbort = () => {
				if (opened) {
					stream.cancel(abortError());
				} else {
					this._conn.cancel(id);
					stream.end(abortError());
					opened = true;
					reject(abortError());
				}
			};
			if (signal) signal.addEventListener("abort", onAbort, { once: true });
			started.promise.then(
				(data) => { done(data); stream.end(); open(); },
				(err) => {
					stream.end(err);
					if (!opened) {
						opened = true;
						reject(err);
					}
				}).finally(() => {
				untrack();
				if (signal) signal.removeEventListener("abort", onAbort);
			});
		});
	}

	/**
	 * Stops the running request (within one token) and any queued ones. A
	 * stopped request ends normally with finish_reason "abort".
	 */
	abort() {
		this._conn.abort();
	}

	// _interrupt stops the oldest unfinished request (the one running, or
	// the next to run): WebLLM's interruptGenerate.
	_interrupt() {
		if (this._inflight.length) this._conn.cancel(this._inflight[0]);
	}

	/**
	 * Forgets the KV cache's contents: the next request prefills all of its
	 * prompt (cached_tokens 0). Runs in order with the requests.
	 */
	async resetCache() {
		await this._conn.call("reset", {});
	}

	/**
	 * Loads the model again in the same worker, on a newly opened GPU device:
	 * what to do after a request failed with code "device_lost". The
	 * manifest and tokenizer come from the worker's memory and the shards
	 * from Cache Storage, so it needs no network when caching is on.
	 * With opts.model (or a string: the model folder's URL) of another
	 * folder, loads that model instead, in the same worker, with the other
	 * createEngine options unchanged. Resolves to the new info (also
	 * this.info); the engine object stays the same. onProgress and onNotice
	 * default to createEngine's.
	 */
	async reload(opts = {}) {
		if (typeof opts === "string" || opts instanceof URL) opts = { model: String(opts) };
		const h = this._handlers;
		const onNotice = opts.onNotice || h.onNotice;
		const handlers = { onProgress: opts.onProgress || h.onProgress, onNotice };
		let info;
		const model = opts.model ? modelKey(opts.model) : this._model;
		const file = isFiles(opts.model) ? opts.model : null;
		if (this._shared && (model !== this._model || file)) {
			// Another model is another shared engine: open it, then leave
			// this one (which other tabs may go on using).
			const load = Object.assign({}, this._load, { model });
			const started = await start(this._shared, load, file, handlers);
			info = started.info;
			const old = this._conn;
			this._conn = started.conn;
			old.terminate();
			this._load = load;
			this._model = model;
			this._file = file;
		} else if (model !== this._model || file) {
			const load = Object.assign({}, this._load, { model });
			info = await this._conn.call("load", { body: JSON.stringify(load), file }, handlers);
			this._load = load;
			this._model = model;
			this._file = file;
		} else {
			info = await this._conn.call("reload", {}, handlers);
		}
		if (this._shared && !info.shared && this.info.shared) info = Object.assign({}, info, { shared: this.info.shared });
		this.info = info;
		this.stats = null;
		if (info.notice && onNotice) onNotice(info.notice);
		return info;
	}

	/**
	 * Frees the model and stops the worker. The engine is unusable after. A
	 * shared engine only lets go of this tab: the model stays loaded for
	 * the other tabs, and unloads once none is left (after sharedIdleMs).
	 */
	async unload() {
		if (this._conn.dead) return;
		try {
			await this._conn.call("unload", {});
		} finally {
			this._conn.terminate();
		}
	}

	/** Deletes this model's cached files (the loaded model stays usable). */
	deleteCachedModel() {
		return deleteCachedModel(this._file || this._model);
	}
}

// startWorker starts the engine worker at url. A page may start a worker
// only from its own origin, so for a worker elsewhere (this module imported
// from a CDN or another server) a same-origin blob imports the real one,
// which then finds wasm_exec.js and loader.js beside itself through
// __wasmllmBase (see worker.js).
function startWorker(url) {
	const u = new URL(url, globalThis.location.href);
	if (u.origin === globalThis.location.origin || u.protocol === "blob:" || u.protocol === "data:") return { worker: new Worker(u) };
	const src = `self.__wasmllmBase = ${JSON.stringify(new URL("./", u).href)};\nimportScripts(${JSON.stringify(u.href)});\n`;
	const blob = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
	return { worker: new Worker(blob), blob };
}

/**
 * Starts a worker and loads a model into it: a converted model folder, or
 * a GGUF read where it lies (its URL, on a server that answers Range
 * requests such as the Hugging Face hub, or a File), converted in the
 * worker and cached, so the next load reads nothing of it. With
 * opts.shared, the engine is the origin's one for that model, in a
 * SharedWorker that every tab asking for it shares (shared.js).
 * @param {import("./wasmllm").EngineOptions} opts
 * @returns {Promise<Engine>}
 */
export async function createEngine(opts) {
	// With an endpoint, the model runs behind an OpenAI-compatible API
	// (vLLM's, or the Go server's -api / -upstream): see remote.js.
	if (opts && opts.endpoint) return createRemoteEngine(opts);
	if (!opts || !opts.model) throw new WasmLLMError("bad_request", "createEngine: model (the model folder's URL, a GGUF's URL or a GGUF File) is required");
	if (opts.sharedIdleMs != null && !(Number.isFinite(opts.sharedIdleMs) && opts.sharedIdleMs >= 0)) {
		throw new WasmLLMError("bad_request", `createEngine: sharedIdleMs must be a number of milliseconds >= 0, not ${opts.sharedIdleMs}`, { param: "sharedIdleMs" });
	}
	const file = isFiles(opts.model) ? opts.model : null;
	const load = {
		model: modelKey(opts.model),
		backend: opts.backend || "",
		context_length: opts.contextLength || 0,
		kv_cache_dtype: opts.kvCacheDtype == null ? "" : String(opts.kvCacheDtype),
		cpu_ranks: opts.cpuRanks || 0,
		cpu_min_shard_bytes: opts.cpuMinShardBytes || 0,
		heap_bytes: opts.heapBytes || 0,
		per_layer_embeddings: opts.perLayerEmbeddings || "",
		concurrency: opts.concurrency || 0,
		max_retries: opts.maxRetries || 0,
		cache: opts.cache !== false,
		limits: opts.limits || {},
		storage_estimate: opts.storageEstimate || null,
		persist: opts.persist !== false,
		persist_bytes: opts.persistBytes == null ? -1 : Number(opts.persistBytes),
	};
	// An embedding model (a GGUF of bert, nomic-bert or Qwen3-Embedding):
	// read whole, built as it is; engine.embeddings.create answers.
	if (opts.embedding) {
		if (opts.shared) throw new WasmLLMError("bad_request", "createEngine: an embedding model runs in a worker of its own (shared is not supported)", { param: "shared" });
		if (!isGGUF(opts.model)) throw new WasmLLMError("bad_request", "createEngine: an embedding model is a GGUF (its URL or a File)", { param: "model" });
		load.embedding = true;
	}
	const handlers = { onProgress: opts.onProgress, onNotice: opts.onNotice, file, shared: opts.shared ? opts : null };
	const { conn, info } = await start(opts, load, file, handlers, opts.signal);
	if (info.notice && opts.onNotice) opts.onNotice(info.notice);
	return new Engine(conn, info, load, handlers);
}

// sharedKey names the shared engine of a load: tabs whose loads would build
// the same engine share one. Download options (cache, concurrency...) are
// left out: a tab that joins downloads nothing.
const sharedKey = (load, file, wasmURL) => JSON.stringify([file ? ggufFolder(file) : load.model, load.backend, load.context_length,
	load.kv_cache_dtype, load.cpu_ranks, load.cpu_min_shard_bytes, load.heap_bytes, load.per_layer_embeddings, load.limits, wasmURL]);

// start opens an engine and loads load into it: in a worker of its own, or
// with opts.shared in the origin's SharedWorker for that model (shared.js),
// which a tab joins if another has loaded it. Resolves to {conn, info}.
async function start(opts, load, file, handlers, signal) {
	const workerURL = opts.workerURL || new URL("./worker.js", import.meta.url);
	const wasmURL = new URL(opts.wasmURL || new URL("./wasmllm.wasm", import.meta.url), globalThis.location.href).href;
	let shared = null;
	if (opts.shared) {
		try {
			shared = await openShared({ workerURL, key: sharedKey(load, file, wasmURL), backend: load.backend,
				idleMs: opts.sharedIdleMs == null ? SHARED_IDLE_MS : opts.sharedIdleMs });
		} catch (e) {
			throw new WasmLLMError("internal", `starting the shared engine: ${e && e.message || e}`);
		}
	}
	const started = shared && shared.worker ? { worker: shared.worker } : startWorker(workerURL);
	const conn = new Connection(started.worker, new URL(workerURL, globalThis.location.href).href);
	const onAbort = () => conn.abort();
	try {
		if (signal && signal.aborted) throw new WasmLLMError("aborted", "loading was aborted");
		if (signal) signal.addEventListener("abort", onAbort, { once: true });
		try {
			await conn.call("init", { wasm: wasmURL });
		} finally {
			if (started.blob) URL.revokeObjectURL(started.blob);
		}
		let info = await conn.call(load.embedding ? "load_embedding" : "load", { body: JSON.stringify(load), file }, { onProgress: handlers.onProgress, onNotice: handlers.onNotice });
		if (shared) {
			info = Object.assign({}, info, { shared: Object.assign({ reused: false, clients: 1 }, info.shared, { mode: shared.mode, reason: shared.reason }) });
		}
		return { conn, info };
	} catch (e) {
		conn.terminate(e);
		throw e instanceof WasmLLMError ? e : new WasmLLMError("internal", String(e && e.message || e));
	} finally {
		if (signal) signal.removeEventListener("abort", onAbort);
	}
}
