// wasmllm engine worker: runs the Go engine (wasmllm.wasm) off the page's
// thread and relays messages. web/wasmllm.js starts it; nothing else needs
// to talk to it directly. In a SharedWorker (createEngine({shared: true}))
// shared-worker.js imports it and speaks this protocol for every tab.
//
// Protocol. The page posts {id, op, ...}:
//   {op: "init", wasm: URL}                  start the engine
//   {id, op: "load", body: JSON, file?}      load a model (loadOptions in wasm/load.go); file: a
//                                            GGUF File or Blob to read where it lies
//   {id, op: "chat" | "completion", body, processors: N}
//                                            an OpenAI-shaped request (JSON); N > 0: the
//                                            page holds N logits_processors for it
//   {id, op: "reload", body: JSON}           rebuild the last model on a new device (after device_lost)
//   {id, op: "unload"} / {id, op: "info"}
//   {id, op: "reset"}                        forget the KV cache's prefix (in order with requests)
//   {op: "abort"}                            abort every load or request sent before it
//   {id, op: "cancel"}                       abort the one load or request of that id (queued or
//                                            running; a request ends with finish_reason "abort")
//   {id, op: "processed", logits, error?, invalid?}
//                                            the answer to a "process" message: logits is the
//                                            row's Float32Array, transferred back; error
//                                            {code, message, details} when a processor threw
//                                            (or returned a bad value); invalid {index, token,
//                                            value} when processor index wrote NaN or +Inf
// The worker posts {id, type, data}:
//   type "progress"  data {bytes, total, shards_done, shards_total, rate}; while a GGUF
//                    is read and converted, stage "gguf" and the GGUF's bytes
//   type "notice"    data {message}
//   type "chunk"     data: a chat.completion.chunk or text_completion chunk
//   type "process"   data {logits: Float32Array, output: Int32Array}, both transferred:
//                    run the request's logits_processors on the full row (vocabulary
//                    size) given the tokens generated so far, and answer "processed".
//                    Once per token; the engine waits for the answer (abort ends the wait)
//   type "result"    data: the operation's result (ends the id)
//   type "error"     data {code, message, details} (ends the id)
//   type "fatal"     data {code, message}: the engine stopped; every id ends
//   type "rank"      data {key, init}: start a CPU rank worker (rank.js beside this
//                    script) and post it init (cpu/ranks_js.go)
//   type "rank_end"  data {key}: terminate that rank worker
"use strict";

// Relative to this script; a cross-origin page starts it from a same-origin
// blob that sets __wasmllmBase first (see wasmllm-chat.js).
const scriptBase = self.__wasmllmBase || self.location.href;
importScripts(new URL("wasm_exec.js", scriptBase).href, new URL("loader.js", scriptBase).href);

// post sends a message to the page; in a SharedWorker, shared-worker.js
// sets __wasmllmSend first and routes it to the tab it is for.
const post = self.__wasmllmSend || ((m, transfer) => (transfer ? self.postMessage(m, transfer) : self.postMessage(m)));

let handle = null;
let markReady;
const ready = new Promise((resolve) => { markReady = resolve; });
let booting = null;

// Called by the Go program once it is listening.
self.__wasmllmReady = (h) => {
	handle = h;
	markReady();
};

// Go posts JSON text; the page receives structured objects.
self.__wasmllmPost = (id, type, json) => {
	post({ id, type, data: JSON.parse(json) });
};

// __wasmllmYield resolves after pending events (such as an abort message)
// have run: a MessageChannel round trip, without setTimeout's clamping.
const yieldChannel = new MessageChannel();
const yieldWaiters = [];
yieldChannel.port1.onmessage = () => {
	const w = yieldWaiters.shift();
	if (w) w();
};
self.__wasmllmYield = () => new Promise((resolve) => {
	yieldWaiters.push(resolve);
	yieldChannel.port2.postMessage(0);
});

// Logits processors (wasm/processor.go). Per request, the row's buffer goes
// to the page and back by transfer, and is reused for the next token; the
// Go side copies the row into it, then awaits __wasmllmProcess.
const rows = new Map(); // request id -> {buf, waiter}
const rowState = (id) => {
	let s = rows.get(id);
	if (!s) rows.set(id, s = { buf: null, waiter: null });
	return s;
};
self.__wasmllmProcessBuffer = (id, bytes) => {
	const s = rowState(id);
	if (!s.buf || s.buf.byteLength !== bytes) s.buf = new ArrayBuffer(bytes);
	return new Uint8Array(s.buf);
};
// Resolves to {logits: Uint8Array} or {invalid}; rejects with the error
// the page sent.
self.__wasmllmProcess = (id, output) => new Promise((resolve, reject) => {
	const s = rowState(id);
	const buf = s.buf;
	s.buf = null;
	s.waiter = { resolve, reject };
	post({ id, type: "process", data: { logits: new Float32Array(buf), output: new Int32Array(output.buffer) } },
		[buf, output.buffer]);
});
// After an abort the Go side stops waiting: a late answer settles nothing.
self.__wasmllmProcessDrop = (id) => { rowState(id).waiter = null; };
self.__wasmllmProcessEnd = (id) => { rows.delete(id); };
const processed = (m) => {
	const s = rows.get(m.id);
	if (!s || !s.waiter) return;
	const w = s.waiter;
	s.waiter = null;
	const row = m.logits instanceof Float32Array ? m.logits : null;
	if (row) s.buf = row.buffer;
	if (m.error) w.reject(m.error);
	else if (m.invalid) w.resolve({ invalid: m.invalid });
	else if (!row) w.reject({ code: "internal", message: "logits_processors: the page sent no row back" });
	else w.resolve({ logits: new Uint8Array(row.buffer, row.byteOffset, row.byteLength) });
};

