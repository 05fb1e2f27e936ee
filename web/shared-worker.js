// wasmllm shared engine: the SharedWorker behind createEngine({shared: true})
// (web/shared.js opens it). A SharedWorker is one per script URL and name,
// and shared.js names it by the model and the options that shape the loaded
// engine, so every tab of an origin asking for the same model reaches the
// same one. It runs the engine as a dedicated worker does (it imports
// worker.js, whose messages it routes) and serves every tab's port:
//
//   - ids: each tab numbers its own messages; the hub gives each a global id
//     for the engine and routes the engine's answers back by it;
//   - the model loads once: the first tab's "load" runs, tabs that ask while
//     it loads wait for it (with its progress events), later ones get its
//     info at once; info.shared says {reused, clients};
//   - fairness: requests ("chat", "completion", "reset") wait in a queue per
//     tab and go to the engine one at a time, the tabs taken in turn (round
//     robin), so one tab's backlog never starves another;
//   - leaving: a tab that closes or navigates away (its Web Lock is released,
//     or its "bye" arrives) has its own requests cancelled, never another's;
//     "unload" detaches one tab. When no tab is left the engine unloads after
//     the idle time of the last tab to leave (idle_ms) and the worker closes;
//     the browser also ends it with its last tab.
//
// Page -> hub: {op: "hello", tab, idle_ms} first, answered {type: "hello",
// data: {gpu, closing, clients}}; then worker.js's protocol ({id, op, ...},
// ids the tab's own) and {op: "bye"}. Hub -> page: worker.js's messages.
"use strict";

