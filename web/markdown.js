// Safe Markdown rendering for model output.
//
// Model text is untrusted and often long. It is parsed by markdown-it (a
// pinned copy in vendor/markdown-it/, see its README.md) into a token
// stream, and this file turns the tokens into DOM nodes with createElement
// and text nodes. Nothing here parses HTML: the library's HTML renderer and
// innerHTML are never used, and raw HTML is switched off in the parser
// (html: false), so <script> or <img onerror=...> in the text shows as
// literal text. Links keep only absolute http:, https: and mailto: targets
// and open with rel="noopener noreferrer nofollow"; images are not loaded,
// they show as a link to the image (or as their text when the target is not
// allowed).
//
// Supported: CommonMark (paragraphs, # headings, ``` and indented code, >
// quotes, nested lists, rules, emphasis, `code`, links, <autolinks>,
// reference links, hard breaks) plus GFM tables and ~~strike~~. A single
// newline inside a paragraph is shown as a line break, as before.
//
// Streaming: a reply is re-rendered while it arrives. MarkdownView keeps
// the top-level blocks that can no longer change as they are and re-parses
// only the open tail, and it spaces tail renders out by a multiple of what
// the last one cost, so a reply of n bytes costs O(n) overall and a giant
// open block cannot monopolise the main thread.

import "./vendor/markdown-it/markdown-it.min.js";

const markdownit = globalThis.markdownit;

const SAFE_SCHEMES = new Set(["http:", "https:", "mailto:"]);

/**
 * safeURL returns href, made absolute and normalised, when its scheme is
 * http:, https: or mailto:, else null. Without base a relative href is
 * refused (null); with base it is resolved against base first.
 */
export function safeURL(href, base) {
	try {
		const u = base === undefined ? new URL(String(href)) : new URL(String(href), base);
		return SAFE_SCHEMES.has(u.protocol) ? u.href : null;
	} catch {
		return null;
	}
}

// The parser. Raw HTML off, no typographic replacements, no linkify (bare
// URLs stay text, as before); nesting is capped by the library (100 levels),
// which bounds the depth of the DOM built below.
const md = markdownit("default", { html: false, linkify: false, typographer: false });
// markdown-it calls this with the destination of every link, autolink and
// image; a refused destination leaves the Markdown as text.
md.validateLink = (url) => safeURL(url) !== null;

// normalize makes line ends "\n", as markdown-it does, so that line
// numbers in token maps count the same lines as this file does.
const normalize = (text) => {
	const s = String(text);
	return s.includes("\r") ? s.replace(/\r\n?/g, "\n") : s;
};

const BLOCK_TAGS = {
	paragraph_open: "p", blockquote_open: "blockquote", bullet_list_open: "ul", ordered_list_open: "ol",
	list_item_open: "li", table_open: "table", thead_open: "thead", tbody_open: "tbody", tr_open: "tr",
	th_open: "th", td_open: "td",
};
const INLINE_TAGS = { strong_open: "strong", em_open: "em", s_open: "del" };

/**
 * buildBlocks turns tokens into DOM nodes, one per top-level block, and
 * returns them as [{node, line}], line being the block's first source line.
 */
