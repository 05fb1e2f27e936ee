#!/usr/bin/env bash
# Writes the npm package of the browser engine into OUT (replaced):
# package.json, the ES modules (wasmllm.js: the OpenAI-shaped API;
# webllm.js: the WebLLM-shaped one), their .d.ts types, the worker and its
# classic scripts (worker.js, loader.js, wasm_exec.js), the engine
# (wasmllm.wasm) and the bundled model (models/stories260K). The modules find
# the worker and the wasm beside themselves (new URL(..., import.meta.url)),
# from any origin; `npm pack OUT` makes the tarball.
#
#   scripts/package.sh OUT WASM [WASM_EXEC]     (make package: build/package)
set -euo pipefail
out=${1:?usage: package.sh OUT WASM [WASM_EXEC]}
wasm=${2:?usage: package.sh OUT WASM [WASM_EXEC]}
wasm_exec=${3:-"$("${GO:-go}" env GOROOT)/lib/wasm/wasm_exec.js"}
version=${VERSION:-0.1.0}
root="$(cd "$(dirname "$0")/.." && pwd)"
web="$root/web"
for f in "$wasm" "$wasm_exec"; do
  [ -f "$f" ] || { echo "package: $f not found" >&2; exit 1; }
done
case "$out" in /|"$root"|"$web") echo "package: refusing to replace $out" >&2; exit 2;; esac
if [ -e "$out" ] && [ ! -f "$out/.wasmllm-package" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
  echo "package: $out holds other files; not replacing it" >&2; exit 2
fi
tmp="$out.tmp-$$"
rm -rf "$tmp"
mkdir -p "$tmp/models"
cp "$web/wasmllm.js" "$web/remote.js" "$web/stream.js" "$web/shared.js" "$web/shared-worker.js" "$web/wasmllm.d.ts" "$web/webllm.js" "$web/webllm.d.ts" "$web/worker.js" "$web/rank.js" "$web/loader.js" "$tmp/"
cp "$wasm_exec" "$tmp/wasm_exec.js"
chmod u+w "$tmp/wasm_exec.js"
cp "$wasm" "$tmp/wasmllm.wasm"
cp -R "$root/models/stories260K" "$tmp/models/stories260K"
cat > "$tmp/package.json" <<JSON
{
  "name": "wasmllm",
  "version": "$version",
  "description": "LLMs in the browser: Llama, Qwen3 and Qwen3-MoE on WebGPU (or the CPU) in a Web Worker, with an OpenAI-shaped API and a WebLLM-compatible one.",
  "type": "module",
  "main": "./wasmllm.js",
  "module": "./wasmllm.js",
  "types": "./wasmllm.d.ts",
  "exports": {
    ".": { "types": "./wasmllm.d.ts", "default": "./wasmllm.js" },
    "./wasmllm.js": { "types": "./wasmllm.d.ts", "default": "./wasmllm.js" },
    "./webllm": { "types": "./webllm.d.ts", "default": "./webllm.js" },
    "./webllm.js": { "types": "./webllm.d.ts", "default": "./webllm.js" },
    "./worker.js": "./worker.js",
    "./rank.js": "./rank.js",
    "./loader.js": "./loader.js",
    "./wasm_exec.js": "./wasm_exec.js",
    "./wasmllm.wasm": "./wasmllm.wasm",
    "./models/*": "./models/*",
    "./package.json": "./package.json"
  },
  "files": ["wasmllm.js", "remote.js", "stream.js", "shared.js", "shared-worker.js", "wasmllm.d.ts", "webllm.js", "webllm.d.ts", "worker.js", "rank.js", "loader.js", "wasm_exec.js", "wasmllm.wasm", "models/", "README.md"],
  "sideEffects": false,
  "keywords": ["llm", "webgpu", "wasm", "openai", "webllm", "browser"]
}
JSON
cat > "$tmp/README.md" <<'MD'
# wasmllm

LLMs in the browser, from one folder of static files: the engine runs in a Web Worker, on WebGPU
when the browser has a usable adapter, else on the CPU.

```js
import { createEngine } from "wasmllm";             // OpenAI-shaped (types: wasmllm.d.ts)
const engine = await createEngine({ model: "https://example.com/models/stories260K/" });
const r = await engine.completions.create({ prompt: "Once upon a time", max_tokens: 32 });

import { CreateMLCEngine } from "wasmllm/webllm";   // WebLLM-shaped (types: webllm.d.ts)
const llm = await CreateMLCEngine("stories260K");   // models/stories260K/ in this package
```

`wasmllm.js` finds `worker.js`, `loader.js`, `wasm_exec.js` and `wasmllm.wasm` beside itself
(`new URL(..., import.meta.url)`), also when it is imported from another origin (the server must
send CORS headers). With a bundler that moves modules, serve this folder's files as static assets
and pass `workerURL` and `wasmURL` (createEngine's options, or MLCEngineConfig's). Models are
folders written by wasmllm's `cmd/convert`.
MD
touch "$tmp/.wasmllm-package"
rm -rf "$out"
mv "$tmp" "$out"
echo "package: wrote $out (wasmllm@$version): $(find "$out" -type f | wc -l) files, $(du -sh "$out" | cut -f1)"
