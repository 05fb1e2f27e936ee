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
// The engine runs in a Web Worker (worker.js next to this file), so the page
// never freezes. Every failure is a WasmLLMError with a `code` (see
// wasmllm.d.ts for the list). Types and every option are documented in
// wasmllm.d.ts.

const CACHE_PREFIX = "wasmllm-model:"; // must match loader.js

/** An error from the engine, with a stable `code`. */
export class WasmLLMError extends Error {
	constructor(code, message, details) {
		super(message);
		this.name = "WasmLLMError";
		this.code = code;
		this.details = details;
	}
}

const toError = (d) => new WasmLLMError(d && d.code || "internal", d && d.message || "unknown error", d && d.details);

// folderURL resolves a model folder against the page and ends it with "/".
const folderURL = (model) => {
	const u = new URL(model, globalThis.location.href);
	if (!u.pathname.endsWith("/")) u.pathname += "/";
	return u.href;
};

/** The Cache Storage name used for a model folder. */
export const cacheNameFor = (model) => CACHE_PREFIX + folderURL(model);

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
	constructor(worker) {
		this.worker = worker;
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

	fail(err) {
		this.dead = err;
		for (const p of this.pending.values()) p.reject(err);
		this.pending.clear();
	}

	// call posts {id, op, ...fields} and resolves with the result.
	call(op, fields, handlers) {
		if (this.dead) return Promise.reject(this.dead);
		const id = this.next++;
		return new Promise((resolve, reject) => {
			this.pending.set(id, Object.assign({ resolve, reject }, handlers));
			this.worker.postMessage(Object.assign({ id, op }, fields));
		});
	}

	abort() {
		if (!this.dead) this.worker.postMessage({ op: "abort" });
	}

	terminate(err) {
		this.worker.terminate();
		this.fail(err || new WasmLLMError("not_loaded", "the engine was unloaded"));
	}
}

// runProcessors runs fns in order on logits (in place, or by copying a
// returned array into it) and checks each one's output. It resolves to {}
// on success, {error} when a processor threw or returned a bad value, or
// {invalid} when one wrote NaN or +Infinity.
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

// Stream is the async iterable a streaming create() resolves to.
class Stream {
	constructor() {
		this.queue = [];
		this.waiting = null;
		this.done = false;
		this.error = null;
	}

	push(chunk) {
		if (this.waiting) {
			const w = this.waiting;
			this.waiting = null;
			w.resolve({ value: chunk, done: false });
		} else {
			this.queue.push(chunk);
		}
	}

	end(err) {
		this.done = true;
		this.error = err || null;
		if (this.waiting) {
			const w = this.waiting;
			this.waiting = null;
			if (err) w.reject(err);
			else w.resolve({ value: undefined, done: true });
		}
	}

	next() {
		if (this.queue.length) return Promise.resolve({ value: this.queue.shift(), done: false });
		if (this.done) {
			if (this.error) {
				const e = this.error;
				this.error = null;
				return Promise.reject(e);
			}
			return Promise.resolve({ value: undefined, done: true });
		}
		return new Promise((resolve, reject) => { this.waiting = { resolve, reject }; });
	}

	[Symbol.asyncIterator]() {
		return { next: () => this.next(), return: () => Promise.resolve({ value: undefined, done: true }) };
	}
}

/** A loaded model. Create one with createEngine. */
export class Engine {
	constructor(conn, info, model, handlers) {
		this._conn = conn;
		this._model = model;
		this._handlers = handlers || {};
		/** backend, adapter, model config, context length, load statistics. */
		this.info = info;
		/** Timings of the last finished request (null before the first). */
		this.stats = null;
		this.chat = { completions: { create: (req) => this._create("chat", req) } };
		this.completions = { create: (req) => this._create("completion", req) };
	}

	_create(op, req) {
		if (!req || typeof req !== "object") return Promise.reject(new WasmLLMError("bad_request", "create() needs a request object"));
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
		if (!req.stream) return this._conn.call(op, fields, { processors }).then(done);
		const stream = new Stream();
		this._conn.call(op, fields, { processors, onChunk: (c) => stream.push(c) }).then(
			(data) => { done(data); stream.end(); },
			(err) => stream.end(err));
		return Promise.resolve(stream);
	}

	/**
	 * Stops the running request (within one token) and any queued ones. A
	 * stopped request ends normally with finish_reason "abort".
	 */
	abort() {
		this._conn.abort();
	}

	/**
	 * Loads the model again in the same worker, on a newly opened GPU device:
	 * what to do after a request failed with code "device_lost". The
	 * manifest and tokenizer come from the worker's memory and the shards
	 * from Cache Storage, so it needs no network when caching is on.
	 * Resolves to the new info (also this.info); the engine object stays the
	 * same. onProgress and onNotice default to createEngine's.
	 */
	async reload(opts = {}) {
		const h = this._handlers;
		const onNotice = opts.onNotice || h.onNotice;
		const info = await this._conn.call("reload", {}, { onProgress: opts.onProgress || h.onProgress, onNotice });
		this.info = info;
		this.stats = null;
		if (info.notice && onNotice) onNotice(info.notice);
		return info;
	}

	/** Frees the model and stops the worker. The engine is unusable after. */
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
		return deleteCachedModel(this._model);
	}
}

/**
 * Starts a worker and loads a converted model folder into it.
 * @param {import("./wasmllm").EngineOptions} opts
 * @returns {Promise<Engine>}
 */
export async function createEngine(opts) {
	if (!opts || !opts.model) throw new WasmLLMError("bad_request", "createEngine: model (the model folder's URL) is required");
	const model = folderURL(opts.model);
	const workerURL = opts.workerURL || new URL("./worker.js", import.meta.url);
	const wasmURL = new URL(opts.wasmURL || new URL("./wasmllm.wasm", import.meta.url), globalThis.location.href).href;
	const conn = new Connection(new Worker(workerURL));
	const signal = opts.signal;
	const onAbort = () => conn.abort();
	try {
		if (signal && signal.aborted) throw new WasmLLMError("aborted", "loading was aborted");
		if (signal) signal.addEventListener("abort", onAbort, { once: true });
		await conn.call("init", { wasm: wasmURL });
		const load = {
			model,
			backend: opts.backend || "",
			context_length: opts.contextLength || 0,
			kv_cache_dtype: opts.kvCacheDtype == null ? "" : String(opts.kvCacheDtype),
			heap_bytes: opts.heapBytes || 0,
			concurrency: opts.concurrency || 0,
			max_retries: opts.maxRetries || 0,
			cache: opts.cache !== false,
			limits: opts.limits || {},
			storage_estimate: opts.storageEstimate || null,
		};
		const info = await conn.call("load", { body: JSON.stringify(load) }, { onProgress: opts.onProgress, onNotice: opts.onNotice });
		if (info.notice && opts.onNotice) opts.onNotice(info.notice);
		return new Engine(conn, info, model, { onProgress: opts.onProgress, onNotice: opts.onNotice });
	} catch (e) {
		conn.terminate(e);
		throw e instanceof WasmLLMError ? e : new WasmLLMError("internal", String(e && e.message || e));
	} finally {
		if (signal) signal.removeEventListener("abort", onAbort);
	}
}
