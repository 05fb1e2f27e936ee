// The chat page (index.html): model picker, download progress, settings,
// streaming replies, stop, new chat, and the offline service worker.
//
// URL parameters: ?model=NAME opens with that model selected and loading
// (?model=URL of a .gguf reads that GGUF where it lies; so does a GGUF file
// opened with "Open GGUF…" or dropped on the page);
// ?backend=cpu|webgpu forces a backend (default: WebGPU when the browser
// has it, else the CPU with a notice); ?endpoint=/v1&model=ID chats with
// model ID of that OpenAI-compatible endpoint (remote.js). The picker also
// lists the models of this origin's /v1/models (go run . -api or
// -upstream), marked remote, when it answers JSON. A link only preselects
// what would download a model from another origin or over 64 MiB, or send
// the chat to another origin: the page asks first, naming the host
// (links.js).
//
// For tests, window.wasmllmApp exposes the state: history (one entry per
// finished reply: text, finish_reason, usage, timings, chunks,
// chunks_at_stop), info (the engine's load info), features, offline.

import { createEngine, cacheNameFor } from "./wasmllm.js";
import { SAMPLING, Conversation, renderReply, formatStats, templateFeatures } from "./chat.js";
import { otherHost, probeBytes, linkQuestion } from "./links.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const SETTINGS_KEY = "wasmllm.settings";

const app = {
	engine: null,
	conv: null,
	info: null,
	features: null,
	models: [],
	modelURL: "",
	loadAbort: null,
	generating: false,
	lost: false, // the GPU device was lost: the engine must reload
	stopPressed: false,
	chunks: 0,
	chunksAtStop: null,
	history: [],
	offline: "unsupported",
};
window.wasmllmApp = app;

// ---- status line ----

function setStatus(word, detail = "") {
	$("status").textContent = word;
	$("status-detail").textContent = detail ? " — " + detail : "";
	const ready = word === "ready";
	$("send").disabled = !ready;
	$("stop").disabled = !app.generating;
	$("model").disabled = app.models.length === 0;
}

function showNotice(text, kind = "info") {
	const n = $("notice");
	n.hidden = !text;
	n.textContent = text || "";
	n.dataset.kind = kind;
}

// ---- byte and time formatting ----

