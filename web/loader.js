// wasmllm model loader: fetches a converted model folder (manifest.json and
// content-hashed shards) the way the real web needs.
//
// - shards are fetched in parallel (bounded, default 4), each body streamed
//   into one buffer of the size the manifest declares;
// - each shard's sha256 is checked with crypto.subtle; a mismatch is
//   retried once from zero, then fails with code "integrity" naming the
//   shard; a shard that does not verify is never cached;
// - tokenizer files are checked against the manifest's sha256 the same
//   way before they are cached or used;
// - verified shards go into Cache Storage (one cache per model folder,
//   named CACHE_PREFIX + the folder's absolute URL), so a second load makes
//   no network request for shards and works with the server gone;
// - a dropped connection resumes with a Range request from the byte
//   received last, up to maxRetries times with exponential backoff;
// - an AbortSignal stops everything; partial shards are dropped (complete,
//   verified shards stay cached for the next load; deleteModel removes
//   them);
// - progress {bytes, total, shards_done, shards_total, rate} is reported at
//   most 10 times a second, bytes never decrease, and the last event has
//   bytes === total.
//
// A GGUF (a URL or a File) is read where it lies, with Range requests or
// Blob slices (ggufOpen, ggufRead), and converted by the worker into a
// model folder kept in Cache Storage (ggufFolder, localFolder), which then
// loads as any other folder does, from there alone (opts.local).
//
// It is a classic script: the worker loads it with importScripts, and it
// defines self.WasmLLMLoader. Failures reject with a LoaderError whose
// code is one of "network", "integrity", "quota_exceeded", "aborted",
// "bad_model".
"use strict";

