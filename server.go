// Command wasmllm serves the wasmllm web app: the pages under -web, the wasm
// build at /wasmllm.wasm, and converted model folders under /models/ (see
// package server).
//
//	go run . -addr 127.0.0.1:8080 -models DIR [-web web] [-wasm build/wasmllm.wasm] [-cors ORIGIN|*] [-max-conns N] [-max-client-conns N]
//	         [-allowed-hosts NAME,...]
//	         [-api [-api-context N] [-api-queue N] [-api-threads N] [-api-embed FILE]... | -upstream URL [-upstream-key-file FILE] [-upstream-timeout D]]
//	         [-api-key-file FILE | -no-api-key] [-max-body BYTES]
//
// With -api it also serves the OpenAI-compatible API at /v1/ on the native
// CPU engine, for the model folders of -models; with -upstream it proxies
// /v1/ to a vLLM (or any OpenAI-compatible) deployment instead (see package
// server/openai). -api-key-file (or the environment's WASMLLM_API_KEY)
// gives /v1/ a client key; without one, /v1/ is served on loopback
// addresses only, unless -no-api-key.
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

	"wasmllm/model"
	"wasmllm/server"
	"wasmllm/server/openai"
)

// maxKeyFile bounds what -upstream-key-file and -api-key-file read.
const maxKeyFile = 64 << 10

// apiKeyEnv is the environment variable that may hold the client key.
const apiKeyEnv = "WASMLLM_API_KEY"

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
	fs.IntVar(&c.Limits.MaxClientConns, "max-client-conns", 0, "connections served at once from one client address (0: an eighth of -max-conns, at least 16 of them); behind a reverse proxy, every client has the proxy's address: raise it to -max-conns")
	allowedHosts := fs.String("allowed-hosts", "", `comma-separated host names (NAME, or .DOMAIN for it and its subdomains) answered besides IP addresses, localhost, this machine's name and -addr's; "*" for any (no protection from DNS rebinding)`)
	fs.BoolVar(&c.API.Engine, "api", false, "serve the OpenAI-compatible API at /v1/ with the native CPU engine, for the models of -models (each loads on first use)")
	fs.IntVar(&c.API.Context, "api-context", 0, "with -api: each model's context (KV cache) in tokens (0: the model's maximum, at most 4096)")
	fs.IntVar(&c.API.Queue, "api-queue", openai.DefaultQueue, "with -api: requests that may wait for a model busy with another; more get 429")
	fs.IntVar(&c.API.Threads, "api-threads", 0, "with -api: CPU threads per model (0: all)")
	fs.StringVar(&c.API.KVDType, "api-kv-dtype", "", "with -api: each model's KV cache: f32 (the default), f16 (half the bytes) or q8 (8-bit with a scale per 32 values: 28% of f32's bytes for heads of 128)")
	fs.Func("api-embed", "with -api: a text-embedding GGUF (bert, nomic-bert, Qwen3-Embedding) served at /v1/embeddings as its file name without .gguf; repeat for more", func(v string) error {
		c.API.Embed = append(c.API.Embed, v)
		return nil
	})
	fs.StringVar(&c.API.Upstream, "upstream", "", "proxy /v1/ to this OpenAI-compatible server, such as vLLM at http://HOST:8000 (exclusive with -api)")
	keyFile := fs.String("upstream-key-file", "", "with -upstream: a file holding the upstream's API key, sent as Authorization: Bearer")
	apiKeyFile := fs.String("api-key-file", "", "with -api or -upstream: a file holding the key that clients of /v1/ must send as Authorization: Bearer KEY, or set "+apiKeyEnv+" (there is no -api-key: a key on the command line would show in ps to every user of the machine)")
	fs.BoolVar(&c.API.NoKey, "no-api-key", false, "with -api or -upstream: serve /v1/ without a client key even when -addr can be reached from other machines (anyone there can use it)")
	fs.DurationVar(&c.API.UpstreamTimeout, "upstream-timeout", openai.DefaultUpstreamTimeout, "with -upstream: the longest wait for the upstream's response header, and then for each piece of its body")
	fs.Int64Var(&c.API.MaxBody, "max-body", openai.DefaultMaxBody, "with -api or -upstream: the largest /v1/ request body in bytes")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		fs.Usage()
		return c, errors.New("unexpected arguments")
	}
	if *allowedHosts != "" {
		c.AllowedHosts = strings.Split(*allowedHosts, ",")
	}
	if err := checkFlags(&c, *keyFile, *apiKeyFile); err != nil {
		// The flag package prints its own errors; these are printed here.
		fmt.Fprintf(stderr, "wasmllm: %v\n", err)
		return c, err
	}
	return c, nil
}

