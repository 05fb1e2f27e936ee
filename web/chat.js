// Conversation logic shared by the chat page (app.js) and the
// <wasmllm-chat> element: building requests from the settings, streaming a
// reply, chat versus plain-continuation mode, thinking text, and the DOM of
// one assistant message (always built from text nodes, see markdown.js).

import { renderMarkdownInto } from "./markdown.js";

/** The sampling settings the page offers, with their request names. */
export const SAMPLING = [
	{ key: "temperature", label: "Temperature", min: 0, max: 2, step: 0.05, value: 0.7 },
	{ key: "top_p", label: "Top-p", min: 0, max: 1, step: 0.01, value: 0.95 },
	{ key: "top_k", label: "Top-k", min: 0, max: 1000, step: 1, value: 40, int: true },
	{ key: "min_p", label: "Min-p", min: 0, max: 1, step: 0.01, value: 0.05 },
	{ key: "repetition_penalty", label: "Repetition penalty", min: 0.01, max: 2, step: 0.01, value: 1 },
	{ key: "frequency_penalty", label: "Frequency penalty", min: -2, max: 2, step: 0.05, value: 0 },
	{ key: "presence_penalty", label: "Presence penalty", min: -2, max: 2, step: 0.05, value: 0 },
	{ key: "max_tokens", label: "Max tokens", min: 0, max: 32768, step: 1, value: 256, int: true },
];

/**
 * samplingParams turns settings ({temperature: "0.7", seed: "", ...}, as
 * strings or numbers) into request fields. An empty seed means a random one.
 * It throws a RangeError naming the first bad field.
 */
export function samplingParams(settings) {
	const out = {};
	for (const f of SAMPLING) {
		const raw = settings[f.key];
		if (raw === undefined || raw === null || raw === "") continue;
		const v = Number(raw);
		if (!Number.isFinite(v) || (f.int && !Number.isInteger(v))) throw new RangeError(`${f.label}: "${raw}" is not ${f.int ? "a whole number" : "a number"}`);
		out[f.key] = v;
	}
	const seed = settings.seed;
	if (seed !== undefined && seed !== null && String(seed).trim() !== "") {
		const v = Number(seed);
		if (!Number.isSafeInteger(v)) throw new RangeError(`Seed: "${seed}" is not a whole number`);
		out.seed = v;
	}
	return out;
}

/**
 * templateFeatures reports what a model's chat template offers. The engine
 * reports whether there is a template (info.model.has_chat_template); the
 * thinking switch (Qwen3's enable_thinking) is found in the template source
 * itself, read from the tokenizer files the loader has cached (or fetched
 * when caching is off), as llama.cpp does.
 */
export async function templateFeatures(info, modelURL, cacheName) {
	const out = { chat: !!(info && info.model && info.model.has_chat_template), thinking: false };
	if (!out.chat) return out;
	if (info.model.thinking !== undefined) return Object.assign(out, { thinking: !!info.model.thinking });
	try {
		const mf = await fetchMaybeCached(new URL("manifest.json", modelURL).href, cacheName);
		const spec = JSON.parse(new TextDecoder().decode(mf)).tokenizer || {};
		const files = spec.files || (spec.file ? [spec.file] : []);
		const needle = new TextEncoder().encode("enable_thinking");
		for (const f of files) {
			if (f === "tokenizer.json") continue; // never holds the template
			const bytes = await fetchMaybeCached(new URL(f, modelURL).href, cacheName);
			if (bytes && indexOf(bytes, needle) >= 0) {
				out.thinking = true;
				break;
			}
		}
	} catch {
		// Without the files the switch is simply not offered.
	}
	return out;
}

async function fetchMaybeCached(url, cacheName) {
	if (cacheName && typeof caches !== "undefined") {
		try {
			const c = await caches.open(cacheName);
			const hit = await c.match(url);
			if (hit) return new Uint8Array(await hit.arrayBuffer());
		} catch {
			// fall through to the network
		}
	}
	const r = await fetch(url);
	if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
	return new Uint8Array(await r.arrayBuffer());
}

