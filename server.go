// Command wasmllm serves the wasmllm web app: the pages under -web, the wasm
// build at /wasmllm.wasm, and converted model folders under /models/ (see
// package server).
//
//	go run . -addr 127.0.0.1:8080 -models DIR [-web web] [-wasm build/wasmllm.wasm] [-cors ORIGIN|*] [-max-conns N]
//
// SIGINT or SIGTERM shuts the server down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"wasmllm/server"
)

func parseFlags(args []string, stderr io.Writer) (server.Config, error) {
	var c server.Config
	fs := flag.NewFlagSet("wasmllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&c.Web, "web", "web", "folder of pages and scripts served at /")
	fs.StringVar(&c.Wasm, "wasm", "build/wasmllm.wasm", "wasm build served at /wasmllm.wasm (with .br/.gz siblings when present)")
	fs.StringVar(&c.Models, "models", "models", "folder of converted models, each served at /models/NAME/")
	fs.StringVar(&c.CORS, "cors", "", `allow cross-origin requests from these comma-separated origins, or "*" (off by default)`)
	fs.DurationVar(&c.MaxAge, "max-age", time.Minute, "Cache-Control max-age of pages, manifests and the wasm")
	fs.IntVar(&c.Limits.MaxConns, "max-conns", 0, "connections served at once (0: as many as the open-file limit allows, at most 512)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return c, errors.New("unexpected arguments")
	}
	if c.MaxAge < 0 {
		return c, errors.New("-max-age must not be negative")
	}
	if c.Limits.MaxConns < 0 {
		return c, errors.New("-max-conns must not be negative")
	}
	return c, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	logger := log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills at once
	}()
	if err := server.Run(ctx, cfg, logger); err != nil {
		logger.Print(err)
		os.Exit(1)
	}
}