function bytesText(n) {
	const units = ["B", "KiB", "MiB", "GiB", "TiB"];
	let i = 0, v = n;
	while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
	return i === 0 ? `${n} B` : `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

function durationText(s) {
	if (!Number.isFinite(s) || s < 0) return "–";
	if (s < 1) return "<1 s";
	if (s < 90) return `${Math.round(s)} s`;
	if (s < 5400) return `${Math.round(s / 60)} min`;
	return `${(s / 3600).toFixed(1)} h`;
}

function showProgress(p) {
	$("loadbar").hidden = false;
	const bar = $("progress");
	bar.max = Math.max(1, p.total);
	bar.value = Math.min(p.bytes, p.total);
	const left = p.rate > 0 ? (p.total - p.bytes) / p.rate : NaN;
	const parts = [`${bytesText(p.bytes)} of ${bytesText(p.total)}`];
	if (p.bytes < p.total) {
		parts.push(p.rate > 0 ? `${bytesText(p.rate)}/s` : "starting");
		parts.push(`${durationText(left)} left`);
	}
	if (p.shards_total > 1) parts.push(`shard ${p.shards_done} of ${p.shards_total}`);
	if (p.stage === "gguf") parts.push("reading and converting the GGUF");
	$("progress-text").textContent = parts.join(" · ");
	setStatus(p.stage === "gguf" ? "converting" : "downloading", `${Math.floor((100 * p.bytes) / Math.max(1, p.total))}%`);
}

// ---- settings ----

function buildSettings() {
	const grid = $("sampling");
	for (const f of SAMPLING) {
		const label = document.createElement("label");
		label.textContent = f.label;
		const input = document.createElement("input");
		Object.assign(input, { type: "number", id: f.key, name: f.key, min: f.min, max: f.max, step: f.step });
		input.dataset.testid = f.key;
		if (f.int) input.inputMode = "numeric";
		label.appendChild(input);
		grid.appendChild(label);
	}
	resetSettings(loadSaved());
	$("settings-form").addEventListener("input", saveSettings);
	$("reset-settings").addEventListener("click", () => { resetSettings({}); saveSettings(); });
}

function loadSaved() {
	try {
		return JSON.parse(localStorage.getItem(SETTINGS_KEY) || "{}") || {};
	} catch {
		return {};
	}
}

function resetSettings(saved) {
	for (const f of SAMPLING) $(f.key).value = saved[f.key] ?? f.value;
	$("seed").value = saved.seed ?? "";
	$("system").value = saved.system ?? "";
	$("thinking").checked = saved.thinking ?? true;
}

function readSettings() {
	const s = { system: $("system").value, seed: $("seed").value, thinking: $("thinking").checked };
	for (const f of SAMPLING) s[f.key] = $(f.key).value;
	return s;
}

function saveSettings() {
	try {
		localStorage.setItem(SETTINGS_KEY, JSON.stringify(readSettings()));
	} catch {
		// storage may be unavailable (private mode); settings then last the visit
	}
}

// ---- model list ----

// fetchListing reads the server's /models/ listing, or models/index.json
// (what `make dist` writes for static hosts). Entries' URLs are resolved
// against the listing's own URL.
async function fetchListing() {
	for (const path of ["models/", "models/index.json"]) {
		const url = new URL(path, location.href);
		try {
			const r = await fetch(url, { headers: { Accept: "application/json" } });
			if (!r.ok) continue;
			const body = await r.json();
			if (!body || !Array.isArray(body.models)) continue;
			return body.models.map((m) => Object.assign({}, m, { url: new URL(m.url || `${encodeURIComponent(m.name)}/`, url).href }));
		} catch {
			// not JSON (a static host's folder page) or offline: try the next
		}
	}
	return [];
}

function fillPicker(models, selected) {
	const sel = $("model");
	sel.replaceChildren();
	if (!models.length) {
		const o = document.createElement("option");
		o.value = "";
		o.textContent = "no models found";
		sel.appendChild(o);
	}
	for (const m of models) {
		const o = document.createElement("option");
		o.value = m.name;
		o.textContent = m.error ? `${m.name} (unusable: ${m.error})` : m.bytes ? `${m.name} · ${bytesText(m.bytes)}` : m.name;
		o.disabled = !!m.error;
		sel.appendChild(o);
	}
	if (selected) sel.value = selected;
}

function modelURLFor(name) {
	return app.models.find((x) => x.name === name).url;
}

// ---- GGUF files and links ----

// ggufEntry is a picker entry for a GGUF read where it lies: a URL
// (?model=https://.../x.gguf) or a File (the picker, a drop).
function ggufEntry(src) {
	if (Array.isArray(src)) { // a split GGUF's parts
		const first = [...src].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))[0];
		return { name: first.name, url: "", file: src, gguf: true };
	}
	if (typeof src !== "string") return { name: src.name, url: "", file: src, gguf: true };
	const url = new URL(src, location.href).href;
	return { name: decodeURIComponent(new URL(url).pathname.split("/").pop()), url, gguf: true };
}

// openGGUF adds a GGUF to the picker and loads it.
function openGGUF(src) {
	const entry = ggufEntry(src);
	app.models = app.models.filter((m) => m.name !== entry.name).concat(entry);
	fillPicker(app.models, entry.name);
	load(entry.name);
}

const isGGUFName = (s) => /\.gguf$/i.test(s || "");

// fetchRemote lists an OpenAI-compatible endpoint's models as picker
// entries (named "ID (remote)"); [] when it does not answer JSON.
async function fetchRemote(endpoint) {
	try {
		const url = new URL(endpoint.replace(/\/+$/, "") + "/models", location.href);
		const r = await fetch(url, { headers: { Accept: "application/json" } });
		if (!r.ok || !(r.headers.get("Content-Type") || "").includes("json")) return [];
		const body = await r.json();
		return (body && Array.isArray(body.data) ? body.data : []).map((m) =>
			({ name: `${m.id} (remote)`, id: m.id, remote: true, endpoint, url: new URL(endpoint, location.href).href }));
	} catch {
		return [];
	}
}

// ---- loading ----

// load loads the model of that name; opts.noCache runs it from the
// network without Cache Storage (for a model over the storage quota).
async function load(name, opts = {}) {
	if (!name) return;
	if (app.generating) stop();
	if (app.loadAbort) app.loadAbort.abort();
	const abort = new AbortController();
	app.loadAbort = abort;
	app.lost = false;
	$("load").textContent = "Load";
	const old = app.engine;
	app.engine = app.conv = app.info = app.features = null;
	if (old) await old.unload().catch(() => {});
	if (app.loadAbort !== abort) return; // another load began meanwhile
	$("messages").replaceChildren(); // a conversation belongs to its model
	const url = modelURLFor(name);
	const entry = app.models.find((x) => x.name === name);
	app.modelURL = url;
	$("load").hidden = true;
	$("backend").hidden = true;
	showNotice("");
	setStatus("loading", name);
	const url2 = new URL(location.href);
	if (entry.file) url2.searchParams.delete("model"); // a local file cannot be reopened by link
	else url2.searchParams.set("model", entry.gguf ? url : name);
	history.replaceState(null, "", url2);
	try {
		const engine = await createEngine(entry.remote ? { endpoint: entry.endpoint, model: entry.id, signal: abort.signal } : {
			model: entry.file || url,
			backend: params.get("backend") || "",
			cache: !opts.noCache,
			signal: abort.signal,
			onProgress: (p) => { if (app.loadAbort === abort) showProgress(p); },
			onNotice: (msg) => { if (app.loadAbort === abort) showNotice(msg, "warn"); },
		});
		if (app.loadAbort !== abort) {
			engine.unload();
			return;
		}
		const features = await templateFeatures(engine.info, url, cacheNameFor(url));
		app.engine = engine;
		app.info = engine.info;
		app.features = features;
		app.conv = new Conversation(engine, features);
		loaded(name);
	} catch (e) {
		if (app.loadAbort !== abort) return;
		setStatus("error", `${name}: ${e.message}${e.code ? ` (${e.code})` : ""}`);
		$("load").hidden = false;
		offerRemote(entry, e);
		offerNoCache(name, e);
	} finally {
		if (app.loadAbort === abort) app.loadAbort = null;
	}
}

// offerRemote: when a local model does not fit this device or the
// storage quota (the check made before anything is downloaded), and the
// endpoint serves a model of the same name, the notice offers it.
function offerRemote(entry, e) {
	if (!entry || entry.remote || (e.code !== "model_too_large" && e.code !== "quota_exceeded")) return;
	const same = (a, b) => a.toLowerCase() === b.toLowerCase();
	const remote = app.models.find((m) => m.remote && same(m.id, entry.name));
	if (!remote) return;
	showNotice(`${entry.name} does not fit here (${e.code}); the server runs it as ${remote.id}. `, "warn");
	const use = document.createElement("button");
	use.type = "button";
	use.dataset.testid = "use-remote";
	use.textContent = `Use ${remote.name}`;
	use.addEventListener("click", () => {
		$("model").value = remote.name;
		load(remote.name);
	});
	$("notice").appendChild(use);
}

// offerNoCache: a model over the storage quota can still run, downloaded
// again on every visit: the notice offers that.
function offerNoCache(name, e) {
	if (e.code !== "quota_exceeded") return;
	const p = e.details && e.details.persist;
	const said = p && p.asked ? ` (persistent storage was ${p.granted ? "granted" : "not granted"})` : "";
	const n = $("notice");
	n.hidden = false;
	n.dataset.kind = "warn";
	n.appendChild(document.createTextNode(` The model does not fit this site's storage quota${said}: it can run from the network without caching, downloaded again on each visit. `));
	const run = document.createElement("button");
	run.type = "button";
	run.dataset.testid = "no-cache";
	run.textContent = "Run without caching";
	run.addEventListener("click", () => load(name, { noCache: true }));
	n.appendChild(run);
}

