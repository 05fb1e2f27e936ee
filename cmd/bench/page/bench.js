// The bench page's runners. cmd/bench loads index.html afresh for each call
// and awaits one of these with a JSON config; each resolves to a plain
// object the driver decodes.
//
//   runProbe(cfg)  runs /probe.wasm (cmd/bench/probe, Go) with cfg
//   runWllama(cfg) the peer: wllama (llama.cpp in wasm) on one GGUF model
//   runLoad(cfg)   wasmllm's createEngine on a converted folder, from the
//                  network then from Cache Storage, and the raw read of its
//                  cached shards

const log = (msg) => console.log("page: " + msg);

export async function runProbe(cfg) {
	const go = new Go();
	globalThis.__benchConfig = JSON.stringify(cfg);
	const done = new Promise((resolve, reject) => {
		globalThis.__benchDone = (json) => resolve(JSON.parse(json));
		go.exit = (code) => { if (code !== 0) setTimeout(() => reject(new Error(`probe exited with ${code}`)), 100); };
	});
	const { module, instance } = await WebAssembly.instantiateStreaming(fetch("/probe.wasm"), go.importObject);
	globalThis.wasmllmGoMemory = instance.exports.mem; // the CPU engine's SIMD kernels (cpu/simd_js.go)
	// The CPU engine's ranks (cpu/ranks_js.go): web/rank.js workers, each an
	// instance of the probe's module.
	globalThis.__wasmllmModule = module;
	globalThis.__wasmllmExecURL = new URL("/wasm_exec.js", location.href).href;
	globalThis.__wasmllmRankWorker = (rank, init) => {
		const w = new Worker("/web/rank.js");
		w.postMessage(init);
		return w;
	};
	go.run(instance).catch((e) => log(`probe crashed: ${e && e.stack || e}`));
	return done;
}

// A generation's times, as the probe reports ours: the prompt's time to
// the first token, then the decode of the tokens after it.
const runOf = (len, rep, t) => ({
	prompt: len,
	rep,
	prefill_ms: t.prompt_ms,
	decode_tokens: Math.max(0, t.predicted_n - 1),
	decode_ms: t.predicted_ms,
});

