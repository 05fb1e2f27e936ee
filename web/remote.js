// remote.js: the engine of wasmllm.js over an OpenAI-compatible HTTP API
// (vLLM's, or `go run . -api` / `-upstream` on the page's own origin)
// instead of a model in this page. wasmllm.js's createEngine comes here
// when its options have an endpoint:
//
//   const engine = await createEngine({ endpoint: "/v1", model: "Qwen/Qwen3-8B" });
//   for await (const c of await engine.chat.completions.create({ messages, stream: true })) ...
//
// Requests and responses pass as they are (usage, logprobs, tool calls,
// reasoning_content, response_format are the server's); streams are read
// as Server-Sent Events, chunk by chunk. Every failure is a WasmLLMError
// with the local engine's codes (see wasmllm.d.ts, RemoteEngineOptions).

import { WasmLLMError, Stream, abortError } from "./stream.js";
const sleep = (ms, signal) => new Promise((resolve, reject) => {
	const t = setTimeout(resolve, ms);
	if (signal) signal.addEventListener("abort", () => { clearTimeout(t); reject(abortError()); }, { once: true });
});

// errorInfo finds the error object of a body: vLLM's {"error": {...}},
// or a bare {"message": ...} / {"detail": ...} of other servers.
function errorInfo(body) {
	if (!body || typeof body !== "object") return {};
	if (body.error && typeof body.error === "object") return body.error;
	if (typeof body.error === "string") return { message: body.error };
	if (typeof body.detail === "string") return { message: body.detail };
	return body;
}

const CONTEXT_MESSAGE = /maximum context length|context length|too many tokens|max_tokens' or 'max_completion_tokens' is too large|prompt is too long/i;

/**
 * httpError maps an error answer (HTTP status and parsed body) of an
 * OpenAI-compatible server to a WasmLLMError: 413 and context-length
 * errors (param input_tokens or max_tokens, or vLLM's wording) are
 * "context_overflow", other 400s and 404 (an unknown model or endpoint)
 * "bad_request", the rest (401, 403, 429, 5xx) "network".
 */
export function httpError(status, body, url) {
	const e = errorInfo(body);
	const message = String(e.message || (typeof body === "string" && body.trim()) || `HTTP ${status}`).slice(0, 2000);
	const details = { status, url, type: e.type || "", param: e.param == null ? "" : String(e.param) };
	if (status === 413 || details.param === "input_tokens" || details.param === "max_tokens" ||
		((status === 400 || !status) && CONTEXT_MESSAGE.test(message))) {
		const ctx = /maximum context length is (\d+)/i.exec(message);
		const prompt = /has (\d+) input tokens/i.exec(message) || /(\d+) (?:tokens )?in the messages/i.exec(message);
		if (ctx) details.context_length = Number(ctx[1]);
		if (prompt) details.prompt_tokens = Number(prompt[1]);
		return new WasmLLMError("context_overflow", message, details);
	}
	if (status === 400 || status === 404 || status === 405 || status === 415 || status === 422) {
		if (status === 404 && !details.param && /model/i.test(message)) details.param = "model";
		return new WasmLLMError("bad_request", message, details);
	}
	return new WasmLLMError("network", message, details);
}

// readError reads an error answer's body (JSON or text).
async function readError(res, url) {
	let text = "";
	try { text = await res.text(); } catch { /* the body broke off: keep the status */ }
	let body = text;
	try { body = JSON.parse(text); } catch { /* not JSON */ }
	return httpError(res.status, body, url);
}

const networkError = (e, url) => e instanceof WasmLLMError ? e :
	new WasmLLMError("network", `${url}: ${e && e.message || e}`, { url, status: 0 });

const RETRY_STATUS = new Set([408, 429, 500, 502, 503, 504]);

/**
 * parseSSE reads a text/event-stream body incrementally and calls onEvent
 * with each event's data (its data: lines joined with "\n"); events end
 * at a blank line. Returns when the body ends.
 */