function loaded(name) {
	const info = app.info;
	$("loadbar").hidden = true;
	const b = $("backend");
	b.hidden = false;
	const host = info.backend === "remote" ? otherHost(info.endpoint) : "";
	b.textContent = info.backend === "webgpu" ? "WebGPU" : info.backend === "remote" ? (host ? `remote · ${host}` : "remote") : "CPU";
	if (info.backend === "remote") b.title = `${info.model.id} at ${info.endpoint}`;
	if (info.backend !== "remote") b.title = info.backend === "webgpu" && info.adapter ? [info.adapter.vendor, info.adapter.architecture, info.adapter.description].filter(Boolean).join(" ") : "the Go CPU backend in WebAssembly";
	if (info.backend === "remote") {
		// served elsewhere: no CPU notice
	} else if (info.backend === "cpu") {
		showNotice(info.notice || "Running on the CPU backend (WebGPU was not requested). Replies are slower than on a GPU.", "warn");
	}
	const note = $("mode-note");
	if (!app.features.chat) {
		note.hidden = false;
		note.textContent = `${name} has no chat template, so it is not a chat model: it continues the text you type, and each message extends the same text.`;
	} else {
		note.hidden = true;
	}
	$("thinking-row").hidden = !app.features.thinking;
	const l = info.load || {};
	const kept = l.persist ? (l.persist.granted ? "; the browser keeps it (persistent storage granted)" :
		"; persistent storage not granted: the browser may evict the cached model under storage pressure") : "";
	setStatus("ready", `${name} loaded in ${durationText((l.ms || 0) / 1000)}${l.network_bytes === 0 ? " from the cache" : ""}${kept}`);
	$("prompt").focus();
}

