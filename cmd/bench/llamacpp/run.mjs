// cmd/bench's native peer: llama.cpp's prebuilt linux-x64 CPU build, through
// node-llama-cpp's API (no compiling: build "never", no GPU). It reads one
// JSON object on stdin, {model, threads, context, decode, runs: [{prompt,
// ids}]}, runs each prompt greedily as the native engine's runs do (the
// prompt, then decode tokens, end-of-generation tokens kept, not stopped
// at), and writes one JSON line per run to stdout: {prompt, prefill_ms,
// decode_tokens, decode_ms}, prefill to the first token, decode from the
// first token to the last. A run {warmup: true} is measured and dropped.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const job = JSON.parse(input);

const llama = await getLlama({gpu: false, build: "never", usePrebuiltBinaries: true, skipDownload: true,
	logLevel: LlamaLogLevel.error, maxThreads: job.threads});
const model = await llama.loadModel({modelPath: job.model, gpuLayers: 0});
const context = await model.createContext({contextSize: job.context, threads: {ideal: job.threads, min: job.threads},
	batchSize: 512, sequences: 1});
const seq = context.getSequence();
process.stderr.write(`llama.cpp: ${llama.cpuMathCores} cores, ${llama.maxThreads} threads max, context ${context.contextSize}, gpu ${llama.gpu}\n`);

for (const run of job.runs) {
	await seq.clearHistory();
	let n = 0, first = 0, last = 0;
	const t0 = performance.now();
	for await (const _ of seq.evaluate(run.ids, {temperature: 0, yieldEogToken: true})) {
		const now = performance.now();
		if (n === 0) first = now;
		last = now;
		n++;
		if (n >= job.decode + 1) break;
	}
	if (run.warmup) continue;
	process.stdout.write(JSON.stringify({prompt: run.ids.length, prefill_ms: first - t0, decode_tokens: n - 1, decode_ms: last - first}) + "\n");
}
await context.dispose();
await model.dispose();
await llama.dispose();
