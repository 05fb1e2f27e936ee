// wasmllm CPU rank worker: one rank of the CPU engine's tensor parallelism
// (cpu/ranks_js.go). Rank 0 (the engine's own instance) starts one of these
// per further rank through the page's __wasmllmRankWorker and posts it
// {module, ctrl, data, rank, ranks, wasmExec}: the engine's compiled
// WebAssembly.Module (shared, not fetched again), the two SharedArrayBuffers
// of the exchange, and the URL of the wasm_exec.js that matches the module.
// The Go program sees __wasmllmRank and serves jobs until the worker ends.
// If it exits or throws, the rank marks itself dead in ctrl so rank 0's
// wait ends with an error instead of a timeout.
"use strict";

self.onmessage = (ev) => {
	const m = ev.data || {};
	self.onmessage = null;
	const ctrl = new Int32Array(m.ctrl);
	const w = 64 + 8 * m.rank;
	const dead = () => {
		Atomics.store(ctrl, w + 3, 1);
		Atomics.notify(ctrl, w);
	};
	self.addEventListener("error", dead);
	self.addEventListener("unhandledrejection", dead);
	try {
		importScripts(m.wasmExec || new URL("wasm_exec.js", self.location.href).href);
		const go = new Go();
		go.exit = dead;
		self.__wasmllmRank = m;
		WebAssembly.instantiate(m.module, go.importObject).then((inst) => {
			// The rank's SIMD128 kernels read its own instance's memory.
			self.wasmllmGoMemory = inst.exports.mem;
			return go.run(inst);
		}).then(dead, dead);
	} catch (e) {
		dead();
	}
};