(() => {
	const clients = new Set();
	const order = []; // the clients in turn order
	let turn = 0; // index in order of the client whose request goes next
	const routes = new Map(); // global id -> {client, id, kind, msg, forwarded}
	let nextGid = 1;
	let running = 0; // the global id of the request the engine runs, 0 when none
	// The model: "none", "loading" (gid: the load's id, waiters: [{client,
	// id}], starter: the client whose load runs) or "loaded" (info).
	const model = { state: "none", gid: 0, info: null, waiters: [], starter: null };
	let idleTimer = null;
	let closing = false;
	let gpu = null; // a promise: whether this worker gets a WebGPU adapter
	const watched = new Set(); // tab lock names being waited for

	self.__wasmllmSend = (m, transfer) => fromEngine(m, transfer);
	// Beside this script, or where a same-origin wrapper says (__wasmllmBase).
	importScripts(new URL("worker.js", self.__wasmllmBase || self.location.href).href);
	const toEngine = (m) => self.__wasmllmReceive(m);

	const send = (c, m, transfer) => {
		if (c.gone) return;
		try {
			if (transfer && transfer.length) c.port.postMessage(m, transfer);
			else c.port.postMessage(m);
		} catch (e) {
			// a closed port: its tab is gone
		}
	};
	const errorOf = (code, message) => ({ code, message });

	// route registers a global id for the client's message id.
	const route = (c, id, kind, msg) => {
		const gid = nextGid++;
		routes.set(gid, { client: c, id, kind, msg, forwarded: false });
		c.ids.set(id, gid);
		return gid;
	};
	const unroute = (gid) => {
		const r = routes.get(gid);
		routes.delete(gid);
		if (r && r.client && r.client.ids.get(r.id) === gid) r.client.ids.delete(r.id);
	};

	function fromEngine(m, transfer) {
		if (m.type === "fatal") {
			for (const c of clients) send(c, m);
			closing = true;
			self.close();
			return;
		}
		if (m.type === "rank") {
			// The CPU engine asks for a rank worker only where it can share
			// memory, which a SharedWorker cannot (it is not cross-origin
			// isolated): should one ask, the rank is marked dead so the load
			// fails at once with cpu_rank_failed instead of waiting.
			const ctrl = new Int32Array(m.data.init.ctrl);
			const w = 64 + 8 * m.data.init.rank;
			Atomics.store(ctrl, w + 3, 1);
			Atomics.notify(ctrl, w);
			return;
		}
		const r = routes.get(m.id);
		if (!r) return;
		const ends = m.type === "result" || m.type === "error";
		if (r.kind === "load") {
			loadMessage(m, transfer);
			return;
		}
		if (r.kind === "close") {
			if (ends) self.close();
			return;
		}
		if (ends) {
			unroute(m.id);
			if (r.kind === "reload" && m.type === "result") model.info = m.data;
		}
		send(r.client, Object.assign({}, m, { id: r.id }), transfer);
		if (ends && m.id === running) {
			running = 0;
			pump();
		}
	}

	// loadMessage delivers the load's progress to every tab waiting for it,
	// its "persist" question to the tab that started it, and its end to all.
	function loadMessage(m, transfer) {
		if (m.type === "persist") {
			const c = model.starter && !model.starter.gone ? model.starter : model.waiters.map((w) => w.client)[0];
			const w = c && model.waiters.find((x) => x.client === c);
			if (w) send(c, Object.assign({}, m, { id: w.id }));
			else toEngine({ id: m.id, op: "persisted", granted: false, asked: false });
			return;
		}
		if (m.type !== "result" && m.type !== "error") {
			for (const w of model.waiters) send(w.client, Object.assign({}, m, { id: w.id }), transfer);
			return;
		}
		const waiters = model.waiters;
		unroute(m.id);
		for (const w of waiters) if (w.client.ids.get(w.id) === m.id) w.client.ids.delete(w.id);
		model.waiters = [];
		if (m.type === "result") {
			Object.assign(model, { state: "loaded", info: m.data });
			for (const w of waiters) reply(w.client, w.id, loadedInfo(w.client !== model.starter));
		} else {
			Object.assign(model, { state: "none", gid: 0, info: null });
			for (const w of waiters) send(w.client, Object.assign({}, m, { id: w.id }));
		}
		model.starter = null;
	}

	const loadedInfo = (reused) => Object.assign({}, model.info, { shared: { reused, clients: clients.size } });
	const reply = (c, id, data) => send(c, { id, type: "result", data });
	const fail = (c, id, code, message) => send(c, { id, type: "error", data: errorOf(code, message) });

	// load answers a tab's "load": joins the one loaded or loading, or starts it.
	function load(c, m) {
		let want = "";
		try {
			want = JSON.parse(m.body || "{}").model;
		} catch (e) {
			fail(c, m.id, "bad_request", "load: the options are not JSON");
			return;
		}
		if (model.state === "loaded") {
			if (model.info && model.info.model && model.info.model.url && want && model.info.model.url !== want && !m.file) {
				fail(c, m.id, "bad_request", `this shared engine holds ${model.info.model.url}, not ${want}`);
				return;
			}
			reply(c, m.id, loadedInfo(true));
			return;
		}
		if (model.state === "loading") {
			model.waiters.push({ client: c, id: m.id });
			c.ids.set(m.id, model.gid);
			return;
		}
		const gid = route(c, m.id, "load", m);
		Object.assign(model, { state: "loading", gid, starter: c, waiters: [{ client: c, id: m.id }] });
		toEngine(Object.assign({}, m, { id: gid }));
	}

	// leaveLoad stops one tab's wait for the load; the load itself stops
	// when no tab waits for it.
	function leaveLoad(c, id, tell) {
		const i = model.waiters.findIndex((w) => w.client === c && w.id === id);
		if (i < 0) return;
		model.waiters.splice(i, 1);
		if (c.ids.get(id) === model.gid) c.ids.delete(id);
		if (tell) fail(c, id, "aborted", "loading was aborted");
		if (!model.waiters.length) toEngine({ op: "cancel", id: model.gid });
	}

	// pump sends the next request to the engine when it runs none, taking
	// the tabs in turn.
	function pump() {
		if (running || !order.length) return;
		for (let k = 0; k < order.length; k++) {
			const i = (turn + k) % order.length;
			const c = order[i];
			if (!c.queue.length) continue;
			const gid = c.queue.shift();
			turn = (i + 1) % order.length;
			const r = routes.get(gid);
			r.forwarded = true;
			running = gid;
			toEngine(Object.assign({}, r.msg, { id: gid }));
			return;
		}
	}

	// cancel stops one of a tab's requests: a queued one goes to the engine
	// cancelled (so it ends as the engine ends a cancelled request), a
	// running one is cancelled there.
	function cancel(c, id) {
		const gid = c.ids.get(id);
		if (!gid) return;
		if (model.state === "loading" && gid === model.gid) {
			leaveLoad(c, id, true);
			return;
		}
		const r = routes.get(gid);
		if (!r) return;
		if (!r.forwarded) {
			const q = c.queue.indexOf(gid);
			if (q >= 0) c.queue.splice(q, 1);
			r.forwarded = true;
			toEngine(Object.assign({}, r.msg, { id: gid }));
		}
		toEngine({ op: "cancel", id: gid });
	}

	// leave detaches a tab: its queued requests are dropped, its running
	// one and its wait for the load cancelled; the last to leave starts the
	// idle countdown.
	function leave(c) {
		if (c.gone) return;
		for (const [id, gid] of [...c.ids]) {
			if (model.state === "loading" && gid === model.gid) {
				leaveLoad(c, id, false);
				continue;
			}
			const r = routes.get(gid);
			if (r && r.forwarded) toEngine({ op: "cancel", id: gid });
			else unroute(gid);
		}
		c.gone = true;
		c.queue = [];
		clients.delete(c);
		const i = order.indexOf(c);
		if (i >= 0) {
			order.splice(i, 1);
			if (turn > i) turn--;
			if (turn >= order.length) turn = 0;
		}
		if (model.starter === c) model.starter = null;
		if (!clients.size) idle(c.idleMs);
		pump();
	}

	// idle unloads the engine and closes the worker after ms with no tab.
	function idle(ms) {
		clearTimeout(idleTimer);
		idleTimer = setTimeout(() => {
			if (clients.size) return;
			closing = true;
			if (model.state === "none" && !routes.size) {
				self.close();
				return;
			}
			const gid = nextGid++;
			routes.set(gid, { kind: "close" });
			toEngine({ id: gid, op: "unload" });
		}, ms);
	}

	// watch waits for a tab's Web Lock, which the tab holds while it lives:
	// granted here once the tab is closed or has navigated away.
	function watch(tab) {
		if (!tab || watched.has(tab) || !(self.navigator && navigator.locks)) return;
		watched.add(tab);
		navigator.locks.request(tab, () => {
			watched.delete(tab);
			for (const c of [...clients]) if (c.tab === tab) leave(c);
		});
	}

	function hasGPU() {
		if (!gpu) {
			gpu = (async () => {
				try {
					return !!(self.navigator && navigator.gpu && await navigator.gpu.requestAdapter());
				} catch (e) {
					return false;
				}
			})();
		}
		return gpu;
	}

	async function hello(c, m) {
		if (closing) {
			send(c, { type: "hello", data: { closing: true } });
			return;
		}
		clearTimeout(idleTimer);
		c.tab = typeof m.tab === "string" ? m.tab : "";
		c.idleMs = Number.isFinite(m.idle_ms) && m.idle_ms >= 0 ? m.idle_ms : 0;
		clients.add(c);
		order.push(c);
		watch(c.tab);
		send(c, { type: "hello", data: { closing: false, gpu: await hasGPU(), clients: clients.size } });
	}

	function onPortMessage(c, m) {
		if (c.gone && m.op !== "hello") return;
		switch (m.op) {
		case "hello":
			hello(c, m);
			return;
		case "bye":
			leave(c);
			return;
		case "load":
			load(c, m);
			return;
		case "unload":
			reply(c, m.id, {});
			leave(c);
			return;
		case "chat":
		case "completion":
		case "reset":
			c.queue.push(route(c, m.id, "job", m));
			pump();
			return;
		case "cancel":
			cancel(c, m.id);
			return;
		case "abort":
			for (const id of [...c.ids.keys()]) {
				if (model.state === "loading" && c.ids.get(id) === model.gid) leaveLoad(c, id, true);
				else cancel(c, id);
			}
			return;
		case "processed":
		case "persisted": {
			const gid = c.ids.get(m.id);
			if (gid) toEngine(Object.assign({}, m, { id: gid }));
			return;
		}
		default: // init, info, reload, and anything the engine refuses
			toEngine(Object.assign({}, m, { id: route(c, m.id, m.op === "reload" ? "reload" : "op", m) }));
		}
	}

	self.onconnect = (ev) => {
		const port = ev.ports[0];
		const c = { port, tab: "", idleMs: 0, queue: [], ids: new Map(), gone: false };
		port.onmessage = (e) => onPortMessage(c, e.data || {});
		port.start();
	};
})();
