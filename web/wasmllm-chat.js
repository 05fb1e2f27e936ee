// <wasmllm-chat>: a chat box for any page, in one script tag.
//
//   <script type="module" src="https://example.com/wasmllm/wasmllm-chat.js"></script>
//   <wasmllm-chat model="stories260K"></wasmllm-chat>
//
// model is a folder name under the models/ folder next to this script, or
// a model folder's URL (resolved against the page). The worker, the wasm
// and wasm_exec.js are found next to this script, also from another origin
// (the serving host must allow CORS: the Go server's -cors flag).
//
// With an endpoint attribute (an OpenAI-compatible API's URL, such as
// "/v1" of go run . -api or -upstream), model is a model id of that
// endpoint and the model runs there: <wasmllm-chat endpoint="/v1" model="Qwen/Qwen3-8B">.
//
// Optional attributes: backend ("webgpu" or "cpu"), system, thinking
// ("off" to disable Qwen3's thinking), temperature, top-p, top-k, min-p,
// repetition-penalty, frequency-penalty, presence-penalty, max-tokens, seed.
// The element fires "wasmllm-ready" (detail: the engine's info) and
// "wasmllm-reply" (detail: text, finish_reason, usage, timings), and keeps
// each reply in its history property.

import { createEngine, cacheNameFor } from "./wasmllm.js";
import { Conversation, SAMPLING, renderReply, formatStats, templateFeatures } from "./chat.js";

const BASE = new URL("./", import.meta.url);

// workerURL returns the engine worker's URL. A page may only start a
// worker from its own origin, so from elsewhere a same-origin blob imports
// the real worker, which then loads its files relative to __wasmllmBase.
function workerURL() {
	const url = new URL("worker.js", BASE);
	if (url.origin === globalThis.location.origin) return url;
	const src = `self.__wasmllmBase = ${JSON.stringify(BASE.href)};\nimportScripts(${JSON.stringify(url.href)});\n`;
	return URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
}

/** modelURL resolves the model attribute (a name or a URL). */
export function modelURL(value, base = BASE) {
	const v = String(value || "").trim();
	if (v && !v.includes("/")) return new URL(`models/${encodeURIComponent(v)}/`, base).href;
	return new URL(v.endsWith("/") ? v : v + "/", globalThis.document.baseURI).href;
}

const STYLE = `
:host { display: block; border: 1px solid #ccc; border-radius: 12px; font: 15px/1.45 system-ui, sans-serif;
	color: #1d1d1f; background: #fff; max-width: 100%; overflow: hidden; }
.log { list-style: none; margin: 0; padding: 10px; display: flex; flex-direction: column; gap: 8px;
	max-height: var(--wasmllm-chat-height, 420px); overflow-y: auto; min-height: 80px; }
.msg { padding: 6px 10px; border-radius: 10px; border: 1px solid #e0e0e0; overflow-wrap: anywhere; }
.user { align-self: flex-end; background: #e8f0fe; white-space: pre-wrap; max-width: 85%; }
.plain { white-space: pre-wrap; }
.msg p { margin: 0.3em 0; }
.msg pre { background: #f2f2f2; padding: 6px; border-radius: 6px; overflow-x: auto; }
.meta { font-size: 12px; color: #666; margin: 2px 0 0; }
.thinking { color: #666; font-size: 13px; }
.thinking-text { white-space: pre-wrap; }
form { display: flex; gap: 6px; padding: 8px; border-top: 1px solid #e0e0e0; }
textarea { flex: 1; min-width: 0; font: inherit; resize: vertical; min-height: 40px; border: 1px solid #ccc; border-radius: 8px; padding: 6px; }
button { font: inherit; min-height: 40px; border-radius: 8px; border: 1px solid #ccc; background: #f7f7f7; padding: 0 12px; cursor: pointer; }
button[type=submit] { background: #0b57d0; color: #fff; border-color: #0b57d0; }
button:disabled { opacity: .5; cursor: default; }
:focus-visible { outline: 3px solid #0b57d0; outline-offset: 1px; }
.bar { display: flex; align-items: center; gap: 8px; padding: 4px 10px; font-size: 12px; color: #555; border-bottom: 1px solid #eee; flex-wrap: wrap; }
progress { flex: 1; min-width: 80px; height: 8px; }
.note { padding: 4px 10px; font-size: 12px; color: #6b5200; background: #fff4d6; }
`;

/** The <wasmllm-chat> element. */
export class WasmLLMChat extends HTMLElement {
	static get observedAttributes() { return ["model", "backend", "endpoint"]; }

