// Command wasmllm serves the wasmllm web app: the pages under -web, the wasm
// build at /wasmllm.wasm, and converted model folders under /models/.
//
//	go run . -addr 127.0.0.1:8080 -models DIR [-web web] [-wasm build/wasmllm.wasm] [-cors ORIGIN|*]
//
// Every response is cross-origin isolated (COOP/COEP). Content-hashed shards
// are cached forever, everything else briefly and revalidated by ETag.
// SIGINT or SIGTERM shuts the server down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// shutdownTimeout bounds how long in-flight requests may run after a signal.
const shutdownTimeout = 10 * time.Second

// serverConfig holds the command-line settings.
type serverConfig struct {
	Addr   string
	Web    string        // folder served at /
	Wasm   string        // file served at /wasmllm.wasm
	Models string        // folder whose subfolders are served at /models/NAME/
	CORS   string        // "", "*", or comma-separated origins
	MaxAge time.Duration // Cache-Control max-age of pages and manifests
}

func parseFlags(args []string, stderr io.Writer) (serverConfig, error) {
	var c serverConfig
	fs := flag.NewFlagSet("wasmllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&c.Web, "web", "web", "folder of pages and scripts served at /")
	fs.StringVar(&c.Wasm, "wasm", "build/wasmllm.wasm", "wasm build served at /wasmllm.wasm (with .br/.gz siblings when present)")
	fs.StringVar(&c.Models, "models", "models", "folder of converted models, each served at /models/NAME/")
	fs.StringVar(&c.CORS, "cors", "", `allow cross-origin requests from these comma-separated origins, or "*" (off by default)`)
	fs.DurationVar(&c.MaxAge, "max-age", time.Minute, "Cache-Control max-age of pages, manifests and the wasm")
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
	if err := run(ctx, cfg, logger); err != nil {
		logger.Print(err)
		os.Exit(1)
	}
}

// run serves cfg until ctx is done.
func run(ctx context.Context, cfg serverConfig, logger *log.Logger) error {
	h, err := newHandler(cfg, logger)
	if err != nil {
		return err
	}
	for _, p := range []struct{ what, path string }{{"-web", cfg.Web}, {"-wasm", cfg.Wasm}, {"-models", cfg.Models}} {
		if _, err := os.Stat(p.path); err != nil {
			logger.Printf("warning: %s %s: %v", p.what, p.path, err)
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	logger.Printf("serving %s, %s and models from %s on http://%s/", cfg.Web, cfg.Wasm, cfg.Models, ln.Addr())
	return serve(ctx, ln, h, logger)
}

// serve runs an HTTP server on ln until ctx is done, then lets in-flight
// requests finish (up to shutdownTimeout).
func serve(ctx context.Context, ln net.Listener, h http.Handler, logger *log.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          logger,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Print("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	if err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Print("stopped")
	return nil
}