function indexOf(hay, needle) {
	const first = needle[0];
	for (let i = hay.indexOf(first); i >= 0 && i <= hay.length - needle.length; i = hay.indexOf(first, i + 1)) {
		let k = 1;
		while (k < needle.length && hay[i + k] === needle[k]) k++;
		if (k === needle.length) return i;
	}
	return -1;
}

/**
 * splitThinking separates a reply into its thinking text and its answer.
 * Thinking is what lies between <think> and </think>, or before a </think>
 * whose <think> was part of the prompt. While the closing tag has not come
 * yet, done is false and answer is empty.
 */
export function splitThinking(text) {
	const open = text.indexOf("<think>");
	const close = text.indexOf("</think>");
	if (open >= 0 && (close < 0 || open < close) && text.slice(0, open).trim() === "") {
		if (close < 0) return { thinking: text.slice(open + 7).replace(/^\n/, ""), answer: "", done: false };
		return { thinking: text.slice(open + 7, close).trim(), answer: text.slice(close + 8).replace(/^\s+/, ""), done: true };
	}
	if (close >= 0 && (open < 0 || open > close)) {
		return { thinking: text.slice(0, close).trim(), answer: text.slice(close + 8).replace(/^\s+/, ""), done: true };
	}
	return { thinking: null, answer: text, done: true };
}

/**
 * renderReply fills el with a reply: its thinking folded in a <details>
 * (kept open or closed as the reader left it), then the answer as Markdown.
 * plain renders the answer as preformatted text (continuation mode).
 *
 * It is called again and again while a reply streams in: the elements are
 * kept and updated, and the answer goes through its MarkdownView (see
 * markdown.js), which re-renders only the part that can still change.
 * final: true (the complete reply) does one full, unthrottled render.
 */
export function renderReply(el, text, { plain = false, final = false } = {}) {
	const doc = el.ownerDocument;
	const { thinking, answer, done } = plain ? { thinking: null, answer: text, done: true } : splitThinking(text);
	let d = el.querySelector(":scope > details.thinking");
	let a = el.querySelector(":scope > div.answer");
	if (a && a.classList.contains("plain") !== plain) a = null;
	if (thinking === null) {
		d = null;
	} else {
		if (!d) {
			d = doc.createElement("details");
			d.className = "thinking";
			d.open = false;
			const s = doc.createElement("summary");
			const body = doc.createElement("div");
			body.className = "thinking-text";
			d.append(s, body);
		}
		setText(d.querySelector(":scope > summary"), done ? "Thought" : "Thinking…");
		setText(d.querySelector(":scope > .thinking-text"), thinking);
	}
	if (!a) {
		a = doc.createElement("div");
		a.className = "answer";
		if (plain) a.classList.add("plain");
	}
	const want = d ? [d, a] : [a];
	if (el.childNodes.length !== want.length || want.some((n, i) => el.childNodes[i] !== n)) el.replaceChildren(...want);
	if (plain) setText(a, answer);
	else renderMarkdownInto(a, answer, { final });
}

// setText sets node's text, appending to its text node when the new text
// only extends it (a streamed reply), so that nothing is rebuilt.
function setText(node, text) {
	const t = node.firstChild;
	if (t && t.nodeType === 3 && node.childNodes.length === 1) {
		if (t.data === text) return;
		if (text.startsWith(t.data)) {
			t.appendData(text.slice(t.data.length));
			return;
		}
	}
	node.textContent = text;
}

/** formatStats is the line shown under a reply. */
export function formatStats(usage, timings) {
	const parts = [];
	if (timings) {
		parts.push(`prefill ${timings.prefill_tokens} tok at ${rate(timings.prefill_tokens_per_s)}`);
		parts.push(`decode ${timings.decode_tokens} tok at ${rate(timings.decode_tokens_per_s)}`);
	}
	if (usage && usage.prompt_tokens_details) parts.push(`${usage.prompt_tokens_details.cached_tokens} of ${usage.prompt_tokens} prompt tokens cached`);
	return parts.join(" · ");
}