// ---- conversation ----

function addMessage(role, text) {
	const li = document.createElement("li");
	li.className = `msg ${role}`;
	li.dataset.testid = role;
	const who = document.createElement("span");
	who.className = "who";
	who.textContent = role === "user" ? "You" : "Model";
	const body = document.createElement("div");
	body.className = "body";
	if (role === "user") body.textContent = text;
	li.append(who, body);
	$("messages").appendChild(li);
	li.scrollIntoView({ block: "end" });
	return li;
}

async function send() {
	const text = $("prompt").value;
	if (!text.trim() || !app.conv || app.generating) return;
	let settings;
	try {
		settings = readSettings();
		settings.thinking = app.features.thinking && settings.thinking;
	} catch (e) {
		setStatus("ready", e.message);
		return;
	}
	$("prompt").value = "";
	addMessage("user", text);
	const li = addMessage("assistant", "");
	li.setAttribute("aria-busy", "true"); // screen readers read it once, when done
	const body = li.querySelector(".body");
	const plain = !app.features.chat;
	app.generating = true;
	app.stopPressed = false;
	app.chunks = 0;
	app.chunksAtStop = null;
	setStatus("generating");
	let latest = "", frame = 0;
	// final: the whole reply in one synchronous render (streaming renders
	// only the open tail, throttled).
	const paint = (final = false) => {
		frame = 0;
		renderReply(body, latest, { plain, final });
		li.scrollIntoView({ block: "end" });
	};
	const conv = app.conv;
	try {
		const r = await conv.send(text, settings, (t) => {
			latest = t;
			app.chunks++;
			if (!frame) frame = requestAnimationFrame(() => paint());
		});
		if (frame) cancelAnimationFrame(frame);
		latest = r.text;
		paint(true);
		const meta = document.createElement("p");
		meta.className = "meta";
		meta.dataset.testid = "usage";
		meta.textContent = (r.finish_reason === "abort" ? "stopped · " : r.finish_reason === "length" ? "length limit · " : "") + formatStats(r.usage, r.timings);
		li.appendChild(meta);
		app.history.push(Object.assign(r, { chunks_at_stop: app.chunksAtStop }));
	} catch (e) {
		const err = document.createElement("p");
		err.className = "error";
		err.textContent = `Error: ${e.message}${e.code ? ` (${e.code})` : ""}`;
		li.appendChild(err);
		app.history.push({ error: { code: e.code || "", message: e.message } });
		if (e.code === "device_lost" && app.engine) {
			// The worker freed the model; engine.reload() opens a new
			// device and keeps this conversation.
			const d = e.details || {};
			err.textContent = `The GPU device was lost (${d.reason || "unknown"}: ${d.message || e.message}). ` +
				"Press Reload model to load the model again on a new device; this chat is kept. (device_lost)";
			err.scrollIntoView({ block: "end" });
			app.lost = true;
			$("load").textContent = "Reload model";
			$("load").hidden = false;
		} else if (e.code === "device_lost" || e.code === "not_loaded") {
			// The worker dropped the model: it must be loaded again.
			app.conv = null;
			$("load").hidden = false;
		}
	} finally {
		li.removeAttribute("aria-busy");
		app.generating = false;
		if (app.lost) setStatus("error", "the GPU device was lost: press Reload model");
		else if (app.conv === conv) setStatus("ready");
		else if (!app.conv && !app.loadAbort) setStatus("error", "the model must be loaded again");
		$("prompt").focus();
	}
}

