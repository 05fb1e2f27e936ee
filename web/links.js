// What a link to the chat page may do by itself. ?model= and ?endpoint=
// preselect; they never spend the user's bandwidth, storage or privacy
// without a click. A model on another origin (?model=https://other/x.gguf),
// a download over AUTOLOAD_BYTES, and a chat with an endpoint on another
// origin (?endpoint=https://other/v1) wait for the user, who is told the
// host; nothing is fetched from or sent to another origin before that.
// What the user picks in the picker is the user's own choice.

// AUTOLOAD_BYTES: models up to this size load without asking.
export const AUTOLOAD_BYTES = 64 << 20;

// otherHost is the host of url when it is not this page's origin, else "".
export function otherHost(url) {
	const u = new URL(url, location.href);
	return u.origin === location.origin ? "" : u.host;
}

// probeBytes asks this origin how much a link's model would download
// before anything of it is: a GGUF's size (one byte of a Range request),
// a model folder's shards (its manifest.json). NaN when it cannot tell
// (offline, say: the load then finds its cache or fails with the reason).
// It never asks another origin.
export async function probeBytes(entry) {
	if (!entry.url || otherHost(entry.url)) return NaN;
	try {
		if (entry.gguf) {
			const r = await fetch(entry.url, { headers: { Range: "bytes=0-0" }, cache: "no-store" });
			if (r.body) r.body.cancel().catch(() => {});
			const m = r.status === 206 && /\/(\d+)\s*$/.exec(r.headers.get("Content-Range") || "");
			return m ? Number(m[1]) : NaN;
		}
		const r = await fetch(new URL("manifest.json", entry.url), { headers: { Accept: "application/json" } });
		if (!r.ok) return NaN;
		const m = await r.json();
		return Array.isArray(m && m.shards) ? m.shards.reduce((n, s) => n + (Number(s && s.bytes) || 0), 0) : NaN;
	} catch {
		return NaN;
	}
}

// linkQuestion is what the page asks before it loads entry, or null when
// it may load at once: {notice, button}, naming the host or the size.
// linked: the link named entry (?model=, ?endpoint=), rather than the
// page picking the listing's first; bytes: its download size (NaN if
// unknown); cached: it is in Cache Storage already; sizeText formats
// bytes.
export function linkQuestion(entry, { linked, bytes, cached }, sizeText) {
	const host = otherHost(entry.remote ? entry.endpoint : entry.url || location.href);
	if (linked && host && entry.remote) {
		return {
			notice: `This link asks to chat with ${entry.id} at ${new URL(entry.endpoint, location.href).href}: your messages would be sent to ${host}, another site. Nothing is sent until you press Connect.`,
			button: `Connect to ${host}`,
		};
	}
	if (linked && host) {
		return {
			notice: `This link asks to download ${entry.name} from ${host}, another site, and keep it in this browser. Nothing is fetched until you press Load.`,
			button: `Load ${entry.name} from ${host}`,
		};
	}
	if (entry.remote || cached || !(bytes > AUTOLOAD_BYTES)) return null;
	return { notice: "", button: `Load ${entry.name} (${sizeText(bytes)})` };
}