function buildBlocks(tokens, doc) {
	const blocks = [];
	const root = { appendChild: (n) => n }; // top-level nodes are collected, not attached
	const stack = [root];
	const top = () => stack[stack.length - 1];
	for (const t of tokens) {
		const parent = top();
		let node = null;
		if (t.nesting === -1) {
			if (stack.length > 1) stack.pop();
			continue;
		}
		switch (t.type) {
			case "inline":
				appendInline(parent === root ? (node = doc.createElement("p")) : parent, t.children || [], doc);
				break;
			case "heading_open":
				node = doc.createElement("h" + Math.min(6, Number(t.tag.slice(1)) + 2)); // h3..h6: inside a message
				break;
			case "paragraph_open":
				// A tight list's paragraphs are hidden: their text goes in the <li>.
				if (t.hidden && parent !== root) {
					stack.push(parent);
					continue;
				}
				node = doc.createElement("p");
				break;
			case "ordered_list_open": {
				node = doc.createElement("ol");
				const start = Number(t.attrGet("start"));
				if (Number.isSafeInteger(start) && start !== 1) node.start = start;
				break;
			}
			case "fence":
			case "code_block": {
				node = doc.createElement("pre");
				const code = doc.createElement("code");
				const lang = t.type === "fence" ? /^[\w+#.-]*/.exec(t.info.trim())[0] : "";
				if (lang) code.dataset.lang = lang;
				code.textContent = t.content.replace(/\n$/, "");
				node.appendChild(code);
				break;
			}
			case "hr":
				node = doc.createElement("hr");
				break;
			default:
				if (t.nesting === 1) {
					node = doc.createElement(BLOCK_TAGS[t.type] || "div");
				} else if (t.content) {
					// A token this file does not know (html_block cannot occur with
					// html: false): its source, as text.
					node = doc.createElement("p");
					node.textContent = t.content;
				}
		}
		if (!node) continue;
		if (parent === root) blocks.push({ node, line: t.map ? t.map[0] : -1 });
		else parent.appendChild(node);
		if (t.nesting === 1) stack.push(node);
	}
	return blocks;
}

/** appendInline appends the DOM of markdown-it inline tokens to parent. */
function appendInline(parent, tokens, doc) {
	const stack = [parent];
	const top = () => stack[stack.length - 1];
	for (const t of tokens) {
		const p = top();
		switch (t.type) {
			case "text":
			case "text_special":
				p.appendChild(doc.createTextNode(t.content));
				break;
			case "softbreak":
			case "hardbreak":
				p.appendChild(doc.createElement("br"));
				break;
			case "code_inline": {
				const c = doc.createElement("code");
				c.textContent = t.content;
				p.appendChild(c);
				break;
			}
			case "link_open": {
				const e = link(doc, t.attrGet("href"));
				p.appendChild(e);
				stack.push(e);
				break;
			}
			case "image": {
				// Not loaded: a link to the image, named by its alt text.
				const e = link(doc, t.attrGet("src"));
				e.textContent = inlineText(t.children || []) || t.attrGet("src") || "";
				p.appendChild(e);
				break;
			}
			default:
				if (t.nesting === 1) {
					const e = doc.createElement(INLINE_TAGS[t.type] || "span");
					p.appendChild(e);
					stack.push(e);
				} else if (t.nesting === -1) {
					if (stack.length > 1) stack.pop();
				} else if (t.content) {
					p.appendChild(doc.createTextNode(t.content)); // html_inline cannot occur; as text anyway
				}
		}
	}
}

function inlineText(tokens) {
	let s = "";
	for (const t of tokens) {
		if (t.children) s += inlineText(t.children);
		else if (t.type === "softbreak" || t.type === "hardbreak") s += " ";
		else s += t.content || "";
	}
	return s;
}

// link returns an <a> for an allowed href, else a <span> that only keeps
// the text (markdown-it has already refused such links; this is the
// second check).
function link(doc, href) {
	const url = href == null ? null : safeURL(href);
	if (!url) return doc.createElement("span");
	const a = doc.createElement("a");
	a.href = url;
	a.rel = "noopener noreferrer nofollow";
	a.target = "_blank";
	return a;
}

/**
 * renderMarkdown returns a DocumentFragment for text, rendered in one go.
 * doc defaults to the global document.
 */
export function renderMarkdown(text, doc = globalThis.document) {
	const frag = doc.createDocumentFragment();
	for (const b of buildBlocks(md.parse(normalize(text), {}), doc)) frag.appendChild(b.node);
	return frag;
}

// How far apart tail renders are kept: the next one starts no sooner than
// SPACING times the last one's cost after it ended, so rendering takes at
// most 1/(SPACING+1) of the main thread however large the open block.
const SPACING = 4;

/**
 * MarkdownView renders a growing text into a container, incrementally.
 *
 * Top-level blocks that can no longer change are kept as they are (the
 * "frozen" head) and only the rest (the open tail) is parsed and built
 * again. A block is frozen once a later top-level block has started and
 * the first two lines of that later block are complete: CommonMark never
 * reopens a closed block, and markdown-it decides where a block ends from
 * the lines up to the one after its end (a table needs its delimiter row),
 * so from then on the block renders the same whatever follows. Reference
 * definitions ([x]: url) are the exception (a later one changes earlier
 * links): a text that holds one is re-rendered whole each time.
 *
 * update(text) with a text that does not extend the last one starts again.
 * update(text, {final: true}) renders the whole text at once, unthrottled
 * (the end of a stream). Without it the view still catches up: a skipped
 * render is done by a timer as soon as the spacing allows, and the result
 * is the same DOM as renderMarkdown(text).
 */
export class MarkdownView {
	constructor(container) {
		this.el = container;
		this.doc = container.ownerDocument;
		this.text = ""; // the latest text given
		this.rendered = null; // the text the DOM shows
		this.headLen = 0; // chars of text rendered in the frozen head
		this.head = ""; // text.slice(0, headLen)
		this.tailNodes = [];
		this.wholeOnly = false; // reference definitions seen: no freezing
		this.timer = 0;
		this.nextAt = 0;
		this.stats = { renders: 0, full: 0, ms: 0, maxMs: 0, parsedChars: 0 };
	}

	update(text, { final = false } = {}) {
		text = normalize(text);
		if (!text.startsWith(this.head)) this.restart();
		this.text = text;
		if (final) {
			// One full render: the final DOM is exactly renderMarkdown(text).
			this.restart();
			this.render();
			this.stats.full++;
			return;
		}
		if (text === this.rendered) return;
		const now = performance.now();
		if (now >= this.nextAt) {
			this.render();
		} else if (!this.timer) {
			this.timer = setTimeout(() => {
				this.timer = 0;
				if (this.text !== this.rendered) this.render();
			}, this.nextAt - now);
		}
	}

	/** pending reports whether the DOM lags behind the latest text. */
	get pending() {
		return this.text !== this.rendered;
	}

	restart() {
		this.headLen = 0;
		this.head = "";
		this.wholeOnly = false;
		this.tailNodes = [...this.el.childNodes];
	}

	render() {
		if (this.timer) {
			clearTimeout(this.timer);
			this.timer = 0;
		}
		const t0 = performance.now();
		const text = this.text;
		let tail = text.slice(this.headLen);
		let env = {};
		let tokens = md.parse(tail, env);
		this.stats.parsedChars += tail.length;
		if (env.references && Object.keys(env.references).length) {
			this.wholeOnly = true;
			if (this.headLen > 0) {
				// The head was rendered without these definitions: redo it all.
				this.restart();
				tail = text;
				env = {};
				tokens = md.parse(tail, env);
				this.stats.parsedChars += tail.length;
			}
		}
		const blocks = buildBlocks(tokens, this.doc);
		for (const n of this.tailNodes) n.remove();
		const frag = this.doc.createDocumentFragment();
		for (const b of blocks) frag.appendChild(b.node);
		this.el.appendChild(frag);
		this.tailNodes = blocks.map((b) => b.node);
		this.rendered = text;

		if (!this.wholeOnly && blocks.length > 1) {
			// Freeze every block before the last one whose first two lines are complete.
			const complete = countLines(tail);
			let k = blocks.length - 1;
			while (k > 0 && !(blocks[k].line >= 0 && blocks[k].line + 2 <= complete)) k--;
			if (k > 0) {
				const off = lineOffset(tail, blocks[k].line);
				this.headLen += off;
				this.head = text.slice(0, this.headLen);
				this.tailNodes = this.tailNodes.slice(k);
			}
		}

		const end = performance.now();
		const ms = end - t0;
		this.nextAt = end + SPACING * ms;
		this.stats.renders++;
		this.stats.ms += ms;
		this.stats.maxMs = Math.max(this.stats.maxMs, ms);
	}
}

// countLines returns how many "\n"-terminated lines s has.
function countLines(s) {
	let n = 0;
	for (let i = s.indexOf("\n"); i >= 0; i = s.indexOf("\n", i + 1)) n++;
	return n;
}

// lineOffset returns the offset in s where line (0-based) starts.
function lineOffset(s, line) {
	let off = 0;
	for (let i = 0; i < line; i++) off = s.indexOf("\n", off) + 1;
	return off;
}

const views = new WeakMap();

/**
 * renderMarkdownInto shows text in container through the container's
 * MarkdownView (made on first use): the way to render a streamed reply.
 * Pass {final: true} with the complete text.
 */
export function renderMarkdownInto(container, text, opts) {
	let v = views.get(container);
	if (!v) {
		container.replaceChildren();
		v = new MarkdownView(container);
		views.set(container, v);
	}
	v.update(text, opts);
	return v;
}

/** markdownView returns the container's MarkdownView, if it has one. */
export function markdownView(container) {
	return views.get(container) || null;
}