export async function parseSSE(body, onEvent) {
	const reader = body.pipeThrough(new TextDecoderStream()).getReader();
	let buf = "";
	const flush = (block) => {
		const data = [];
		for (const line of block.split(/\r\n|\r|\n/)) {
			if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));
		}
		if (data.length) return onEvent(data.join("\n"));
		return true;
	};
	try {
		for (;;) {
			const { value, done } = await reader.read();
			if (done) break;
			buf += value;
			for (let m; (m = /\r\n\r\n|\n\n|\r\r/.exec(buf));) {
				const block = buf.slice(0, m.index);
				buf = buf.slice(m.index + m[0].length);
				if (flush(block) === false) return;
			}
		}
		if (buf.trim()) flush(buf);
	} finally {
		reader.cancel().catch(() => {});
	}
}

/** An engine whose model runs behind an OpenAI-compatible endpoint. */
export class RemoteEngine {
	constructor(opts, endpoint, info) {
		this._endpoint = endpoint;
		this._apiKey = opts.apiKey || "";
		this._headers = Object.assign({}, opts.headers || {});
		this._retries = opts.maxRetries == null ? 2 : Math.max(0, opts.maxRetries | 0);
		this._fetch = opts.fetch || globalThis.fetch.bind(globalThis);
		this._inflight = new Set(); // {stop()} of each request not finished
		this._dead = null;
		this.info = info;
		this.stats = null;
		this.chat = { completions: { create: (req, o) => this._create("chat/completions", req, o) } };
		this.completions = { create: (req, o) => this._create("completions", req, o) };
		// The endpoint's /v1/embeddings (go run . -api -api-embed FILE): req.model
		// names an embedding model (none: the server's only one).
		this.embeddings = { create: (req, o) => this._create("embeddings", req, o) };
	}

	_url(path) { return this._endpoint + "/" + path; }

	_hdrs(extra) {
		const h = Object.assign({}, this._headers, extra);
		if (this._apiKey) h.Authorization = `Bearer ${this._apiKey}`;
		return h;
	}

	// _send fetches with retries of what may be repeated safely: a network
	// failure or a 408/429/5xx answer, before any of the body was read.
	async _send(url, init, retry, signal) {
		for (let attempt = 0; ; attempt++) {
			let res;
			try {
				res = await this._fetch(url, Object.assign({}, init, { signal }));
			} catch (e) {
				if (signal && signal.aborted) throw abortError();
				if (!retry || attempt >= this._retries) throw networkError(e, url);
				await sleep(200 * 2 ** attempt, signal);
				continue;
			}
			if (res.ok) return res;
			if (retry && attempt < this._retries && RETRY_STATUS.has(res.status)) {
				res.body && res.body.cancel().catch(() => {});
				const after = Number(res.headers.get("Retry-After"));
				await sleep(Number.isFinite(after) && after > 0 ? Math.min(after, 5) * 1000 : 200 * 2 ** attempt, signal);
				continue;
			}
			throw await readError(res, url);
		}
	}