// checkFlags checks the flags' values together and reads the key files
// (the client key from apiKeyFile or the environment's WASMLLM_API_KEY).
func checkFlags(c *server.Config, keyFile, apiKeyFile string) error {
	if c.MaxAge < 0 {
		return errors.New("-max-age must not be negative")
	}
	if c.Limits.MaxConns < 0 || c.Limits.MaxClientConns < 0 {
		return errors.New("-max-conns and -max-client-conns must not be negative")
	}
	if c.API.Engine && c.API.Upstream != "" {
		return errors.New("-api and -upstream are exclusive: serve the native engine or proxy to an upstream, not both")
	}
	if len(c.API.Embed) > 0 && !c.API.Engine {
		return errors.New("-api-embed needs -api")
	}
	if c.API.Context < 0 || c.API.Queue < 0 || c.API.Threads < 0 {
		return errors.New("-api-context, -api-queue and -api-threads must not be negative")
	}
	if _, ok := model.ParseKVDType(c.API.KVDType); c.API.KVDType != "" && !ok {
		return fmt.Errorf("-api-kv-dtype %q: want f32, f16 or q8", c.API.KVDType)
	}
	if c.API.MaxBody <= 0 {
		return errors.New("-max-body must be positive")
	}
	if c.API.UpstreamTimeout <= 0 {
		return errors.New("-upstream-timeout must be positive")
	}
	if c.API.Upstream != "" {
		if _, err := openai.ParseUpstream(c.API.Upstream); err != nil {
			return err
		}
	}
	if keyFile != "" {
		if c.API.Upstream == "" {
			return errors.New("-upstream-key-file needs -upstream")
		}
		key, err := readKey("-upstream-key-file", keyFile)
		if err != nil {
			return err
		}
		c.API.UpstreamKey = key
	}
	if err := clientKey(c, apiKeyFile); err != nil {
		return err
	}
	return c.Check()
}

// clientKey sets c.API.Key from -api-key-file or, without it, from
// WASMLLM_API_KEY (ignored when nothing serves /v1/).
func clientKey(c *server.Config, file string) error {
	env := os.Getenv(apiKeyEnv)
	api := c.API.Engine || c.API.Upstream != ""
	switch {
	case file != "" && !api:
		return errors.New("-api-key-file needs -api or -upstream")
	case file != "" && env != "":
		return fmt.Errorf("-api-key-file and %s both give a client key: give one", apiKeyEnv)
	case file != "":
		key, err := readKey("-api-key-file", file)
		if err != nil {
			return err
		}
		c.API.Key = key
	case env != "" && api:
		key, err := checkKey(strings.TrimSpace(env))
		if err != nil {
			return fmt.Errorf("%s: %v", apiKeyEnv, err)
		}
		c.API.Key = key
	}
	return nil
}

// readKey reads an API key file for flag: one token, surrounding white
// space (a trailing newline) dropped.
func readKey(flag, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	if len(data) > maxKeyFile {
		return "", fmt.Errorf("%s %s: over %d bytes: not a key", flag, path, maxKeyFile)
	}
	key, err := checkKey(strings.TrimSpace(string(data)))
	if err != nil {
		return "", fmt.Errorf("%s %s: %v", flag, path, err)
	}
	return key, nil
}

// checkKey checks that key is one word that can go in a header: printable
// ASCII, no space.
func checkKey(key string) (string, error) {
	switch {
	case key == "":
		return "", errors.New("is empty")
	case strings.IndexFunc(key, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0:
		return "", errors.New("the key must be one word of printable ASCII, with no space or control character")
	}
	return key, nil
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
