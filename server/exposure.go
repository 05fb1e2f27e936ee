package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// lookupTimeout bounds the name lookup of a named -addr host.
const lookupTimeout = 5 * time.Second

// Check refuses settings that would hand the API to anyone: /v1/ served
// on an address other machines can reach without a client key (unless
// API.NoKey says so on purpose), and -cors '*' with an upstream key but no
// client key (any web page could spend the upstream's key through its
// visitors' browsers). Run calls it before listening.
func (c Config) Check() error {
	a := c.API
	if a.NoKey && a.Key != "" {
		return errors.New("-no-api-key with a client key (-api-key-file or WASMLLM_API_KEY): choose one")
	}
	if !a.enabled() || a.Key != "" {
		return nil
	}
	if c.corsAny() && a.UpstreamKey != "" {
		return errors.New(`-cors '*' with -upstream-key-file lets every web page spend the upstream's key through its visitors' browsers: ` +
			`give clients a key of their own (-api-key-file FILE or WASMLLM_API_KEY), or list the pages' origins in -cors`)
	}
	if !a.NoKey && exposed(c.Addr) {
		return fmt.Errorf("-addr %s can be reached from other machines, and /v1/ would answer anyone there: "+
			"give clients a key (-api-key-file FILE or WASMLLM_API_KEY), listen on 127.0.0.1, "+
			"or pass -no-api-key to serve it without one on purpose", c.Addr)
	}
	return nil
}

// warnings are what Run logs about settings it accepts but that expose
// more than the defaults do.
func (c Config) warnings() []string {
	var w []string
	a := c.API
	open := a.enabled() && a.Key == ""
	if exposed(c.Addr) {
		switch {
		case open:
			w = append(w, fmt.Sprintf("warning: /v1/ answers anyone who can reach %s, without a key (-no-api-key)", c.Addr))
		case a.enabled():
			w = append(w, fmt.Sprintf("note: %s can be reached from other machines: the files are served to all, /v1/ to clients with the key", c.Addr))
		default:
			w = append(w, fmt.Sprintf("note: %s can be reached from other machines, which are all served the files", c.Addr))
		}
	}
	if open && c.corsAny() {
		w = append(w, "warning: -cors '*' without a client key: every web page a visitor of this machine opens can use /v1/")
	}
	if open && slices.Contains(c.AllowedHosts, "*") {
		w = append(w, "warning: -allowed-hosts '*' without a client key: a web page can reach /v1/ by DNS rebinding")
	}
	return w
}

// corsAny reports whether -cors lets every origin read responses.
func (c Config) corsAny() bool {
	for _, o := range strings.Split(c.CORS, ",") {
		if strings.TrimSpace(o) == "*" {
			return true
		}
	}
	return false
}

// exposed reports whether a listen address reaches beyond this machine:
// all interfaces (no host, 0.0.0.0, ::), an address that is not loopback,
// or a name that resolves to one (or does not resolve).
func exposed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip, err := netip.ParseAddr(host); err == nil {
		return !ip.Unmap().IsLoopback()
	}
	switch h := normHost(host); {
	case h == "":
		return true
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return true
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return true
		}
	}
	return false
}