// runWllama loads cfg.url (a GGUF file) into wllama and times completions
// of each prompt text: cfg {url, name, ctx, threads, decode, repeats,
// prompts: [{len, texts: [one per repeat]}], logit_bias: {id: bias},
// budget_ms}. Greedy, EOS ignored, no prompt cache, as our runs.
export async function runWllama(cfg) {
	const start = performance.now();
	const deadline = start + cfg.budget_ms;
	const { Wllama } = await import("/wllama/index.js");
	const lines = [];
	const keep = (...a) => { if (lines.length < 200) lines.push(a.map(String).join(" ")); };
	const w = new Wllama({ default: new URL("/wllama/wasm/wllama.wasm", location.href).href }, {
		logger: { debug: () => {}, log: keep, warn: keep, error: keep },
	});
	const resp = await fetch(cfg.url);
	if (!resp.ok) throw new Error(`fetching ${cfg.url}: HTTP ${resp.status}`);
	const blob = await resp.blob();
	const t0 = performance.now();
	await w.loadModel([blob], { n_ctx: cfg.ctx, n_threads: cfg.threads, log_level: 3 });
	const out = {
		load_ms: performance.now() - t0,
		version: Wllama.getLibllamaVersion ? Wllama.getLibllamaVersion() : "",
		threads: w.getNumThreads(),
		multithread: w.isMultithread(),
		cross_origin_isolated: !!globalThis.crossOriginIsolated,
		runs: [],
		notes: [],
	};
	const complete = async (text, maxTokens) => {
		const r = await w.createCompletion({
			prompt: text, max_tokens: maxTokens, temperature: 0, ignore_eos: true,
			logit_bias: cfg.logit_bias || {}, cache_prompt: false, stream: false,
		});
		if (!r.timings) throw new Error("wllama returned no timings");
		return r;
	};
	try {
		await complete(cfg.prompts[0].texts[0], 2); // warm up
		const measured = {};
		for (let rep = 0; rep < cfg.repeats; rep++) {
			for (const p of cfg.prompts) {
				if (p.runs && rep >= p.runs) continue;
				let need = measured[p.len] || 0;
				if (!need && out.runs.length) {
					const r0 = out.runs[0];
					need = r0.prefill_ms * p.len / r0.prompt + r0.decode_ms;
				}
				const left = deadline - performance.now();
				if (need && left < need) {
					out.notes.push(`prompt ${p.len} run ${rep + 1} skipped: about ${(need / 1e3).toFixed(1)} s needed, ${(left / 1e3).toFixed(1)} s left of the time budget`);
					continue;
				}
				const text = p.texts[rep % p.texts.length];
				const t = performance.now();
				const r = await complete(text, cfg.decode + 1);
				const run = runOf(p.len, rep, r.timings);
				run.wall_ms = performance.now() - t;
				run.prompt_tokens = r.timings.prompt_n;
				run.cached_tokens = r.timings.cache_n || 0;
				out.runs.push(run);
				measured[p.len] = run.prefill_ms + run.decode_ms;
				log(`wllama ${cfg.name}: prompt ${p.len} (${r.timings.prompt_n} tokens, ${run.cached_tokens} cached): prefill ${run.prefill_ms.toFixed(1)} ms, decode ${run.decode_tokens} in ${run.decode_ms.toFixed(1)} ms`);
			}
		}
	} finally {
		await w.exit().catch(() => {});
	}
	out.log = lines.filter((l) => /webgpu|gpu|backend|thread|warn|error/i.test(l)).slice(0, 20);
	return out;
}

// readShards reads a model's shards (as its manifest lists them) from
// Cache Storage, 4 at a time like the loader, and returns the bytes read
// and how many shards were not there.
async function readShards(name, modelURL) {
	const manifest = await (await fetch(new URL("manifest.json", modelURL))).json();
	const cache = await caches.open(name);
	const urls = manifest.shards.map((s) => new URL(s.file, modelURL).href);
	let next = 0, bytes = 0, missing = 0;
	const worker = async () => {
		while (next < urls.length) {
			const r = await cache.match(urls[next++]);
			if (!r) {
				missing++;
				continue;
			}
			const n = (await r.arrayBuffer()).byteLength; // not bytes += await: other readers add meanwhile
			bytes += n;
		}
	};
	await Promise.all([worker(), worker(), worker(), worker()]);
	return { bytes, missing, shards: urls.length };
}

// runLoad times createEngine on cfg.model (a converted folder's URL) from
// the network (a fresh profile has nothing cached), reads the shards it
// cached alone, then times createEngine again from Cache Storage: cfg
// {model, backend, budget_ms}. The second load is skipped when the first took over half the
// budget.
export async function runLoad(cfg) {
	const start = performance.now();
	const wasmllm = await import("/web/wasmllm.js");
	const once = async () => {
		const t = performance.now();
		const e = await wasmllm.createEngine({ model: cfg.model, backend: cfg.backend || "" });
		const ms = performance.now() - t;
		const info = e.info;
		await e.unload();
		return { ms, load: info.load, backend: info.backend };
	};
	const network = await once();
	const t = performance.now();
	const raw = await readShards(wasmllm.cacheNameFor(cfg.model), new URL(cfg.model, location.href).href);
	const rawMs = performance.now() - t;
	let cached = null;
	if (!cfg.budget_ms || performance.now() - start < cfg.budget_ms / 2) cached = await once();
	await wasmllm.deleteCachedModel(cfg.model);
	return { network, cached, raw_ms: rawMs, raw_bytes: raw.bytes, raw_missing: raw.missing, shards: raw.shards };
}