// reloadEngine loads the model again on a new GPU device after a loss.
async function reloadEngine() {
	const engine = app.engine;
	$("load").hidden = true;
	setStatus("loading", "reloading the model on a new GPU device");
	try {
		const info = await engine.reload({ onProgress: showProgress, onNotice: (msg) => showNotice(msg, "warn") });
		if (app.engine !== engine) return;
		app.lost = false;
		app.info = info;
		$("load").textContent = "Load";
		loaded($("model").value);
	} catch (e) {
		if (app.engine !== engine) return;
		setStatus("error", `reloading: ${e.message}${e.code ? ` (${e.code})` : ""}`);
		$("load").hidden = false;
	}
}

function stop() {
	if (!app.generating || !app.engine) return;
	app.stopPressed = true;
	app.chunksAtStop = app.chunks;
	app.engine.abort();
	setStatus("stopping");
}

function newChat() {
	if (app.generating) stop();
	if (app.conv) app.conv.reset();
	$("messages").replaceChildren();
	$("prompt").focus();
}

// ---- offline ----

async function registerServiceWorker() {
	if (!("serviceWorker" in navigator)) return;
	app.offline = "installing";
	try {
		await navigator.serviceWorker.register("sw.js");
		await navigator.serviceWorker.ready;
		if (!navigator.serviceWorker.controller) {
			await new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", resolve, { once: true }));
		}
		app.offline = "ready";
	} catch (e) {
		app.offline = `failed: ${e.message}`;
	}
}

// ---- start ----