// navigator.storage.persist() exists only in a page: the worker asks the
// page (message "persist") and waits for its answer (op "persisted").
const persistWaiters = new Map();

// The loader functions the Go side awaits.
self.__wasmllmLoader = {
	manifest: (model, opts) => WasmLLMLoader.manifest(model, opts),
	file: (model, name, opts, sha) => WasmLLMLoader.file(model, name, opts, sha),
	quota: (id, model, shards, opts) => WasmLLMLoader.quota(model, shards, Object.assign({}, opts, {
		requestPersist: (need) => new Promise((resolve) => {
			persistWaiters.set(id, resolve);
			post({ id, type: "persist", data: { need } });
		}),
	})),
	commit: (model, text, opts) => WasmLLMLoader.commit(model, text, opts),
	// A GGUF read where it lies, converted into a folder (wasm/gguf.go,
	// which posts its progress).
	isGGUF: (model) => WasmLLMLoader.isGGUF(model),
	ggufFolder: (model) => WasmLLMLoader.ggufFolder(model),
	ggufOpen: (model, opts) => WasmLLMLoader.ggufOpen(model, opts),
	ggufRead: (src, off, len, opts) => WasmLLMLoader.ggufRead(src, off, len, opts),
	localFolder: (model, opts) => WasmLLMLoader.localFolder(model, opts),
	deleteModel: (model) => WasmLLMLoader.deleteModel(model),
	download: (id, model, shards, onShard, opts) => WasmLLMLoader.download(model, shards, onShard, Object.assign({}, opts, {
		onProgress: (p) => post({ id, type: "progress", data: p }),
		onNotice: (message) => post({ id, type: "notice", data: { message } }),
	})),
};

const fatal = (message) => {
	handle = null;
	post({ id: 0, type: "fatal", data: { code: "internal", message } });
};

let rankKeys = 0;

async function boot(wasmURL) {
	const go = new Go();
	let result;
	try {
		result = await WebAssembly.instantiateStreaming(fetch(wasmURL), go.importObject);
	} catch (e) {
		// A server without the application/wasm type: instantiate from bytes.
		const resp = await fetch(wasmURL);
		if (!resp.ok) throw new Error(`fetching ${wasmURL}: HTTP ${resp.status}`);
		result = await WebAssembly.instantiate(await resp.arrayBuffer(), go.importObject);
	}
	// The CPU engine's SIMD128 kernels (cpu/simd_js.go) read and write the
	// Go instance's memory directly.
	globalThis.wasmllmGoMemory = result.instance.exports.mem;
	// The CPU engine's ranks (cpu/ranks_js.go): web/rank.js workers, each
	// an instance of this compiled module with this wasm_exec.js.
	self.__wasmllmModule = result.module;
	self.__wasmllmExecURL = new URL("wasm_exec.js", scriptBase).href;
	// The page starts them (wasmllm.js), not this worker: Firefox stalls
	// workers nested in one that blocks in Atomics.wait.
	self.__wasmllmRankWorker = (rank, init) => {
		const key = ++rankKeys;
		post({ id: 0, type: "rank", data: { key, init } });
		return { terminate: () => post({ id: 0, type: "rank_end", data: { key } }) };
	};
	go.run(result.instance).then(
		() => fatal("the engine exited"),
		(e) => fatal(`the engine crashed: ${e && e.message || e}`));
	await ready;
}

// receive handles one message from the page (or, in a SharedWorker, from
// shared-worker.js, which routes every tab's messages here).
const receive = async (data) => {
	const m = data || {};
	if (m.op === "processed") {
		processed(m);
		return;
	}
	if (m.op === "persisted") {
		const w = persistWaiters.get(m.id);
		persistWaiters.delete(m.id);
		if (w) w({ granted: !!m.granted, asked: !!m.asked, already: !!m.already });
		return;
	}
	if (m.op === "init") {
		try {
			if (!booting) booting = boot(m.wasm);
			await booting;
			post({ id: m.id, type: "result", data: {} });
		} catch (e) {
			post({ id: m.id, type: "error", data: { code: "internal", message: `starting the engine: ${e && e.message || e}` } });
		}
		return;
	}
	if (!booting) {
		post({ id: m.id, type: "error", data: { code: "internal", message: "the engine was not started (init first)" } });
		return;
	}
	await ready;
	if (!handle) {
		post({ id: m.id, type: "error", data: { code: "internal", message: "the engine has stopped" } });
		return;
	}
	handle({ id: m.id || 0, op: m.op, body: m.body || "", processors: m.processors || 0, file: m.file || null });
};

if (self.__wasmllmSend) self.__wasmllmReceive = receive;
else self.onmessage = (ev) => receive(ev.data);