	constructor() {
		super();
		this.history = [];
		this.engine = null;
		this._conv = null;
		this._gen = 0;
		this._busy = false;
		const root = this.attachShadow({ mode: "open" });
		const h = (tag, props = {}, ...kids) => {
			const e = document.createElement(tag);
			for (const [k, v] of Object.entries(props)) {
				if (k === "testid") e.dataset.testid = v;
				else if (k in e) e[k] = v;
				else e.setAttribute(k, v);
			}
			e.append(...kids);
			return e;
		};
		this._status = h("span", { testid: "status", role: "status" }, "starting");
		this._progress = h("progress", { testid: "progress", max: 1, value: 0, hidden: true });
		this._detail = h("span");
		this._note = h("div", { className: "note", testid: "notice", hidden: true });
		this._log = h("ol", { className: "log", role: "log", "aria-live": "polite", "aria-label": "Conversation" });
		this._prompt = h("textarea", { testid: "prompt", rows: 2, placeholder: "Message (Enter to send, Esc to stop)", "aria-label": "Message" });
		this._send = h("button", { type: "submit", testid: "send", disabled: true }, "Send");
		this._stop = h("button", { type: "button", testid: "stop", disabled: true }, "Stop");
		const form = h("form", {}, this._prompt, this._send, this._stop);
		root.append(h("style", {}, STYLE), h("div", { className: "bar" }, this._status, this._progress, this._detail), this._note, this._log, form);
		form.addEventListener("submit", (e) => { e.preventDefault(); this.send(this._prompt.value); });
		this._prompt.addEventListener("keydown", (e) => {
			if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
				e.preventDefault();
				this.send(this._prompt.value);
			}
		});
		this._prompt.addEventListener("keypress", (e) => {
			if (e.key === "Enter" && !e.shiftKey) e.preventDefault();
		});
		this.addEventListener("keydown", (e) => {
			if (e.key === "Escape" && this._busy) {
				e.preventDefault();
				this.stop();
			}
		});
		this._stop.addEventListener("click", () => this.stop());
	}

	connectedCallback() {
		if (!this.engine && !this._loading) this._load();
	}

	disconnectedCallback() {
		this._gen++;
		if (this.engine) this.engine.unload().catch(() => {});
		this.engine = this._conv = null;
		this._loading = null;
	}

	attributeChangedCallback(name, old, value) {
		if (old !== null && old !== value && this.isConnected) this._load();
	}

	_setStatus(word, detail = "") {
		this._status.textContent = word;
		this._detail.textContent = detail;
		this._send.disabled = word !== "ready";
		this._stop.disabled = !this._busy;
	}

	async _load() {
		const gen = ++this._gen;
		const old = this.engine;
		this.engine = this._conv = null;
		if (old) await old.unload().catch(() => {});
		const endpoint = this.getAttribute("endpoint");
		const url = endpoint ? "" : modelURL(this.getAttribute("model"));
		this._setStatus("loading");
		this._loading = (async () => {
			try {
				const engine = await createEngine(endpoint ? { endpoint, model: this.getAttribute("model") || "" } : {
					model: url,
					backend: this.getAttribute("backend") || "",
					workerURL: workerURL(),
					onProgress: (p) => {
						if (gen !== this._gen) return;
						this._progress.hidden = false;
						this._progress.max = Math.max(1, p.total);
						this._progress.value = p.bytes;
						this._setStatus("downloading", `${Math.round(p.bytes / 1024)} of ${Math.round(p.total / 1024)} KiB`);
					},
				});
				if (gen !== this._gen) {
					engine.unload();
					return;
				}
				const features = await templateFeatures(engine.info, url, cacheNameFor(url));
				this.engine = engine;
				this._conv = new Conversation(engine, features);
				this._progress.hidden = true;
				const notes = [];
				if (engine.info.backend === "cpu") notes.push(engine.info.notice || "Running on the CPU backend.");
				if (!features.chat) notes.push("This model has no chat template: it continues the text you type.");
				this._note.hidden = !notes.length;
				this._note.textContent = notes.join(" ");
				this._setStatus("ready");
				this.dispatchEvent(new CustomEvent("wasmllm-ready", { detail: engine.info }));
			} catch (e) {
				if (gen === this._gen) this._setStatus("error", `${e.message}${e.code ? ` (${e.code})` : ""}`);
			} finally {
				if (gen === this._gen) this._loading = null;
			}
		})();
	}

	_settings() {
		const s = { system: this.getAttribute("system") || "", seed: this.getAttribute("seed") ?? "", thinking: this.getAttribute("thinking") !== "off" };
		for (const f of SAMPLING) {
			const v = this.getAttribute(f.key.replaceAll("_", "-"));
			s[f.key] = v === null ? f.value : v;
		}
		return s;
	}

	/** send sends a message; it resolves to the reply (or null when busy). */
	async send(text) {
		if (!text || !text.trim() || !this._conv || this._busy) return null;
		this._prompt.value = "";
		const user = document.createElement("li");
		user.className = "msg user";
		user.dataset.testid = "user";
		user.textContent = text;
		const li = document.createElement("li");
		li.className = "msg assistant";
		li.dataset.testid = "assistant";
		li.setAttribute("aria-busy", "true");
		const body = document.createElement("div");
		li.appendChild(body);
		this._log.append(user, li);
		this._busy = true;
		this._setStatus("generating");
		const plain = !this._conv.chatMode;
		let latest = "", frame = 0;
		const paint = (final = false) => {
			frame = 0;
			renderReply(body, latest, { plain, final });
			this._log.scrollTop = this._log.scrollHeight;
		};
		try {
			const r = await this._conv.send(text, this._settings(), (t) => {
				latest = t;
				if (!frame) frame = requestAnimationFrame(() => paint());
			});
			if (frame) cancelAnimationFrame(frame);
			latest = r.text;
			paint(true);
			const meta = document.createElement("p");
			meta.className = "meta";
			meta.textContent = (r.finish_reason === "abort" ? "stopped · " : "") + formatStats(r.usage, r.timings);
			li.appendChild(meta);
			this.history.push(r);
			this.dispatchEvent(new CustomEvent("wasmllm-reply", { detail: r }));
			return r;
		} catch (e) {
			const err = document.createElement("p");
			err.className = "meta";
			err.textContent = `Error: ${e.message}`;
			li.appendChild(err);
			this.history.push({ error: { code: e.code || "", message: e.message } });
			return null;
		} finally {
			li.removeAttribute("aria-busy");
			this._busy = false;
			this._setStatus(this.engine ? "ready" : "error");
			this._prompt.focus();
		}
	}

	/** stop ends the reply being generated (within one token). */
	stop() {
		if (this._busy && this.engine) {
			this.engine.abort();
			this._setStatus("stopping");
		}
	}
}

if (!customElements.get("wasmllm-chat")) customElements.define("wasmllm-chat", WasmLLMChat);