	_create(path, req, options) {
		if (this._dead) return Promise.reject(this._dead);
		if (!req || typeof req !== "object") return Promise.reject(new WasmLLMError("bad_request", "create() needs a request object"));
		const signal = options && options.signal;
		if (signal && signal.aborted) return Promise.reject(abortError());
		if (req.logits_processors != null && (!Array.isArray(req.logits_processors) || req.logits_processors.length)) {
			return Promise.reject(new WasmLLMError("bad_request", "logits_processors run only with a local model, not with an endpoint",
				{ param: "logits_processors" }));
		}
		req = Object.assign({}, req);
		delete req.logits_processors;
		if (!req.model && path !== "embeddings") req.model = this.info.model.id;
		let body;
		try {
			body = JSON.stringify(req);
		} catch (e) {
			return Promise.reject(new WasmLLMError("bad_request", `the request is not JSON: ${e.message}`));
		}
		const url = this._url(path);
		const ac = new AbortController();
		const entry = { stopped: false, stop: null };
		const untrack = () => this._inflight.delete(entry);
		this._inflight.add(entry);
		const init = { method: "POST", body, headers: this._hdrs({ "Content-Type": "application/json", Accept: req.stream ? "text/event-stream" : "application/json" }) };

		if (!req.stream) {
			return new Promise((resolve, reject) => {
				const onAbort = () => { ac.abort(); reject(abortError()); };
				entry.stop = () => { entry.stopped = true; ac.abort(); reject(new WasmLLMError("aborted", "the request was stopped by engine.abort()")); };
				if (signal) signal.addEventListener("abort", onAbort, { once: true });
				(async () => {
					const res = await this._send(url, init, true, ac.signal);
					let text;
					try {
						text = await res.text();
					} catch (e) {
						throw ac.signal.aborted ? abortError() : networkError(e, url);
					}
					let data;
					try {
						data = JSON.parse(text);
					} catch {
						throw new WasmLLMError("network", `${url}: the answer is not JSON: ${text.slice(0, 200)}`, { url, status: res.status });
					}
					if (data && data.error) throw httpError(res.status, data, url);
					if (data && data.timings) this.stats = data.timings;
					return data;
				})().then(resolve, (e) => reject(ac.signal.aborted ? abortError() : e)).finally(() => {
					untrack();
					if (signal) signal.removeEventListener("abort", onAbort);
				});
			});
		}

		// A stream: create() resolves at the first chunk (an error before it
		// rejects create()), or with an empty stream when there is none.
		return new Promise((resolve, reject) => {
			let opened = false;
			const open = () => { if (!opened) { opened = true; resolve(stream); } };
			const fail = (err) => {
				stream.end(err);
				if (!opened) { opened = true; reject(err); }
			};
			const stream = new Stream(() => ac.abort());
			const finished = new Set(); // choice indexes that had finish_reason
			let last = null, object = path === "completions" ? "text_completion" : "chat.completion.chunk";
			// engine.abort() ends the stream as the local engine does: a last
			// chunk with finish_reason "abort" for each unfinished choice.
			entry.stop = () => {
				if (entry.stopped || stream.done) return;
				entry.stopped = true;
				ac.abort();
				const seen = last ? new Set([...Array(last.n).keys()]) : new Set([0]);
				for (const i of seen) {
					if (finished.has(i)) continue;
					const choice = object === "text_completion" ? { index: i, text: "", finish_reason: "abort", logprobs: null } :
						{ index: i, delta: {}, finish_reason: "abort", logprobs: null };
					stream.push({ id: last ? last.id : "", object, created: last ? last.created : Math.floor(Date.now() / 1000),
						model: last ? last.model : req.model, choices: [choice] });
				}
				stream.end();
				open();
			};
			const onAbort = () => {
				ac.abort();
				if (opened) stream.cancel(abortError());
				else fail(abortError());
			};
			if (signal) signal.addEventListener("abort", onAbort, { once: true });
			(async () => {
				const res = await this._send(url, init, false, ac.signal);
				if (!res.body) throw new WasmLLMError("network", `${url}: the answer has no body`, { url, status: res.status });
				const type = res.headers.get("Content-Type") || "";
				if (!type.includes("text/event-stream")) {
					// A server that ignored stream: true, or an error as JSON.
					const text = await res.text();
					let data = null;
					try { data = JSON.parse(text); } catch { /* below */ }
					if (data && data.error) throw httpError(res.status, data, url);
					throw new WasmLLMError("network", `${url}: expected an event stream, got ${type || "no Content-Type"}`, { url, status: res.status });
				}
				let sawDone = false;
				await parseSSE(res.body, (data) => {
					if (stream.done) return false;
					if (data.trim() === "[DONE]") { sawDone = true; return false; }
					let c;
					try {
						c = JSON.parse(data);
					} catch {
						throw new WasmLLMError("network", `${url}: an event is not JSON: ${data.slice(0, 200)}`, { url });
					}
					if (c && (c.error || c.object === "error")) throw httpError(Number(errorInfo(c).code) || 0, c, url);
					if (c && c.object) object = c.object;
					const n = Math.max(last ? last.n : 1, ...((c && c.choices) || []).map((x) => (x.index | 0) + 1));
					last = { id: c.id, created: c.created, model: c.model, n };
					for (const ch of (c && c.choices) || []) if (ch.finish_reason) finished.add(ch.index | 0);
					if (c && c.timings) this.stats = c.timings;
					stream.push(c);
					open();
					return true;
				});
				if (!sawDone && !stream.done && !entry.stopped) {
					throw new WasmLLMError("network", `${url}: the stream ended before [DONE]`, { url });
				}
			})().then(() => { stream.end(); open(); }, (e) => {
				if (entry.stopped || stream.done) return;
				fail(ac.signal.aborted ? abortError() : networkError(e, url));
			}).finally(() => {
				untrack();
				if (signal) signal.removeEventListener("abort", onAbort);
			});
		});
	}

