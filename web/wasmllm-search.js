// <wasmllm-search>: semantic search over a static site, in the page.
//
//   <script type="module" src="/wasmllm/wasmllm-search.js"></script>
//   <wasmllm-search index="/search-index/" model="/models/bge-small-en-v1.5-q8_0.gguf"></wasmllm-search>
//
// index is the folder cmd/index wrote (manifest.json, passages.json,
// vectors.f16: each file's size and sha256 checked against the manifest),
// model the text-embedding GGUF it was built with. The query is embedded in
// the page (engine.embeddings.create: WebGPU, or the CPU) and every passage
// ranked by cosine, exactly as package search's Rank does natively: each
// product and the sum in float64, in passage order, ties to the first.
// After the first visit it works offline: the index files are kept in
// Cache Storage ("wasmllm-search") and the model in the worker's
// ("wasmllm-embed").
//
// Optional attributes: backend ("webgpu" or "cpu"), results (how many, 5),
// base (what the pages' paths are relative to; default: the index
// folder's parent), placeholder. The element fires "wasmllm-search-ready"
// and "wasmllm-search-results" (detail: {query, hits: [{index, score,
// page, heading, anchor, snippet}]}), and search(text) runs a query from
// script.

import { createEngine } from "./wasmllm.js";

const INDEX_CACHE = "wasmllm-search";

// half is the f32 value of the f16 bits h.
function half(h) {
	const s = h & 0x8000 ? -1 : 1;
	const e = (h >> 10) & 0x1f;
	const m = h & 0x3ff;
	if (e === 0) return s * m * 2 ** -24;
	if (e === 31) return m ? NaN : s * Infinity;
	return s * (1 + m / 1024) * 2 ** (e - 15);
}

async function sha256Hex(buf) {
	const d = new Uint8Array(await crypto.subtle.digest("SHA-256", buf));
	return Array.from(d, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** loadIndex fetches and verifies an index folder: {manifest, entries, vectors}. */
export async function loadIndex(indexURL) {
	const base = new URL(indexURL, globalThis.location.href);
	if (!base.pathname.endsWith("/")) base.pathname += "/";
	// Network first, Cache Storage when the network fails: the index
	// works offline after the first visit (the manifest's sha256 keeps a
	// mix of old and new files from passing).
	const get = async (name) => {
		const url = new URL(name, base).href;
		const store = globalThis.caches ? await caches.open(INDEX_CACHE).catch(() => null) : null;
		try {
			const r = await fetch(url, { cache: "no-cache" });
			if (!r.ok) throw new Error(`${name}: HTTP ${r.status}`);
			const buf = await r.clone().arrayBuffer();
			if (store) await store.put(url, r).catch(() => {});
			return buf;
		} catch (e) {
			const hit = store && await store.match(url);
			if (hit) return hit.arrayBuffer();
			throw e;
		}
	};
	const manifest = JSON.parse(new TextDecoder().decode(await get("manifest.json")));
	if (manifest.format !== "wasmllm-search/1" || manifest.vectors !== "f16") throw new Error(`unknown index format ${manifest.format} / ${manifest.vectors}`);
	const file = async (name) => {
		const info = manifest.files && manifest.files[name];
		if (!info) throw new Error(`the manifest lists no ${name}`);
		const buf = await get(name);
		if (buf.byteLength !== info.bytes || await sha256Hex(buf) !== info.sha256) throw new Error(`${name} does not match its manifest (size or sha256)`);
		return buf;
	};
	const entries = JSON.parse(new TextDecoder().decode(await file("passages.json"))).passages;
	const raw = new Uint16Array(await file("vectors.f16"));
	if (entries.length !== manifest.count || raw.length !== manifest.count * manifest.dimensions) throw new Error("the index's files do not agree with its manifest");
	const vectors = new Float32Array(raw.length);
	for (let i = 0; i < raw.length; i++) vectors[i] = half(raw[i]);
	return { manifest, entries, vectors, base };
}

/** rank scores every vector against query (normalised) and returns the best k, highest first. */
export function rank(index, query, k) {
	const D = index.manifest.dimensions;
	const q = Float32Array.from(query);
	const hits = [];
	for (let i = 0; i < index.manifest.count; i++) {
		let s = 0;
		for (let d = 0; d < D; d++) s += q[d] * index.vectors[i * D + d];
		hits.push({ index: i, score: s });
	}
	hits.sort((a, b) => b.score - a.score || a.index - b.index);
	return hits.slice(0, k);
}

class WasmLLMSearch extends HTMLElement {
	connectedCallback() {
		if (this._started) return;
		this._started = true;
		this.innerHTML = "";
		this._input = document.createElement("input");
		this._input.type = "search";
		this._input.placeholder = this.getAttribute("placeholder") || "Search";
		this._input.disabled = true;
		this._list = document.createElement("ol");
		this._status = document.createElement("p");
		this._status.textContent = "Loading the search model…";
		this.append(this._input, this._status, this._list);
		let timer = 0;
		this._input.addEventListener("input", () => {
			clearTimeout(timer);
			timer = setTimeout(() => this.search(this._input.value).catch((e) => { this._status.textContent = String(e.message || e); }), 200);
		});
		this.ready = this._load();
		this.ready.catch((e) => { this._status.textContent = `Search is unavailable: ${e.message || e}`; });
	}

	async _load() {
		const index = await loadIndex(this.getAttribute("index") || "search-index/");
		const model = new URL(this.getAttribute("model") || "", globalThis.location.href).href;
		this.engine = await createEngine({ model, embedding: true, backend: this.getAttribute("backend") || "" });
		this.index = index;
		this._input.disabled = false;
		this._status.textContent = "";
		this.dispatchEvent(new CustomEvent("wasmllm-search-ready", { detail: this.engine.info }));
	}

	/** search embeds text, ranks the passages and shows the best; it resolves to the results. */
	async search(text) {
		await this.ready;
		const q = String(text || "").trim();
		if (!q) {
			this._list.replaceChildren();
			return null;
		}
		const prefix = this.index.manifest.query_prefix || "";
		const r = await this.engine.embeddings.create({ input: prefix + q, truncate_prompt_tokens: -1 });
		const query = Float32Array.from(r.data[0].embedding);
		const k = Number(this.getAttribute("results")) || 5;
		const base = new URL(this.getAttribute("base") || "../", this.index.base);
		const hits = rank(this.index, query, k).map((h) => Object.assign(h, this.index.entries[h.index]));
		this._list.replaceChildren(...hits.map((h) => {
			const li = document.createElement("li");
			const a = document.createElement("a");
			const url = new URL(h.page, base);
			if (h.anchor) url.hash = h.anchor;
			a.href = url.href;
			a.textContent = h.heading ? `${h.heading} (${h.page})` : h.page;
			const p = document.createElement("p");
			p.textContent = h.snippet;
			li.append(a, p);
			return li;
		}));
		const results = { query: Array.from(query), hits };
		this.lastResults = results;
		this.dispatchEvent(new CustomEvent("wasmllm-search-results", { detail: results }));
		return results;
	}
}

if (!customElements.get("wasmllm-search")) customElements.define("wasmllm-search", WasmLLMSearch);
