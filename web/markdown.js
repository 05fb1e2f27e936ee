// Safe Markdown rendering for model output.
//
// Model text is untrusted. Nothing here parses HTML: the text is split into
// blocks and inline spans by hand, and every piece becomes DOM nodes built
// with createElement and text nodes (textContent), never innerHTML. Raw HTML
// in the input (<script>, <img onerror=...>) therefore shows as literal
// text. Links keep only http:, https: and mailto: targets and open with
// rel="noopener noreferrer nofollow"; images are not rendered at all.
//
// Supported: paragraphs, hard line breaks, # headings, ``` fenced code, >
// quotes, - * + and 1. lists (one level), --- rules, `code`, **bold**,
// *italic* / _italic_, ~~strike~~, [links](url) and <http://autolinks>.

const SAFE_SCHEMES = new Set(["http:", "https:", "mailto:"]);

/** safeURL returns href when its scheme is allowed, else null. */
export function safeURL(href, base) {
	try {
		const u = new URL(href, base || "https://invalid.invalid/");
		return SAFE_SCHEMES.has(u.protocol) ? u.href : null;
	} catch {
		return null;
	}
}

const el = (doc, tag, cls) => {
	const e = doc.createElement(tag);
	if (cls) e.className = cls;
	return e;
};

// Block patterns.
const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const ULIST = /^ {0,3}[-*+]\s+(.*)$/;
const OLIST = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;

/**
 * renderMarkdown returns a DocumentFragment for text. doc defaults to the
 * global document.
 */
export function renderMarkdown(text, doc = globalThis.document) {
	const frag = doc.createDocumentFragment();
	const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
	let i = 0;
	let para = [];
	const flushPara = () => {
		if (!para.length) return;
		const p = el(doc, "p");
		para.forEach((l, k) => {
			if (k > 0) p.appendChild(doc.createElement("br"));
			appendInline(p, l, doc);
		});
		frag.appendChild(p);
		para = [];
	};
	while (i < lines.length) {
		const line = lines[i];
		let m;
		if ((m = FENCE.exec(line))) {
			flushPara();
			const close = m[1];
			const body = [];
			i++;
			while (i < lines.length && !(lines[i].trim().startsWith(close[0].repeat(close.length)) && lines[i].trim().replaceAll(close[0], "") === "")) {
				body.push(lines[i]);
				i++;
			}
			i++; // the closing fence (or the end of an unfinished stream)
			const pre = el(doc, "pre");
			const code = el(doc, "code");
			if (m[2]) code.dataset.lang = m[2];
			code.textContent = body.join("\n");
			pre.appendChild(code);
			frag.appendChild(pre);
			continue;
		}
		if (line.trim() === "") {
			flushPara();
			i++;
			continue;
		}
		if ((m = HEADING.exec(line))) {
			flushPara();
			const h = el(doc, "h" + Math.min(6, m[1].length + 2)); // h3..h6: inside a message
			appendInline(h, m[2], doc);
			frag.appendChild(h);
			i++;
			continue;
		}
		if (RULE.test(line) && !para.length) {
			frag.appendChild(el(doc, "hr"));
			i++;
			continue;
		}
		if (QUOTE.test(line)) {
			flushPara();
			const inner = [];
			while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
				inner.push(m[1]);
				i++;
			}
			const q = el(doc, "blockquote");
			q.appendChild(renderMarkdown(inner.join("\n"), doc));
			frag.appendChild(q);
			continue;
		}
		const ul = ULIST.test(line), ol = OLIST.exec(line);
		if (ul || ol) {
			flushPara();
			const list = el(doc, ul ? "ul" : "ol");
			if (ol && ol[1] !== "1") list.start = Number(ol[1]);
			const re = ul ? ULIST : OLIST;
			while (i < lines.length && (m = re.exec(lines[i]))) {
				const li = el(doc, "li");
				appendInline(li, ul ? m[1] : m[2], doc);
				i++;
				// Indented continuation lines belong to the item.
				while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !re.test(lines[i])) {
					li.appendChild(doc.createElement("br"));
					appendInline(li, lines[i].trim(), doc);
					i++;
				}
				list.appendChild(li);
			}
			frag.appendChild(list);
			continue;
		}
		para.push(line);
		i++;
	}
	flushPara();
	return frag;
}

// Inline patterns, tried at each position in this order.
const INLINE = [
	{ re: /^(`+)([\s\S]*?[^`])\1(?!`)/, make: (doc, m) => { const c = el(doc, "code"); c.textContent = m[2].replace(/^ (.*) $/, "$1"); return c; } },
	{ re: /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/, make: (doc, m) => link(doc, m[1], m[1]) },
	{ re: /^\[([^\]\n]+)\]\(\s*<?([^\s()<>]+)>?(?:\s+"[^"]*")?\s*\)/, make: (doc, m) => link(doc, m[2], m[1], true) },
	{ re: /^(\*\*|__)(?=\S)([\s\S]*?\S)\1/, make: (doc, m) => inline(doc, "strong", m[2]) },
	{ re: /^~~(?=\S)([\s\S]*?\S)~~/, make: (doc, m) => inline(doc, "del", m[1]) },
	{ re: /^\*(?=[^\s*])([\s\S]*?[^\s*])\*(?!\*)/, make: (doc, m) => inline(doc, "em", m[1]) },
	{ re: /^_(?=[^\s_])([\s\S]*?[^\s_])_(?![\w])/, make: (doc, m) => inline(doc, "em", m[1]), wordStart: true },
];

function inline(doc, tag, text) {
	const e = el(doc, tag);
	appendInline(e, text, doc);
	return e;
}

function link(doc, href, text, markdownText) {
	const url = safeURL(href);
	if (!url) {
		// An unsafe target (javascript:, data:) keeps only its text.
		const s = el(doc, "span");
		if (markdownText) appendInline(s, text, doc);
		else s.textContent = text;
		return s;
	}
	const a = el(doc, "a");
	a.href = url;
	a.rel = "noopener noreferrer nofollow";
	a.target = "_blank";
	if (markdownText) appendInline(a, text, doc);
	else a.textContent = text;
	return a;
}

/** appendInline appends the inline Markdown of text to parent. */
export function appendInline(parent, text, doc = globalThis.document) {
	let buf = "";
	const flush = () => {
		if (buf) parent.appendChild(doc.createTextNode(buf));
		buf = "";
	};
	let i = 0;
	while (i < text.length) {
		const ch = text[i];
		if (ch === "\\" && i + 1 < text.length && /[\\`*_{}[\]()#+\-.!~<>|]/.test(text[i + 1])) {
			buf += text[i + 1];
			i += 2;
			continue;
		}
		if ("`<[*_~".includes(ch)) {
			const rest = text.slice(i);
			let hit = null;
			for (const p of INLINE) {
				if (p.wordStart && i > 0 && /\w/.test(text[i - 1])) continue;
				const m = p.re.exec(rest);
				if (m) {
					hit = { node: p.make(doc, m), len: m[0].length };
					break;
				}
			}
			if (hit) {
				flush();
				parent.appendChild(hit.node);
				i += hit.len;
				continue;
			}
		}
		buf += ch;
		i++;
	}
	flush();
}