const rate = (v) => (v > 0 ? `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} tok/s` : "– tok/s");

/**
 * Conversation holds one chat with one engine. With a chat template it
 * sends the messages; without one it keeps a running text and asks for its
 * continuation (so a follow-up reuses the cached prefix too).
 */
export class Conversation {
	constructor(engine, { chat = true, thinking = false } = {}) {
		this.engine = engine;
		this.chatMode = chat;
		this.thinking = thinking;
		this.busy = false;
		this.reset();
	}

	reset() {
		this.epoch = (this.epoch || 0) + 1; // a reply in flight from before is not kept
		this.messages = []; // {role, content} without the system prompt
		this.text = ""; // continuation mode: everything so far
	}

	/**
	 * send streams the reply to userText. onText(fullReplyText) is called
	 * as text arrives; the promise resolves to {text, finish_reason, usage,
	 * timings, chunks}. settings: {system, thinking, seed, ...SAMPLING}.
	 */
	async send(userText, settings, onText) {
		if (this.busy) throw new Error("a reply is still being generated");
		this.busy = true;
		const epoch = this.epoch;
		try {
			const params = samplingParams(settings);
			let req, op;
			if (this.chatMode) {
				const messages = [];
				if (settings.system && settings.system.trim()) messages.push({ role: "system", content: settings.system });
				messages.push(...this.messages, { role: "user", content: userText });
				req = Object.assign({ messages, stream: true, stream_options: { include_usage: true } }, params);
				if (!req.max_tokens) delete req.max_tokens;
				if (this.thinking) req.chat_template_kwargs = { enable_thinking: !!settings.thinking };
				op = this.engine.chat.completions;
			} else {
				req = Object.assign({ prompt: joinText(this.text, userText), stream: true, stream_options: { include_usage: true } }, params);
				// 0 is "no limit" in the settings: until the context is full.
				if (!req.max_tokens) req.max_tokens = (this.engine.info && this.engine.info.context_length) || 4096;
				op = this.engine.completions;
			}
			// A server's reasoning parser (vLLM's) sends the thinking as
			// delta.reasoning_content: it is shown as the model's own
			// <think> block would be, folded.
			let text = "", reasoning = "", finish = null, usage = null, timings = null, chunks = 0;
			const shown = () => (reasoning ? "<think>" + reasoning + (text ? "</think>\n\n" + text : "") : text);
			const stream = await op.create(req);
			for await (const c of stream) {
				const ch = c.choices && c.choices[0];
				const piece = ch ? (ch.delta ? ch.delta.content : ch.text) : "";
				const thought = ch && ch.delta && ch.delta.reasoning_content;
				if (thought) {
					reasoning += thought;
					chunks++;
					if (onText) onText(shown());
				}
				if (piece) {
					text += piece;
					chunks++;
					if (onText) onText(shown());
				}
				if (ch && ch.finish_reason) finish = ch.finish_reason;
				if (c.usage) usage = c.usage;
				if (c.timings) timings = c.timings;
			}
			if (epoch === this.epoch && this.chatMode) {
				this.messages.push({ role: "user", content: userText }, { role: "assistant", content: text });
			} else if (epoch === this.epoch) {
				this.text = req.prompt + text;
			}
			return { text: shown(), content: text, reasoning_content: reasoning || null, finish_reason: finish, usage, timings, chunks };
		} finally {
			this.busy = false;
		}
	}
}

// joinText appends a new piece to a continuation, with a space between
// words that would otherwise run together.
function joinText(before, add) {
	if (!before || /\s$/.test(before) || /^\s/.test(add)) return before + add;
	return before + " " + add;
}
