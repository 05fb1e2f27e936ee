// Command dist writes the web app as a static folder that any static host
// serves as is, without the Go server: the pages and scripts of web/, the
// wasm engine and the toolchain's wasm_exec.js, the converted model folders
// (shards checked against their sha256) with a models/index.json listing
// that the page's model picker reads, and precompressed .gz siblings (and
// .br when a brotli binary is on PATH) of the pages, scripts, JSON and the
// wasm, never of shards.
//
//	go run ./cmd/dist -o dist [-web web] [-wasm build/wasmllm.wasm] [-models models]
//	    [-docs README.md,ARCHITECTURE.md -docs-model MODEL.gguf]
//
// With -docs, the Markdown files go under docs/ with a page whose
// <wasmllm-search> searches them in the browser: their index is built at
// dist time with -docs-model, which the page then loads to embed queries.
//
// The output folder is replaced only when it is empty or was written by
// dist before. It reports the wasm's size raw and compressed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Out, "o", "dist", "output folder (replaced when it was written by dist before)")
	fs.StringVar(&o.Web, "web", "web", "folder of pages and scripts")
	fs.StringVar(&o.Wasm, "wasm", "build/wasmllm.wasm", "the engine built with GOOS=js GOARCH=wasm")
	fs.StringVar(&o.WasmExec, "wasm-exec", "", "wasm_exec.js of the toolchain that built the wasm (default: $(go env GOROOT)/lib/wasm/wasm_exec.js)")
	fs.StringVar(&o.Models, "models", "models", `folder of converted models to include ("" for none)`)
	docs := fs.String("docs", "", `comma-separated Markdown files written under docs/ as a live <wasmllm-search> example ("" for none)`)
	fs.StringVar(&o.DocsModel, "docs-model", "", "the text-embedding GGUF the docs example's index is built with and its page loads")
	brotli := fs.String("brotli", "auto", `brotli binary for .br siblings: "auto" (from PATH when present), "" (none) or a path`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dist: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	o.Brotli = *brotli
	if *docs != "" {
		o.Docs = strings.Split(*docs, ",")
	}
	if o.Brotli == "auto" {
		o.Brotli, _ = exec.LookPath("brotli")
	}
	if o.WasmExec == "" {
		p, err := WasmExecFromGOROOT()
		if err != nil {
			fmt.Fprintln(stderr, "dist:", err)
			return 1
		}
		o.WasmExec = p
	}
	r, err := Build(o)
	if err != nil {
		fmt.Fprintln(stderr, "dist:", err)
		var oe *OutputError
		if errors.As(err, &oe) {
			return 2
		}
		return 1
	}
	fmt.Fprint(stdout, r)
	return 0
}