async function start() {
	buildSettings();
	$("composer").addEventListener("submit", (e) => { e.preventDefault(); send(); });
	$("prompt").addEventListener("keydown", (e) => {
		if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
			e.preventDefault();
			send();
		}
	});
	// A keypress that still follows (synthetic input) must not type the newline.
	$("prompt").addEventListener("keypress", (e) => {
		if (e.key === "Enter" && !e.shiftKey) e.preventDefault();
	});
	document.addEventListener("keydown", (e) => {
		if (e.key === "Escape" && app.generating) {
			e.preventDefault();
			stop();
		}
	});
	$("stop").addEventListener("click", stop);
	$("new-chat").addEventListener("click", newChat);
	$("model").addEventListener("change", (e) => load(e.target.value));
	$("load").addEventListener("click", () => app.lost ? reloadEngine() : load($("model").value));
	$("gguf-file").addEventListener("change", (e) => {
		const fs = [...(e.target.files || [])];
		if (fs.length) openGGUF(fs.length > 1 ? fs : fs[0]);
		e.target.value = "";
	});
	document.addEventListener("dragover", (e) => {
		if ([...(e.dataTransfer && e.dataTransfer.items || [])].some((i) => i.kind === "file")) e.preventDefault();
	});
	document.addEventListener("drop", (e) => {
		const fs = [...(e.dataTransfer && e.dataTransfer.files || [])].filter((x) => isGGUFName(x.name));
		if (!fs.length) return;
		e.preventDefault();
		openGGUF(fs.length > 1 ? fs : fs[0]); // several: a split GGUF's parts
	});
	registerServiceWorker();
	setStatus("loading", "model list");
	window.pageReady = true;

	const endpoint = params.get("endpoint");
	// An endpoint on another origin is not asked for its models before the
	// user says so: the picker lists this origin's.
	const endpointHost = endpoint ? otherHost(endpoint) : "";
	const [local, remote] = await Promise.all([fetchListing(), fetchRemote(endpoint && !endpointHost ? endpoint : "v1")]);
	app.models = local.concat(remote);
	let asked = params.get("model");
	if (endpoint && asked) {
		// ?endpoint=URL&model=ID: that endpoint's model, listed or not.
		asked = asked.replace(/ \(remote\)$/, "");
		const hit = !endpointHost && remote.find((m) => m.id === asked);
		if (hit) asked = hit.name;
		else {
			const name = `${asked} (${endpointHost || "remote"})`;
			app.models.push({ name, id: asked, remote: true, endpoint, url: new URL(endpoint, location.href).href });
			asked = name;
		}
	} else if (endpointHost) {
		offerEndpoint(endpoint, endpointHost);
	}
	if (asked && !app.models.some((m) => m.name === asked)) {
		if (isGGUFName(new URL(asked, location.href).pathname)) {
			// ?model=URL of a GGUF: read where it lies.
			const entry = ggufEntry(asked);
			app.models = app.models.filter((m) => m.name !== entry.name).concat(entry);
			asked = entry.name;
		} else {
			// Not listed (or no listing, offline): try the folder of that name.
			app.models.push({ name: asked, url: new URL(`models/${encodeURIComponent(asked)}/`, location.href).href });
		}
	}
	const usable = app.models.filter((m) => !m.error);
	const pick = asked || (usable.find((m) => m.name === "stories260K") || usable[0] || {}).name || "";
	fillPicker(app.models, pick);
	if (!pick) {
		setStatus("no model", "the server lists no models");
		return;
	}
	const entry = app.models.find((m) => m.name === pick);
	let bytes = entry ? entry.bytes : NaN;
	if (entry && !entry.remote && !(bytes > 0)) bytes = await probeBytes(entry);
	const q = entry && linkQuestion(entry, { linked: !!asked, bytes, cached: !entry.remote && await isCached(entry.url) }, bytesText);
	if (!q && !(endpointHost && !asked)) {
		load(pick);
		return;
	}
	// Preselected only: Load (or picking a model) goes on. A link that
	// names only an endpoint on another origin keeps its offer in view.
	$("load").hidden = false;
	if (!q) {
		$("load").textContent = `Load ${pick}`;
		setStatus("no model", `choose a model, or list the models of ${endpointHost}`);
		return;
	}
	if (q.notice) showNotice(q.notice, "warn");
	$("load").textContent = q.button;
	setStatus("no model", q.notice ? `press ${q.button} to go on` : "press Load to download the model");
}

// offerEndpoint: a link's ?endpoint= on another origin without a model;
// its models are listed when the user asks.
function offerEndpoint(endpoint, host) {
	showNotice(`This link names the endpoint ${new URL(endpoint, location.href).href}, on ${host}, another site. `, "warn");
	const list = document.createElement("button");
	list.type = "button";
	list.dataset.testid = "list-endpoint";
	list.textContent = `List the models of ${host}`;
	list.addEventListener("click", async () => {
		const more = (await fetchRemote(endpoint)).map((m) => Object.assign(m, { name: `${m.id} (${host})` }));
		app.models = app.models.filter((m) => !more.some((x) => x.name === m.name)).concat(more);
		fillPicker(app.models, $("model").value);
		showNotice(more.length ? `${more.length} models of ${host} are in the list; chats with them are sent to ${host}.` : `${host} lists no models.`, "warn");
	});
	$("notice").appendChild(list);
}

async function isCached(url) {
	try {
		return typeof caches !== "undefined" && await caches.has(cacheNameFor(url));
	} catch {
		return false;
	}
}

start();