(function (global) {
	const CACHE_PREFIX = "wasmllm-model:";
	const DEFAULTS = { concurrency: 4, maxRetries: 5, backoffMs: 250, maxBackoffMs: 4000, progressIntervalMs: 100 };

	class LoaderError extends Error {
		constructor(code, message, details) {
			super(message);
			this.name = "LoaderError";
			this.code = code;
			if (details) this.details = details;
		}
	}

	const aborted = () => new LoaderError("aborted", "loading was aborted");

	// cacheName is the Cache Storage name of a model folder.
	const cacheName = (modelURL) => CACHE_PREFIX + new URL(modelURL, global.location.href).href;

	const haveCaches = () => typeof global.caches !== "undefined";

	async function openCache(modelURL, opts) {
		if ((opts && opts.cache === false) || !haveCaches()) return null;
		try {
			return await global.caches.open(cacheName(modelURL));
		} catch (e) {
			return null; // no Cache Storage here (an opaque origin, a private window)
		}
	}

	const fileURL = (modelURL, name) => new URL(name, modelURL).href;

	const sleep = (ms, signal) => new Promise((resolve, reject) => {
		if (signal && signal.aborted) return reject(aborted());
		const t = setTimeout(() => { if (signal) signal.removeEventListener("abort", onAbort); resolve(); }, ms);
		const onAbort = () => { clearTimeout(t); reject(aborted()); };
		if (signal) signal.addEventListener("abort", onAbort, { once: true });
	});

	const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");

	async function sha256(bytes) {
		return hex(await global.crypto.subtle.digest("SHA-256", bytes));
	}

	const bytesText = (n) => {
		const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
		let i = 0, v = n;
		while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
		return i === 0 ? `${n} bytes` : `${v.toFixed(1)} ${units[i]}`;
	};

	// fetchSmall fetches a small file of the folder, network first; on a
	// network failure or a server error it falls back to the cached copy.
	// With sha (the manifest's sha256 of the file) the bytes are checked
	// before they are cached or used: a mismatch fails with code
	// "integrity", and a bad cached copy is dropped. store caches a good
	// network copy.
	async function fetchSmall(modelURL, name, opts, store, sha) {
		const url = fileURL(modelURL, name);
		const signal = opts && opts.signal;
		if (opts && opts.local) {
			// A converted GGUF's folder: it lies in opts.local alone.
			const bytes = await opts.local.get(name);
			if (!bytes) throw new LoaderError("network", `${name} of the converted GGUF is not in the cache (it was cleared while it loaded?)`, { file: name, url });
			if (sha) {
				const got = await sha256(bytes);
				if (got !== sha) throw new LoaderError("integrity", `${name} (converted GGUF) failed its integrity check: sha256 ${got}, the manifest says ${sha}`, { file: name, url, sha256: got, expected: sha });
			}
			return { bytes, fromCache: true };
		}
		const check = async (buf, where) => {
			if (!sha) return;
			const got = await sha256(new Uint8Array(buf));
			if (got !== sha) {
				throw new LoaderError("integrity", `${name} (${where}) failed its integrity check: sha256 ${got}, the manifest says ${sha}`,
					{ file: name, url, sha256: got, expected: sha });
			}
		};
		let resp = null, failure = null;
		try {
			resp = await fetch(url, { signal, cache: "no-cache" });
		} catch (e) {
			if (signal && signal.aborted) throw aborted();
			failure = e;
		}
		if (resp && resp.ok) {
			const buf = await resp.arrayBuffer();
			await check(buf, "from the network");
			if (store) {
				const cache = await openCache(modelURL, opts);
				if (cache) await cache.put(url, new Response(buf.slice(0), { headers: { "Content-Type": resp.headers.get("Content-Type") || "application/octet-stream" } })).catch(() => {});
			}
			return { bytes: new Uint8Array(buf), fromCache: false };
		}
		if (!resp || resp.status >= 500) {
			const cache = await openCache(modelURL, opts);
			const hit = cache && await cache.match(url);
			if (hit) {
				const buf = await hit.arrayBuffer();
				try {
					await check(buf, "from the cache");
				} catch (e) {
					await cache.delete(url).catch(() => {});
					throw e;
				}
				return { bytes: new Uint8Array(buf), fromCache: true };
			}
		}
		const why = resp ? `HTTP ${resp.status}` : String(failure && failure.message || failure);
		throw new LoaderError("network", `fetching ${url}: ${why}`, { url, status: resp ? resp.status : 0 });
	}

	// manifest returns {text, fromCache}. The cached copy is written by
	// commit, once a load has succeeded, so it always matches cached shards.
	async function manifest(modelURL, opts) {
		const r = await fetchSmall(modelURL, "manifest.json", opts, false);
		return { text: new TextDecoder().decode(r.bytes), fromCache: r.fromCache };
	}

	// file returns the bytes of a small file of the folder (a tokenizer),
	// checked against sha, the manifest's sha256 of it.
	async function file(modelURL, name, opts, sha) {
		if (!/^[0-9a-f]{64}$/.test(sha || "")) throw new LoaderError("integrity", `${name}: the manifest gives no sha256 for it`, { file: name });
		return (await fetchSmall(modelURL, name, opts, true, sha)).bytes;
	}

	// commit caches the manifest after a successful load.
	async function commit(modelURL, text, opts) {
		if (opts && opts.local) return; // written when it was converted
		const cache = await openCache(modelURL, opts);
		if (!cache) return;
		await cache.put(fileURL(modelURL, "manifest.json"), new Response(text, { headers: { "Content-Type": "application/json" } })).catch(() => {});
	}

	// cachedURLs returns the set of URLs cached for the model.
	async function cachedURLs(modelURL, opts) {
		const cache = await openCache(modelURL, opts);
		if (!cache) return new Set();
		return new Set((await cache.keys()).map((r) => r.url));
	}

	// PERSIST_BYTES: a download of at least this much asks for persistent
	// storage first (Firefox's best-effort quota is about 10 GiB, and the
	// browser may evict best-effort data).
	const PERSIST_BYTES = 1 << 30;

	// quota checks that the shards not cached yet fit the storage quota.
	// shards is the manifest's shard list (an array or its JSON). Before a
	// large download it asks for persistent storage through
	// opts.requestPersist (need) => Promise<{granted, asked}> (the page's
	// navigator.storage.persist(), which workers lack; opts.persist false
	// skips it), then reads the estimate, which persistence may raise. It
	// returns {need, available, persist}.
	async function quota(modelURL, shards, opts) {
		if (typeof shards === "string") shards = JSON.parse(shards);
		if (opts && opts.local) return { need: 0, available: null, persist: null }; // a converted GGUF's folder
		const have = await cachedURLs(modelURL, opts);
		let need = 0;
		for (const s of shards) if (!have.has(fileURL(modelURL, s.file))) need += s.bytes;
		const storage = global.navigator && global.navigator.storage;
		if (!need || (opts && opts.cache === false) || !haveCaches() || !storage || !storage.estimate) return { need, available: null, persist: null };
		let persist = null;
		if (need >= (opts && opts.persistBytes != null ? opts.persistBytes : PERSIST_BYTES) && opts && opts.requestPersist && opts.persist !== false) {
			try {
				persist = await opts.requestPersist(need);
			} catch (e) {
				persist = { granted: false, asked: true, error: String(e && e.message || e) };
			}
		}
		// opts.estimate ({quota, usage}) stands in for the browser's figures in tests.
		const est = opts && opts.estimate ? opts.estimate : await storage.estimate();
		const available = Math.max(0, (est.quota || 0) - (est.usage || 0));
		if (need > available) {
			throw new LoaderError("quota_exceeded",
				`the model needs ${bytesText(need)} of storage, but only ${bytesText(available)} of the origin's quota is free: ${bytesText(need - available)} short`,
				{ need, available, short: need - available, quota: est.quota, usage: est.usage, persist });
		}
		return { need, available, persist };
	}

	// fetchShard downloads one shard into a buffer of s.bytes, resuming
	// dropped connections with Range requests, and verifies its sha256
	// (retrying once from zero on a mismatch).
	async function fetchShard(url, s, o, credit) {
		const signal = o.signal;
		const buf = new Uint8Array(s.bytes);
		for (let attempt = 0; ; attempt++) {
			let received = 0, failures = 0, overlong = false;
			while ((received < s.bytes || s.bytes === 0) && !overlong) {
				try {
					const headers = received > 0 ? { Range: `bytes=${received}-` } : {};
					const resp = await fetch(url, { signal, headers, cache: "no-store" });
					if (resp.status === 206 && received > 0) {
						const m = /^bytes (\d+)-/.exec(resp.headers.get("Content-Range") || "");
						if (!m || Number(m[1]) !== received) throw new Error(`${s.file}: Range response starts at ${m ? m[1] : "?"}, asked for ${received}`);
					} else if (resp.status === 200) {
						received = 0; // the server sent the whole file
					} else {
						const e = new LoaderError("network", `fetching shard ${s.file}: HTTP ${resp.status}`, { shard: s.file, url, status: resp.status });
						// Retry what may pass: server errors, timeouts, throttling.
						if (resp.status < 500 && resp.status !== 408 && resp.status !== 429) throw e;
						throw Object.assign(e, { retry: true });
					}
					const reader = resp.body.getReader();
					for (;;) {
						const { done, value } = await reader.read();
						if (done) break;
						if (received + value.length > s.bytes) {
							reader.cancel().catch(() => {});
							overlong = true; // a mismatch like a bad hash: retried once
							break;
						}
						buf.set(value, received);
						received += value.length;
						credit(received);
					}
					if (overlong) break;
					if (received < s.bytes) throw new Error(`${s.file}: the body ended after ${received} of ${s.bytes} bytes`);
					if (s.bytes === 0) break;
				} catch (e) {
					if (signal && signal.aborted) throw aborted();
					if (e instanceof LoaderError && !e.retry) throw e;
					failures++;
					if (failures > o.maxRetries) {
						throw new LoaderError("network", `fetching shard ${s.file} failed after ${o.maxRetries} retries: ${e.message}`, { shard: s.file, url, received });
					}
					await sleep(Math.min(o.backoffMs * 2 ** (failures - 1), o.maxBackoffMs), signal);
				}
			}
			const got = overlong ? null : await sha256(buf);
			if (got === s.sha256) return buf;
			if (attempt >= 1) {
				const why = overlong ? `longer than the manifest's ${s.bytes} bytes` : `sha256 ${got}, the manifest says ${s.sha256}`;
				throw new LoaderError("integrity", `shard ${s.file} failed its integrity check twice: ${why}`,
					{ shard: s.file, url, sha256: got, expected: s.sha256 });
			}
		}
	}

	// cachedShard returns a cached shard's bytes if present and intact; a
	// damaged entry is deleted.
	async function cachedShard(cache, url, s) {
		if (!cache) return null;
		const hit = await cache.match(url);
		if (!hit) return null;
		const buf = new Uint8Array(await hit.arrayBuffer());
		if (buf.length === s.bytes && await sha256(buf) === s.sha256) return buf;
		await cache.delete(url);
		return null;
	}

	// download fetches every shard (from the cache when present) and passes
	// each verified shard to onShard(index, Uint8Array), which returns null
	// or an error {code, message, details}. It resolves to
	// {networkBytes, cachedBytes}.
	async function download(modelURL, shards, onShard, opts) {
		if (typeof shards === "string") shards = JSON.parse(shards);
		const o = Object.assign({}, DEFAULTS, opts || {});
		for (const k of Object.keys(DEFAULTS)) if (!(o[k] > 0)) o[k] = DEFAULTS[k];
		const outer = o.signal;
		if (outer && outer.aborted) throw aborted();
		// One failure stops the other downloads.
		const inner = new AbortController();
		const onOuter = () => inner.abort();
		if (outer) outer.addEventListener("abort", onOuter, { once: true });
		o.signal = inner.signal;

		const total = shards.reduce((n, s) => n + s.bytes, 0);
		const credited = new Float64Array(shards.length);
		let bytes = 0, done = 0, networkBytes = 0, cachedBytes = 0, lastEmit = 0, emitted = -1;
		const samples = []; // [time, bytes] for the rate over the last seconds
		const progress = (final) => {
			if (!o.onProgress) return;
			const now = performance.now();
			if (!final && now - lastEmit < o.progressIntervalMs) return;
			if (!final && bytes === emitted) return;
			samples.push([now, bytes]);
			while (samples.length > 2 && now - samples[0][0] > 3000) samples.shift();
			const [t0, b0] = samples[0];
			const rate = now > t0 ? (bytes - b0) / ((now - t0) / 1000) : 0;
			lastEmit = now;
			emitted = bytes;
			o.onProgress({ bytes, total, shards_done: done, shards_total: shards.length, rate });
		};
		const credit = (i, n) => {
			if (n > credited[i]) {
				bytes += n - credited[i];
				credited[i] = n;
				progress(false);
			}
		};

		const cache = await openCache(modelURL, o);
		let next = 0, failure = null;
		const worker = async () => {
			while (next < shards.length && !failure) {
				const i = next++;
				const s = shards[i];
				const url = fileURL(modelURL, s.file);
				let buf = o.local ? await localShard(o.local, s) : await cachedShard(cache, url, s);
				if (buf) {
					cachedBytes += s.bytes;
				} else if (o.local) {
					throw new LoaderError("integrity", `shard ${s.file} of the converted GGUF is missing from the cache or damaged`, { shard: s.file, url });
				} else {
					buf = await fetchShard(url, s, o, (n) => credit(i, n));
					networkBytes += s.bytes;
					if (cache) {
						try {
							await cache.put(url, new Response(buf, { headers: { "Content-Type": "application/octet-stream", "Content-Length": String(s.bytes) } }));
						} catch (e) {
							if (o.onNotice) o.onNotice(`shard ${s.file} could not be cached: ${e && e.message}`);
						}
					}
				}
				if (o.signal.aborted) throw aborted();
				const err = onShard(i, buf);
				if (err) throw new LoaderError(err.code || "bad_model", err.message || String(err), err.details);
				credit(i, s.bytes);
				done++;
				progress(false);
			}
		};
		const n = Math.min(o.concurrency, shards.length);
		const runs = [];
		for (let k = 0; k < n; k++) {
			runs.push(worker().catch((e) => {
				if (!failure) failure = e;
				inner.abort();
			}));
		}
		await Promise.all(runs);
		if (outer) outer.removeEventListener("abort", onOuter);
		if (outer && outer.aborted) throw aborted();
		if (failure) throw failure.code ? failure : new LoaderError("network", String(failure && failure.message || failure));
		// Keep the final event within the rate limit too.
		const wait = o.progressIntervalMs - (performance.now() - lastEmit);
		if (o.onProgress && wait > 0) await sleep(wait);
		progress(true);
		return { networkBytes, cachedBytes };
	}

	// localShard returns a converted GGUF's shard from its folder if it is
	// there and intact.
	async function localShard(local, s) {
		const buf = await local.get(s.file);
		if (buf && buf.length === s.bytes && await sha256(buf) === s.sha256) return buf;
		return null;
	}

	// A GGUF read where it lies: on a web server that answers Range
	// requests (the Hugging Face hub, any CORS-enabled host; redirects are
	// followed), or in a Blob (a File from a picker or a drop). The worker
	// converts it tensor by tensor into a model folder in Cache Storage
	// (ggufFolder), and loads that; the next load finds it there.

	// isGGUF reports a model given as a GGUF: a Blob, the Blobs of a split
	// GGUF's parts, or a URL whose path ends in .gguf.
	const isBlob = (m) => typeof Blob !== "undefined" && m instanceof Blob;
	// isBlobs reports the parts of a split GGUF given as Files.
	const isBlobs = (m) => Array.isArray(m) && m.length > 0 && m.every(isBlob);
	const isGGUF = (model) => isBlob(model) || isBlobs(model) ||
		(typeof model === "string" && /\.gguf$/i.test(new URL(model, global.location.href).pathname));

	// ggufFolder is where the conversion of a GGUF is kept: a same-origin
	// URL derived from the GGUF's URL, or from a File's name, size and
	// modification time.
	function ggufFolder(model) {
		const base = new URL("/", global.location.href).href;
		if (isBlob(model) || isBlobs(model)) {
			// A split's parts: the first by name, and the size of them all.
			const parts = isBlob(model) ? [model] : [...model].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
			const size = parts.reduce((n, p) => n + p.size, 0);
			return `${base}__wasmllm/file/${encodeURIComponent(`${parts[0].name || "model.gguf"}-${size}-${parts[0].lastModified || 0}`)}/`;
		}
		// Every part of a split GGUF stands for the first.
		const u = new URL(model, global.location.href);
		u.pathname = u.pathname.replace(/-\d{5}-of-(\d{5})\.gguf$/i, "-00001-of-$1.gguf");
		return `${base}__wasmllm/gguf/${encodeURIComponent(u.href)}/`;
	}

	// ggufOpen resolves to the GGUF's source: {name, size, etag, modified,
	// url} for a URL (one Range request for the first byte gives its size,
	// ETag and Last-Modified), {name, size, lastModified, blob} for a Blob.
	async function ggufOpen(model, opts) {
		if (typeof Blob !== "undefined" && model instanceof Blob) {
			return { name: model.name || "model.gguf", size: model.size, etag: "", lastModified: model.lastModified || 0, blob: model };
		}
		const url = new URL(model, global.location.href).href;
		const signal = opts && opts.signal;
		let resp;
		try {
			resp = await fetch(url, { signal, headers: { Range: "bytes=0-0" }, cache: "no-store" });
		} catch (e) {
			if (signal && signal.aborted) throw aborted();
			throw new LoaderError("network", `fetching ${url}: ${e && e.message || e}`, { url, status: 0 });
		}
		if (resp.body) resp.body.cancel().catch(() => {});
		if (resp.status === 200) {
			throw new LoaderError("bad_model", `${url}: the server does not answer Range requests, which reading a GGUF where it lies needs`, { url, status: 200 });
		}
		if (resp.status !== 206) throw new LoaderError("network", `fetching ${url}: HTTP ${resp.status}`, { url, status: resp.status });
		const m = /\/(\d+)\s*$/.exec(resp.headers.get("Content-Range") || "");
		if (!m) throw new LoaderError("bad_model", `${url}: the Range response gives no file size (Content-Range, which a cross-origin server must expose)`, { url });
		const name = decodeURIComponent(new URL(url).pathname.split("/").pop() || "model.gguf");
		return { name, size: Number(m[1]), etag: resp.headers.get("ETag") || "", modified: resp.headers.get("Last-Modified") || "", url };
	}

	// ggufChanged says how a Range answer shows that the GGUF is no longer
	// the one ggufOpen saw ("" if it does not): another ETag, an ETag gone
	// or new, another size, or with no ETag another Last-Modified. Bytes
	// that change under the same validators are the worker's to find (it
	// reads samples again before it keeps a conversion).
	function ggufChanged(src, resp) {
		const etag = resp.headers.get("ETag") || "";
		const modified = resp.headers.get("Last-Modified") || "";
		const m = /\/(\d+)\s*$/.exec(resp.headers.get("Content-Range") || "");
		if (etag !== (src.etag || "")) {
			if (!etag) return `its ETag ${src.etag} is gone`;
			return src.etag ? `ETag ${etag}, was ${src.etag}` : `it has an ETag (${etag}), it had none`;
		}
		if (!etag && src.modified && modified !== src.modified) return `Last-Modified ${modified || "gone"}, was ${src.modified}`;
		if (!m || Number(m[1]) !== src.size) return `size ${m ? m[1] : "not given"}, was ${src.size}`;
		return "";
	}

	// ggufRead resolves to len bytes of the GGUF from off, resuming a
	// dropped connection where it stopped (opts.maxRetries times). Every
	// answer must be of the file ggufOpen saw (ggufChanged): one whose
	// ETag changes, disappears or appears, or whose Last-Modified or size
	// changes, fails with code "integrity".
	async function ggufRead(src, off, len, opts) {
		if (src.blob) {
			try {
				return new Uint8Array(await src.blob.slice(off, off + len).arrayBuffer());
			} catch (e) {
				throw new LoaderError("network", `reading ${src.name}: ${e && e.message || e}`, { file: src.name, offset: off });
			}
		}
		const o = Object.assign({}, DEFAULTS, opts || {});
		for (const k of Object.keys(DEFAULTS)) if (!(o[k] > 0)) o[k] = DEFAULTS[k];
		const signal = o.signal;
		const buf = new Uint8Array(len);
		let got = 0, failures = 0;
		while (got < len) {
			try {
				const at = off + got;
				const resp = await fetch(src.url, { signal, cache: "no-store", headers: { Range: `bytes=${at}-${off + len - 1}` } });
				if (resp.status !== 206) {
					if (resp.body) resp.body.cancel().catch(() => {});
					const e = new LoaderError("network", `reading ${src.name} at ${at}: HTTP ${resp.status}`, { url: src.url, offset: at, status: resp.status });
					if (resp.status >= 500 || resp.status === 408 || resp.status === 429) e.retry = true;
					throw e;
				}
				const changed = ggufChanged(src, resp);
				if (changed) {
					if (resp.body) resp.body.cancel().catch(() => {});
					throw new LoaderError("integrity", `${src.name} changed on the server while it was read (${changed})`,
						{ url: src.url, offset: at, etag: resp.headers.get("ETag") || "", expected: src.etag || "" });
				}
				const m = /^bytes (\d+)-/.exec(resp.headers.get("Content-Range") || "");
				if (!m || Number(m[1]) !== at) {
					if (resp.body) resp.body.cancel().catch(() => {});
					throw new LoaderError("network", `reading ${src.name}: the Range response starts at ${m ? m[1] : "?"}, asked for ${at}`, { url: src.url, offset: at });
				}
				const reader = resp.body.getReader();
				for (;;) {
					const { done, value } = await reader.read();
					if (done) break;
					const n = Math.min(value.length, len - got);
					buf.set(value.subarray(0, n), got);
					got += n;
					if (got >= len) {
						reader.cancel().catch(() => {});
						break;
					}
				}
				if (got < len) throw new Error(`the body ended after ${got} of ${len} bytes`);
			} catch (e) {
				if (signal && signal.aborted) throw aborted();
				if (e instanceof LoaderError && !e.retry) throw e;
				failures++;
				if (failures > o.maxRetries) {
					throw new LoaderError("network", `reading ${src.name} failed after ${o.maxRetries} retries: ${e.message}`, { url: src.url, offset: off + got });
				}
				await sleep(Math.min(o.backoffMs * 2 ** (failures - 1), o.maxBackoffMs), signal);
			}
		}
		return buf;
	}

	// localFolder is a converted GGUF's folder: in Cache Storage, or with
	// opts.cache false (or no Cache Storage) in memory for this load.
	// {put(name, bytes), get(name) -> bytes or null}.
	async function localFolder(modelURL, opts) {
		const cache = await openCache(modelURL, opts);
		if (!cache) {
			const files = new Map();
			return { cached: false, put: async (name, bytes) => { files.set(name, bytes); }, get: async (name) => files.get(name) || null };
		}
		return {
			cached: true,
			put: (name, bytes) => cache.put(fileURL(modelURL, name), new Response(bytes, { headers: { "Content-Type": "application/octet-stream", "Content-Length": String(bytes.length) } })),
			get: async (name) => {
				const hit = await cache.match(fileURL(modelURL, name));
				return hit ? new Uint8Array(await hit.arrayBuffer()) : null;
			},
		};
	}

	// deleteModel removes everything cached for a model folder. It
	// resolves to true when there was something to delete.
	async function deleteModel(modelURL) {
		if (!haveCaches()) return false;
		return global.caches.delete(cacheName(modelURL));
	}

	global.WasmLLMLoader = { LoaderError, CACHE_PREFIX, cacheName, manifest, file, commit, quota, download, deleteModel, cachedURLs,
		isGGUF, ggufFolder, ggufOpen, ggufRead, localFolder };
})(self);
