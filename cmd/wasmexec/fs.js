"use strict";
// The Node-like globalThis.fs, process and path that Go's syscall/fs_js.go
// calls, over wasmexec's server. Loaded before wasm_exec.js, which then keeps
// them.
//
// Paths are the host's: the program's working directory is the runner's, and
// the files below the repository root are readable (stat and listings from
// GET /fsinfo/, contents by Range requests on /fs/, read ahead in 1 MiB
// chunks, so a multi-GB model is never downloaded whole). Paths outside the
// root fail with EACCES; the root is read-only (EROFS) except for the exact
// paths the caller allowed with -allow-write (POST /write/). Symbolic links
// inside the root are followed and look like what they point to.
(() => {
	const cfg = JSON.parse(document.getElementById("config").textContent);
	const root = cfg.root || "";
	const writable = cfg.writable || [];
	let cwd = cfg.cwd || "/";

	const S_IFMT = 0o170000, S_IFDIR = 0o040000, S_IFREG = 0o100000, S_IFCHR = 0o020000;
	const constants = {
		O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 0o100, O_EXCL: 0o200,
		O_TRUNC: 0o1000, O_APPEND: 0o2000, O_DIRECTORY: 0o200000,
	};
	const writeFlags = constants.O_WRONLY | constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND;
	const READAHEAD = 1 << 20; // bytes fetched for a small read
	const LISTING_TTL = 2000; // ms a directory listing answers lstat

	// Only errno names that Go's syscall/tables_js.go knows: another would
	// make the program panic.
	const known = new Set(["ENOENT", "ENOTDIR", "EISDIR", "EEXIST", "EACCES", "EROFS", "EBADF",
		"EINVAL", "EIO", "ELOOP", "ENOSPC", "EFBIG", "ENOSYS"]);
	const fsError = (code, msg) => {
		if (!known.has(code)) code = "EIO";
		const e = new Error(code + ": " + msg);
		e.code = code;
		return e;
	};

	const normalize = (p) => {
		const out = [];
		for (const s of p.split("/")) {
			if (s === "" || s === ".") continue;
			if (s === "..") out.pop();
			else out.push(s);
		}
		return "/" + out.join("/");
	};
	const resolve = (...segs) => {
		let p = cwd;
		for (const s of segs) {
			if (s === "") continue;
			p = s.startsWith("/") ? s : p + "/" + s;
		}
		return normalize(p);
	};
	// below returns abs relative to the root, or null when abs is outside it.
	const below = (abs) => {
		if (root === "") return null;
		if (abs === root) return "";
		if (root === "/") return abs.slice(1);
		return abs.startsWith(root + "/") ? abs.slice(root.length + 1) : null;
	};
	const url = (prefix, rel) => prefix + rel.split("/").map(encodeURIComponent).join("/");
	const outside = (abs) => fsError("EACCES", abs + " is outside " +
		(root ? "the repository " + root + " that wasmexec serves" : "any repository (wasmexec found no go.mod)"));

	class Stats {
		constructor(s) { Object.assign(this, s); }
		isDirectory() { return (this.mode & S_IFMT) === S_IFDIR; }
		isFile() { return (this.mode & S_IFMT) === S_IFREG; }
		isSymbolicLink() { return false; }
	}
	const zero = { dev: 0, ino: 0, mode: 0, nlink: 1, uid: 0, gid: 0, rdev: 0, size: 0, blksize: 0, blocks: 0, atimeMs: 0, mtimeMs: 0, ctimeMs: 0 };
	const ttyStat = new Stats({ ...zero, mode: S_IFCHR | 0o620 });

	const readJSON = async (res, abs) => {
		let j;
		try {
			j = await res.json();
		} catch (e) {
			throw fsError("EIO", abs + ": HTTP " + res.status + " from wasmexec");
		}
		if (j.code) throw fsError(j.code, abs);
		return j;
	};
	const request = async (u, init, abs) => {
		try {
			return await fetch(u, init);
		} catch (e) {
			throw fsError("EIO", abs + ": " + e);
		}
	};

	// Directory listings answer the lstat calls os.ReadDir makes for each
	// entry, and open() answers its own readdir; each cached stat is used once.
	const entryStats = new Map(); // abs path -> {stat, t}
	const listings = new Map(); // abs dir -> names, from open()
	const remember = (abs, entries) => {
		const t = performance.now();
		for (const e of entries) entryStats.set(abs === "/" ? "/" + e.name : abs + "/" + e.name, { stat: new Stats(e.stat), t });
	};

	const info = async (abs, list) => {
		const w = writable.indexOf(abs);
		if (w >= 0) return { st: new Stats((await post({ abs, w }, { op: "stat" })).stat), entries: [] };
		const rel = below(abs);
		if (rel === null) throw outside(abs);
		const res = await request(url("/fsinfo/", rel) + (list ? "?list=1" : ""), undefined, abs);
		const j = await readJSON(res, abs);
		const st = new Stats(j.stat);
		const entries = j.entries || [];
		if (list && st.isDirectory()) remember(abs, entries);
		return { st, entries };
	};

	const files = new Map(); // fd -> {abs, rel, st, pos, chunk} or {abs, w, pos, append}
	let nextFD = 100;
	const file = (fd) => {
		const f = files.get(fd);
		if (!f) throw fsError("EBADF", "fd " + fd);
		return f;
	};

	const post = async (f, query, body) => {
		const res = await request("/write/" + f.w + "?" + new URLSearchParams(query), { method: "POST", body }, f.abs);
		return readJSON(res, f.abs);
	};
	const openWrite = async (abs, flags) => {
		const w = writable.indexOf(abs);
		if (w < 0) {
			throw fsError(below(abs) === null ? "EACCES" : "EROFS", abs + " is read-only in wasmexec (allow it with -allow-write)");
		}
		const f = { abs, w, pos: 0, append: (flags & constants.O_APPEND) !== 0 };
		await post(f, {
			op: "open",
			create: flags & constants.O_CREAT ? "1" : "0",
			trunc: flags & constants.O_TRUNC ? "1" : "0",
			excl: flags & constants.O_EXCL ? "1" : "0",
		});
		return f;
	};

	// fetchRange returns bytes [start, end) of f, fewer at the end of the file.
	const fetchRange = async (f, start, end) => {
		const res = await request(url("/fs/", f.rel), { headers: { Range: `bytes=${start}-${end - 1}` } }, f.abs);
		if (res.status === 416) return new Uint8Array(0);
		if (res.status === 404) throw fsError("ENOENT", f.abs + " went away");
		if (res.status === 200) { // the server ignored the range
			return new Uint8Array(await res.arrayBuffer()).subarray(start, end);
		}
		const cr = res.headers.get("Content-Range") || "";
		if (res.status !== 206 || !cr.startsWith(`bytes ${start}-`)) {
			throw fsError("EIO", `${f.abs}: HTTP ${res.status} (${cr}) for bytes ${start}-${end - 1}`);
		}
		return new Uint8Array(await res.arrayBuffer());
	};
	const readAt = async (f, dst, at) => {
		const size = f.st.size;
		if (at >= size || dst.length === 0) return 0;
		const want = Math.min(dst.length, size - at);
		const c = f.chunk;
		if (c && at >= c.start && at + want <= c.start + c.data.length) {
			dst.set(c.data.subarray(at - c.start, at - c.start + want));
			return want;
		}
		const end = want >= READAHEAD ? at + want : Math.min(size, at + READAHEAD);
		const data = await fetchRange(f, at, end);
		const n = Math.min(want, data.length);
		dst.set(data.subarray(0, n));
		if (data.length > n) f.chunk = { start: at, data };
		return n;
	};

	// settle runs an async operation and reports it to a Node-style callback.
	const settle = (cb, op) => {
		let p;
		try {
			p = Promise.resolve(op());
		} catch (e) {
			p = Promise.reject(e);
		}
		p.then((v) => cb(null, v), (e) => cb(e && known.has(e.code) ? e : fsError("EIO", String(e && e.stack || e))));
	};
	const readOnly = (what) => function (...args) {
		const cb = args[args.length - 1];
		settle(cb, () => { throw fsError("EROFS", what + ": wasmexec's file system is read-only"); });
	};

	const fs = {
		constants,
		writeSync(fd, buf) { // replaced by the page
			console.log(new TextDecoder().decode(buf));
			return buf.length;
		},
		write(fd, buf, offset, length, position, cb) {
			const data = buf.subarray(offset, offset + length);
			if (fd === 1 || fd === 2) {
				// Synchronous, as in wasm_exec.js: a Go callback called from
				// JavaScript may print, and could not wait for a promise.
				cb(null, fs.writeSync(fd, data));
				return;
			}
			settle(cb, async () => {
				const f = file(fd);
				if (f.w === undefined) throw fsError("EBADF", f.abs + " is open for reading");
				const at = position === null || position === undefined ? f.pos : position;
				const q = f.append ? { op: "write", append: "1" } : { op: "write", off: String(at) };
				const j = await post(f, q, data.slice());
				const n = j.n || 0;
				if (position === null || position === undefined) f.pos += n;
				return n;
			});
		},
		open(path, flags, mode, cb) {
			settle(cb, async () => {
				const abs = resolve(path);
				let f;
				if (flags & writeFlags) {
					f = await openWrite(abs, flags);
				} else {
					if (writable.includes(abs)) throw fsError("EACCES", abs + " is write-only in wasmexec");
					const { st, entries } = await info(abs, true);
					if ((flags & constants.O_DIRECTORY) && !st.isDirectory()) throw fsError("ENOTDIR", abs);
					if (st.isDirectory()) listings.set(abs, entries.map((e) => e.name));
					f = { abs, rel: below(abs), st, pos: 0, chunk: null };
				}
				const fd = nextFD++;
				files.set(fd, f);
				return fd;
			});
		},
		close(fd, cb) {
			settle(cb, () => {
				file(fd);
				files.delete(fd);
				return undefined;
			});
		},
		fstat(fd, cb) {
			settle(cb, async () => {
				if (fd === 0 || fd === 1 || fd === 2) return ttyStat;
				const f = file(fd);
				if (f.w !== undefined) return new Stats((await post(f, { op: "stat" })).stat);
				return f.st;
			});
		},
		read(fd, buf, offset, length, position, cb) {
			settle(cb, async () => {
				const f = file(fd);
				if (f.w !== undefined) throw fsError("EBADF", f.abs + " is open for writing only");
				if (f.st.isDirectory()) throw fsError("EISDIR", f.abs);
				const seq = position === null || position === undefined;
				const n = await readAt(f, buf.subarray(offset, offset + length), seq ? f.pos : position);
				if (seq) f.pos += n;
				return n;
			});
		},
		stat(path, cb) {
			settle(cb, async () => (await info(resolve(path), false)).st);
		},
		lstat(path, cb) {
			settle(cb, async () => {
				const abs = resolve(path);
				const c = entryStats.get(abs);
				if (c) {
					entryStats.delete(abs);
					if (performance.now() - c.t < LISTING_TTL) return c.stat;
				}
				return (await info(abs, false)).st;
			});
		},
		readdir(path, cb) {
			settle(cb, async () => {
				const abs = resolve(path);
				const names = listings.get(abs);
				if (names) {
					listings.delete(abs);
					return names;
				}
				const { st, entries } = await info(abs, true);
				if (!st.isDirectory()) throw fsError("ENOTDIR", abs);
				return entries.map((e) => e.name);
			});
		},
		readlink(path, cb) {
			settle(cb, () => { throw fsError("EINVAL", resolve(path) + ": not a symbolic link (wasmexec follows links)"); });
		},
		fsync(fd, cb) { settle(cb, () => undefined); },
		chmod: readOnly("chmod"), chown: readOnly("chown"), fchmod: readOnly("fchmod"),
		fchown: readOnly("fchown"), lchown: readOnly("lchown"), ftruncate: readOnly("ftruncate"),
		link: readOnly("link"), mkdir: readOnly("mkdir"), rename: readOnly("rename"),
		rmdir: readOnly("rmdir"), symlink: readOnly("symlink"), truncate: readOnly("truncate"),
		unlink: readOnly("unlink"), utimes: readOnly("utimes"),
	};

	const enosys = () => fsError("ENOSYS", "not implemented");
	globalThis.fs = fs;
	globalThis.path = { resolve };
	globalThis.process = {
		getuid() { return -1; },
		getgid() { return -1; },
		geteuid() { return -1; },
		getegid() { return -1; },
		getgroups() { throw enosys(); },
		pid: -1,
		ppid: -1,
		umask() { throw enosys(); },
		cwd() { return cwd; },
		// chdir is synchronous in Go, so it checks the directory with a
		// synchronous request.
		chdir(p) {
			const abs = resolve(p);
			const rel = below(abs);
			if (rel === null) throw outside(abs);
			const x = new XMLHttpRequest();
			x.open("GET", url("/fsinfo/", rel), false);
			x.send();
			let j;
			try {
				j = JSON.parse(x.responseText);
			} catch (e) {
				throw fsError("EIO", abs + ": HTTP " + x.status + " from wasmexec");
			}
			if (j.code) throw fsError(j.code, abs);
			if (!new Stats(j.stat).isDirectory()) throw fsError("ENOTDIR", abs);
			cwd = abs;
		},
	};
})();
