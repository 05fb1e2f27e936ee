// The JavaScript half of package webgpu: object tables, the program replayer and
// readback. Go evaluates this expression once per device and calls the
// returned object's methods. Methods that Go calls never throw; failures are
// recorded in `errors` (and surface in Go) or returned as a message.
(device, onDone, onLost) => {
	"use strict";
	const OP_PIPELINE = 1, OP_BIND = 2, OP_DISPATCH = 3, OP_DISPATCH_INDIRECT = 4,
		OP_COPY = 5, OP_CLEAR = 6, OP_WRITE = 7;
	const queue = device.queue;
	// Handle 0 is never valid, so a zero word in a program fails loudly.
	const buffers = [null], pipelines = [null], bindGroups = [null], programs = [null];
	const errors = [];
	const pending = new Set(); // error-scope promises not yet settled
	const stats = { dispatches: 0, submits: 0, passes: 0, maps: 0, bytesRead: 0, bytesWritten: 0, runs: 0, polls: 0 };
	const readPool = new Map(); // allocation size -> idle MAP_READ buffers
	let upload = new Uint8Array(4096);
	let lost = null;

	const kindOf = (e) =>
		(typeof GPUValidationError !== "undefined" && e instanceof GPUValidationError) ? "validation" :
		(typeof GPUOutOfMemoryError !== "undefined" && e instanceof GPUOutOfMemoryError) ? "out-of-memory" :
		(typeof GPUInternalError !== "undefined" && e instanceof GPUInternalError) ? "internal" : "exception";
	const record = (kind, label, message) => errors.push({ kind, label, message: String(message) });
	const grow = (a, n) => {
		if (a.length >= n) return a;
		let m = a.length;
		while (m < n) m *= 2;
		return new Uint8Array(m);
	};

	device.lost.then((info) => {
		lost = info;
		onLost(String(info.reason), String(info.message));
	});
	device.addEventListener("uncapturederror", (ev) => {
		record(kindOf(ev.error), "", ev.error.message);
		ev.preventDefault(); // Go reports it; keep the console quiet
	});

	// scoped runs fn inside validation and out-of-memory error scopes, and
	// records what they catch under label once they settle.
	const scoped = (label, fn) => {
		device.pushErrorScope("out-of-memory");
		device.pushErrorScope("validation");
		let result;
		try {
			result = fn();
		} catch (e) {
			record("exception", label, e && e.message ? e.message : e);
		}
		const p = Promise.all([device.popErrorScope(), device.popErrorScope()]).then(
			(errs) => { for (const e of errs) if (e) record(kindOf(e), label, e.message); },
			(e) => record("exception", label, e && e.message ? e.message : e));
		pending.add(p);
		p.finally(() => pending.delete(p));
		return result;
	};

	const settle = () => Promise.all([...pending]);

	// Firefox (wgpu) resolves a mapAsync only when its device is polled,
	// which without help happens about every 100 ms (a decode cap of ~10
	// tok/s); an empty submit polls it. So while a readback is pending the
	// page submits an empty list at most every POLL_MS, yielding through a
	// MessageChannel (a setTimeout loop is clamped to 4 ms). Unthrottled, the
	// empty submits flood wgpu and slow the real work (measured here: 2.6
	// tok/s). Chromium (Dawn) polls on its own: there the loop only takes a
	// core from a software adapter (measured: no gain), so it is off.
	const POLL_MS = 1;
	const polls = typeof navigator !== "undefined" && /Firefox\//.test(navigator.userAgent);
	let mapping = 0, lastPoll = 0;
	const poller = polls ? new MessageChannel() : null;
	if (poller) {
		poller.port1.onmessage = () => {
			if (mapping === 0 || lost) return;
			const now = performance.now();
			if (now - lastPoll >= POLL_MS) {
				queue.submit([]);
				stats.polls++;
				lastPoll = now;
			}
			poller.port2.postMessage(0);
		};
	}
	const mapped = (p) => {
		if (!poller) return p;
		if (mapping++ === 0) poller.port2.postMessage(0);
		return p.finally(() => { mapping--; });
	};

	const rt = {
		stats,
		uploadBuffer(n) { upload = grow(upload, n); return upload; },
		errorCount() { return errors.length; },
		takeErrors() { return errors.splice(0, errors.length); },
		isLost() { return lost !== null; },

		createBuffer(label, size, usage) {
			const b = scoped(label, () => device.createBuffer({ label, size, usage }));
			if (!b) return 0;
			buffers.push(b);
			return buffers.length - 1;
		},
		destroyBuffer(h) {
			const b = buffers[h];
			if (b) { b.destroy(); buffers[h] = null; }
		},
		buffer(h) { return buffers[h]; },
		// write copies upload[0:n) into buffer h at off.
		write(h, off, n) {
			scoped("WriteBuffer", () => queue.writeBuffer(buffers[h], off, upload, 0, n));
			stats.bytesWritten += n;
		},
		// writeFrom writes a JavaScript typed array, e.g. a fetched chunk,
		// without passing it through Go.
		writeFrom(h, off, src) {
			scoped("WriteBufferFromJS", () => queue.writeBuffer(buffers[h], off, src));
			stats.bytesWritten += src.byteLength;
		},
		addPipeline(p) { pipelines.push(p); return pipelines.length - 1; },
		// createBindGroup(label, layout, binding, buffer, offset, size, ...)
		createBindGroup(label, layout, ...flat) {
			const entries = [];
			for (let i = 0; i < flat.length; i += 4) {
				entries.push({ binding: flat[i], resource: { buffer: buffers[flat[i + 1]], offset: flat[i + 2], size: flat[i + 3] } });
			}
			const g = scoped(label, () => device.createBindGroup({ label, layout, entries }));
			if (!g) return 0;
			bindGroups.push(g);
			return bindGroups.length - 1;
		},
		addProgram(label, bytes) {
			programs.push({ label, ops: new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4) });
			return programs.length - 1;
		},
		freeProgram(h) { programs[h] = null; },

		// run replays program ph (0: none) in one command buffer and submits
		// it. When rlen > 0 it also copies [roff, roff+ralen) of buffer rh into
		// a mappable buffer in the same submit, maps it, waits for the error
		// scopes, and calls onDone(null, view of rlen bytes from rskip,
		// errorCount, seq) or onDone(message, null, errorCount, seq): the
		// bytes are the readback's own copy, since readbacks in flight may
		// complete in another order than they were submitted (Firefox), and
		// seq, given by the caller, says which. It returns the
		// number of recorded errors, or -1 when the device is lost.
		run(ph, rh, roff, ralen, rskip, rlen, seq) {
			if (lost) {
				if (rlen > 0) onDone("device lost: " + lost.message, null, errors.length, seq);
				return -1;
			}
			const prog = ph ? programs[ph] : null;
			const label = prog ? prog.label : "ReadBuffer";
			let staging = null, submitted = false;
			scoped(label, () => {
				if (ph && !prog) throw new Error("program was freed");
				const enc = device.createCommandEncoder({ label });
				if (prog) encode(prog, enc);
				if (rlen > 0) {
					const idle = readPool.get(ralen);
					staging = idle && idle.length ? idle.pop() :
						device.createBuffer({ label: "readback", size: ralen, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
					enc.copyBufferToBuffer(buffers[rh], roff, staging, 0, ralen);
				}
				queue.submit([enc.finish()]);
				submitted = true;
				stats.submits++;
				if (prog) stats.runs++;
			});
			if (rlen > 0) {
				const fail = (msg) => onDone(msg, null, errors.length, seq);
				if (!submitted) {
					if (staging) readPool.get(ralen)?.push(staging) ?? staging.destroy();
					settle().then(() => fail("not submitted"));
					return errors.length;
				}
				// A failed readback may be the device going away (Firefox
				// rejects the map, or unmaps a mapped buffer, before
				// device.lost settles): wait a little for the loss, so that
				// Go reports it as such. Every readback calls onDone once.
				const failed = (e) => {
					try { staging.destroy(); } catch (_) { /* already gone */ }
					const msg = "readback failed: " + (e && e.message ? e.message : e);
					const soon = new Promise((resolve) => setTimeout(resolve, 200));
					Promise.race([device.lost, soon]).then(() => settle()).then(
						() => fail(lost ? "device lost: " + lost.message : msg), () => fail(msg));
				};
				Promise.all([mapped(staging.mapAsync(GPUMapMode.READ, 0, ralen)), settle()]).then(() => {
					let out;
					try {
						const m = new Uint8Array(staging.getMappedRange(0, ralen));
						out = m.slice(rskip, rskip + rlen); // one copy, as the mapping goes away
						staging.unmap();
					} catch (e) {
						failed(e);
						return;
					}
					if (!readPool.has(ralen)) readPool.set(ralen, []);
					readPool.get(ralen).push(staging);
					stats.maps++;
					stats.bytesRead += rlen;
					onDone(null, out, errors.length, seq);
				}, failed);
			}
			return errors.length;
		},

		// sync waits for all submitted work and error scopes, then calls onDone.
		sync(seq) {
			Promise.all([mapped(queue.onSubmittedWorkDone()), settle()]).then(
				() => onDone(lost ? "device lost: " + lost.message : null, null, errors.length, seq),
				(e) => onDone(String(e && e.message ? e.message : e), null, errors.length, seq));
		},
	};

	// encode replays a program's ops. Copies and clears cannot be inside a
	// compute pass, so they end the current one; the next dispatch opens a new
	// pass and re-applies the pipeline and bind groups in effect.
	const encode = (prog, enc) => {
		const ops = prog.ops;
		let pass = null, pipeline = null;
		const groups = [];
		const open = () => {
			pass = enc.beginComputePass();
			stats.passes++;
			if (pipeline) pass.setPipeline(pipeline);
			for (let g = 0; g < groups.length; g++) if (groups[g]) pass.setBindGroup(g, groups[g]);
		};
		const close = () => { if (pass) { pass.end(); pass = null; } };
		for (let i = 0; i < ops.length;) {
			switch (ops[i]) {
			case OP_PIPELINE:
				pipeline = pipelines[ops[i + 1]];
				if (pass) pass.setPipeline(pipeline);
				i += 2;
				break;
			case OP_BIND:
				groups[ops[i + 1]] = bindGroups[ops[i + 2]];
				if (pass) pass.setBindGroup(ops[i + 1], groups[ops[i + 1]]);
				i += 3;
				break;
			case OP_DISPATCH:
				if (!pass) open();
				pass.dispatchWorkgroups(ops[i + 1], ops[i + 2], ops[i + 3]);
				stats.dispatches++;
				i += 4;
				break;
			case OP_DISPATCH_INDIRECT:
				if (!pass) open();
				pass.dispatchWorkgroupsIndirect(buffers[ops[i + 1]], ops[i + 2]);
				stats.dispatches++;
				i += 3;
				break;
			case OP_COPY:
				close();
				enc.copyBufferToBuffer(buffers[ops[i + 1]], ops[i + 2], buffers[ops[i + 3]], ops[i + 4], ops[i + 5]);
				i += 6;
				break;
			case OP_CLEAR:
				close();
				enc.clearBuffer(buffers[ops[i + 1]], ops[i + 2], ops[i + 3]);
				i += 4;
				break;
			case OP_WRITE:
				// A queue write lands before this submit's commands.
				queue.writeBuffer(buffers[ops[i + 1]], ops[i + 2], upload, ops[i + 3], ops[i + 4]);
				stats.bytesWritten += ops[i + 4];
				i += 5;
				break;
			default:
				throw new Error("program " + prog.label + ": bad op " + ops[i] + " at word " + i);
			}
		}
		close();
	};

	return rt;
}
