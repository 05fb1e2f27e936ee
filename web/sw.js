// wasmllm service worker: keeps the app shell (the page, its scripts, the
// wasm engine and wasm_exec.js) in Cache Storage so that, after one online
// visit, the chat page starts with the network off.
//
// Shell files and the model listing are fetched network first (so a new
// build shows up at once) and served from the cache when the network
// fails. Model folders are not touched here: the loader (loader.js) keeps
// verified shards, the tokenizer and the manifest in its own per-model
// caches and falls back to them by itself.
"use strict";

const SHELL_CACHE = "wasmllm-shell-v1";
// Paths relative to this script's folder (the scope).
const SHELL = [
	"./", "index.html", "app.js", "chat.js", "markdown.js", "vendor/markdown-it/markdown-it.min.js", "styles.css",
	"wasmllm.js", "remote.js", "stream.js", "shared.js", "shared-worker.js", "worker.js", "rank.js", "loader.js", "wasm_exec.js", "wasmllm.wasm", "wasmllm-chat.js", "links.js",
];
// Cached when present: the Go server's listing, or make dist's index.json.
const OPTIONAL = ["models/", "models/index.json"];

const scope = new URL("./", self.location.href);
const rel = (url) => (url.startsWith(scope.href) ? url.slice(scope.href.length) : null);
const shellSet = new Set(SHELL.map((p) => (p === "./" ? "" : p)));

self.addEventListener("install", (event) => {
	event.waitUntil((async () => {
		const cache = await caches.open(SHELL_CACHE);
		await cache.addAll(SHELL.map((p) => new Request(new URL(p, scope), { cache: "reload" })));
		await Promise.all(OPTIONAL.map(async (p) => {
			try {
				const r = await fetch(new Request(new URL(p, scope), { cache: "reload" }));
				if (r.ok) await cache.put(new URL(p, scope).href, r);
			} catch {
				// absent on this host
			}
		}));
		await self.skipWaiting();
	})());
});

self.addEventListener("activate", (event) => {
	event.waitUntil((async () => {
		for (const name of await caches.keys()) {
			if (name.startsWith("wasmllm-shell-") && name !== SHELL_CACHE) await caches.delete(name);
		}
		await self.clients.claim();
	})());
});

self.addEventListener("fetch", (event) => {
	const req = event.request;
	if (req.method !== "GET" || req.headers.has("Range")) return;
	const path = rel(req.url.split("#")[0].split("?")[0]);
	if (path === null) return;
	const page = req.mode === "navigate" && (path === "" || path === "index.html");
	if (page || shellSet.has(path) || OPTIONAL.includes(path)) {
		event.respondWith(networkFirst(req, page));
	}
});

// networkFirst answers from the network, refreshing the cached copy, and
// from the cache when the network fails.
async function networkFirst(req, page) {
	const cache = await caches.open(SHELL_CACHE);
	try {
		const resp = await fetch(req);
		if (resp.ok && resp.type === "basic") {
			const key = page ? new URL("./", scope).href : req.url.split("?")[0];
			await cache.put(key, resp.clone()).catch(() => {});
		}
		return resp;
	} catch (err) {
		const hit = page ? await cache.match(new URL("./", scope).href) : await cache.match(req, { ignoreSearch: true });
		if (hit) return hit;
		throw err;
	}
}