	/**
	 * Stops every request in flight: streams end with finish_reason
	 * "abort" (what came so far stays read), plain requests reject with
	 * "aborted" (their text has not arrived). Closing the connection stops
	 * the server's generation.
	 */
	abort() {
		for (const e of [...this._inflight]) if (e.stop) e.stop();
	}

	/** Nothing to forget here: the server keeps its own prefix cache. */
	async resetCache() {}

	/**
	 * Reads /models again (or, with opts.model or a string, switches to
	 * that model id of the same endpoint); resolves to the new info.
	 */
	async reload(opts = {}) {
		if (this._dead) throw this._dead;
		if (typeof opts === "string") opts = { model: opts };
		const info = await remoteInfo(this, this._endpoint, opts.model || this.info.model.id);
		this.info = info;
		this.stats = null;
		return info;
	}

	/** Stops the requests in flight; the engine is unusable after. */
	async unload() {
		if (this._dead) return;
		this._dead = new WasmLLMError("not_loaded", "the engine was unloaded");
		for (const e of [...this._inflight]) if (e.stop) e.stop();
	}

	/** Nothing is cached for a remote model. */
	async deleteCachedModel() { return false; }
}

// remoteInfo lists the endpoint's models and describes the one asked for
// (or the only one).
async function remoteInfo(engine, endpoint, model) {
	const t0 = performance.now();
	const url = endpoint + "/models";
	const res = await engine._send(url, { method: "GET", headers: engine._hdrs({ Accept: "application/json" }) }, true, null);
	let list;
	try {
		list = await res.json();
	} catch (e) {
		throw new WasmLLMError("network", `${url}: the model list is not JSON`, { url, status: res.status });
	}
	const cards = Array.isArray(list && list.data) ? list.data : [];
	let card;
	if (model) {
		card = cards.find((c) => c && c.id === model);
		if (!card) {
			throw new WasmLLMError("bad_request", `${url} has no model ${JSON.stringify(model)}: it serves ${cards.map((c) => c.id).join(", ") || "none"}`,
				{ param: "model", status: 404, url, models: cards.map((c) => c.id) });
		}
	} else if (cards.length === 1) {
		card = cards[0];
	} else {
		throw new WasmLLMError("bad_request", `createEngine: model (one of ${cards.map((c) => c.id).join(", ") || "none"}) is required with an endpoint`,
			{ param: "model", url, models: cards.map((c) => c.id) });
	}
	return {
		backend: "remote",
		endpoint,
		notice: "",
		adapter: null,
		limits: null,
		context_length: card.max_model_len || 0,
		kv_cache_dtype: null,
		model: {
			id: card.id,
			name: card.id,
			url: endpoint,
			owned_by: card.owned_by || "",
			root: card.root || card.id,
			// The server applies the chat template; whether it has one is
			// known at the first chat request.
			has_tokenizer: true,
			has_chat_template: true,
			thinking: false,
		},
		load: { ms: performance.now() - t0, network_bytes: 0, cached_bytes: 0 },
	};
}

/**
 * createRemoteEngine checks the endpoint (GET /models, with retries) and
 * returns an engine for the model. opts: endpoint (absolute, or relative to
 * the page), model (an id of /models; may be left out when there is one),
 * apiKey (sent as Authorization: Bearer), maxRetries (default 2), headers,
 * signal (stops the check).
 */
export async function createRemoteEngine(opts) {
	let endpoint;
	try {
		endpoint = new URL(String(opts.endpoint), globalThis.location && globalThis.location.href).href.replace(/\/+$/, "");
	} catch {
		throw new WasmLLMError("bad_request", `createEngine: endpoint ${JSON.stringify(String(opts.endpoint))} is not a URL`, { param: "endpoint" });
	}
	if (opts.signal && opts.signal.aborted) throw new WasmLLMError("aborted", "loading was aborted");
	const engine = new RemoteEngine(opts, endpoint, null);
	const check = remoteInfo(engine, endpoint, opts.model || "");
	if (!opts.signal) {
		engine.info = await check;
		return engine;
	}
	engine.info = await new Promise((resolve, reject) => {
		const onAbort = () => reject(new WasmLLMError("aborted", "loading was aborted"));
		opts.signal.addEventListener("abort", onAbort, { once: true });
		check.then(resolve, reject).finally(() => opts.signal.removeEventListener("abort", onAbort));
	});
	return engine;
}
