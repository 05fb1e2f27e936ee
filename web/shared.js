// shared.js: the page side of createEngine({shared: true}) (wasmllm.js).
// The engine lives in a SharedWorker (shared-worker.js beside worker.js),
// one per origin and model, so a second tab asking for a loaded model gets
// it with nothing downloaded or loaded again. openShared finds or starts
// that worker, says hello (the tab's Web Lock, which tells the worker when
// the tab is gone, and its idle time), and decides where the engine runs:
//
//   - "shared-worker": in the SharedWorker, on WebGPU when the worker gets
//     an adapter, else on the CPU (one rank: a SharedWorker is not
//     cross-origin isolated, so it cannot share memory with rank workers);
//   - "per-tab": in a worker of this tab's own, as without shared, when the
//     browser has no SharedWorker, when worker.js is on another origin (a
//     SharedWorker must be same-origin, and one started from a blob would
//     be this tab's alone), or when the SharedWorker gets no WebGPU adapter
//     but the page does (WebGPU there beats a CPU engine shared).
//
// engine.info.shared says which, and why: {mode, reason, reused, clients}.

/** How long a shared engine stays loaded once no tab uses it (ms), by default. */
export const SHARED_IDLE_MS = 5000;

const HELLO_TIMEOUT_MS = 10000;
const TRIES = 3;

// tabLock is this tab's Web Lock, held until the tab closes or navigates
// away: the SharedWorker waits for it to learn that the tab is gone. ""
// where the browser has no Web Locks (then only "bye", sent on pagehide,
// tells it).
let tabLock = null;
function lockName() {
	if (!tabLock) {
		tabLock = new Promise((resolve) => {
			const locks = globalThis.navigator && navigator.locks;
			if (!locks) {
				resolve("");
				return;
			}
			const id = globalThis.crypto && crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;
			const name = `wasmllm-tab:${id}`;
			locks.request(name, () => {
				resolve(name);
				return new Promise(() => {}); // held for the tab's life
			}).catch(() => resolve(""));
		});
	}
	return tabLock;
}

// The ports of this tab's shared engines, told "bye" when the page is
// hidden by a navigation or closed: its requests are cancelled then, even
// when the browser keeps the page in its back/forward cache (which may keep
// its Web Lock). Such a page, shown again, finds its engines ended
// (not_loaded): create them again.
const open = new Set();
if (globalThis.addEventListener) {
	globalThis.addEventListener("pagehide", () => {
		for (const w of [...open]) w.leave("the page was left: its shared engine let go of it; create the engine again");
	});
}

// PortWorker makes a SharedWorker's port look like a Worker to wasmllm.js's
// Connection: postMessage, onmessage, onerror, and terminate (which says
// "bye", so the shared engine cancels this tab's requests and forgets it).
class PortWorker {
	constructor(sw) {
		this.port = sw.port;
		this.onmessage = null;
		this.onerror = null;
		this.port.onmessage = (ev) => { if (this.onmessage) this.onmessage(ev); };
		sw.onerror = (ev) => { if (this.onerror) this.onerror(ev); };
		open.add(this);
	}

	postMessage(m, transfer) {
		if (transfer && transfer.length) this.port.postMessage(m, transfer);
		else this.port.postMessage(m);
	}

	terminate() {
		if (!open.delete(this)) return;
		try {
			this.port.postMessage({ op: "bye" });
		} catch (e) {
			// already closed
		}
		this.port.close();
	}

	// leave says "bye" and ends the engine's pending calls with not_loaded.
	leave(message) {
		this.terminate();
		if (this.onmessage) this.onmessage({ data: { id: 0, type: "fatal", data: { code: "not_loaded", message } } });
	}
}

// hello opens the SharedWorker named name and greets it: resolves to
// {sw, data} or {closing: true} for one that is unloading (try again: the
// next one started is a new worker).
function hello(url, name, idleMs, tab) {
	return new Promise((resolve, reject) => {
		let sw;
		try {
			sw = new SharedWorker(url, { name });
		} catch (e) {
			reject(e);
			return;
		}
		const timer = setTimeout(() => {
			sw.port.close();
			resolve({ closing: true });
		}, HELLO_TIMEOUT_MS);
		sw.onerror = (ev) => {
			clearTimeout(timer);
			reject(new Error(ev && ev.message || `the shared worker ${url} did not start`));
		};
		sw.port.onmessage = (ev) => {
			const m = ev.data || {};
			if (m.type !== "hello") return;
			clearTimeout(timer);
			sw.port.onmessage = null;
			if (m.data.closing) {
				sw.port.close();
				resolve({ closing: true });
			} else {
				resolve({ sw, data: m.data });
			}
		};
		sw.port.start();
		sw.port.postMessage({ op: "hello", tab, idle_ms: idleMs });
	});
}

const perTab = (reason) => ({ mode: "per-tab", reason });

/**
 * openShared returns where the engine for a load runs: {mode:
 * "shared-worker", reason, worker} with worker a PortWorker, or {mode:
 * "per-tab", reason} (start a worker of the tab's own). key names the
 * engine: tabs with the same key share it.
 */
export async function openShared({ workerURL, key, backend, idleMs }) {
	if (typeof SharedWorker !== "function") return perTab("this browser has no SharedWorker: the engine runs in this tab's own worker");
	const url = new URL("./shared-worker.js", new URL(workerURL, globalThis.location.href));
	if (url.origin !== globalThis.location.origin) {
		return perTab(`worker.js is on another origin (${url.origin}): a SharedWorker must be on the page's origin, so the engine runs in this tab's own worker`);
	}
	const tab = await lockName();
	const name = `wasmllm ${key}`;
	for (let i = 0; i < TRIES; i++) {
		const h = await hello(url.href, name, idleMs, tab);
		if (h.closing) continue;
		const port = new PortWorker(h.sw);
		if (h.data.gpu || backend === "cpu") return { mode: "shared-worker", reason: "", worker: port };
		let pageGPU = false;
		try {
			pageGPU = !!(globalThis.navigator && navigator.gpu && await navigator.gpu.requestAdapter());
		} catch (e) {
			pageGPU = false;
		}
		if (pageGPU) {
			port.terminate();
			return perTab("this browser gives a SharedWorker no WebGPU adapter (the page has one): the engine runs in this tab's own worker, on WebGPU");
		}
		return { mode: "shared-worker", reason: "no WebGPU adapter here: the CPU engine runs in the SharedWorker, on one rank (a SharedWorker is not cross-origin isolated)", worker: port };
	}
	return perTab("the shared engine kept closing: the engine runs in this tab's own worker");
}
