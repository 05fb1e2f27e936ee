// Measures @huggingface/transformers' encode speed on the text that
// BenchmarkEncode uses, for comparison. Install into a scratch folder, never
// into the repository:
//
//	mkdir -p /tmp/tfjs && cd /tmp/tfjs && npm install --ignore-scripts @huggingface/transformers@4.3.2
//	cd /path/to/repo && TOKENIZER_BENCH_TEXT=/tmp/tfjs/bench.txt go test ./tokenizer -run '^$' -bench '^BenchmarkEncode$' -cpu 1
//	cp tokenizer/testdata/jsbench/bench.mjs /tmp/tfjs/ && node /tmp/tfjs/bench.mjs /tmp/tfjs/bench.txt testdata/tokenizer
//
// It prints MB/s over wall time and over process CPU time (the best of four
// runs after a warm-up), and the token count, which must equal Go's.
import fs from 'node:fs';
import { PreTrainedTokenizer } from '@huggingface/transformers';

const [textPath, tokDir] = process.argv.slice(2);
const text = fs.readFileSync(textPath, 'utf8');
const bytes = Buffer.byteLength(text);
for (const name of ['llama3', 'qwen3']) {
  const dir = `${tokDir}/${name}`;
  const tok = new PreTrainedTokenizer(
    JSON.parse(fs.readFileSync(`${dir}/tokenizer.json`, 'utf8')),
    JSON.parse(fs.readFileSync(`${dir}/tokenizer_config.json`, 'utf8')));
  let n = 0, bestWall = Infinity, bestCPU = Infinity;
  for (let i = 0; i < 5; i++) {
    const c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
    n = tok.encode(text, { add_special_tokens: false }).length;
    const wall = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0), cpu = (c.user + c.system) / 1e6;
    if (i > 0) { bestWall = Math.min(bestWall, wall); bestCPU = Math.min(bestCPU, cpu); }
  }
  console.log(`transformers.js ${name}: ${n} tokens, ${(bytes / 1e6 / bestWall).toFixed(2)} MB/s, ${(bytes / 1e6 / bestCPU).toFixed(2)} MB/cpu-s`);
}
