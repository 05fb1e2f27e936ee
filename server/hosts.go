package server

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
)

// hostPolicy is the Host allow-list, the server's defence against DNS
// rebinding: a page of another site whose name its owner points at this
// server's address (127.0.0.1 included) reaches the server from the
// visitor's browser as the same origin, but its requests carry that
// site's name in Host. A browser sends an IP address in Host only for a
// URL that names one, which no DNS answer can change, so IP addresses are
// always allowed; names are allowed when listed.
type hostPolicy struct {
	any      bool            // -allowed-hosts '*'
	names    map[string]bool // lower case, no port, no trailing dot
	suffixes []string        // ".example.com" allows example.com and its subdomains
}

// newHostPolicy allows localhost, the machine's own name, the name of
// addr's host (when it is a name) and the names of extra: "*" (any Host),
// "name" or ".domain" (the domain and its subdomains).
func newHostPolicy(addr string, extra []string) (hostPolicy, error) {
	p := hostPolicy{names: map[string]bool{"localhost": true}}
	if h, err := os.Hostname(); err == nil && h != "" {
		p.names[normHost(h)] = true
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			p.names[normHost(host)] = true
		}
	}
	for _, e := range extra {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
		case e == "*":
			p.any = true
		case !validHostName(strings.TrimPrefix(e, ".")):
			return p, fmt.Errorf("-allowed-hosts: %q is not a host name (such as example.com), a domain (.example.com) or \"*\"", clipName(e))
		case strings.HasPrefix(e, "."):
			p.suffixes = append(p.suffixes, normHost(e))
		default:
			p.names[normHost(e)] = true
		}
	}
	return p, nil
}

// allows reports whether a request's Host (r.Host: a name or address,
// perhaps with a port) is served. An empty Host (HTTP/1.0) is: no browser
// sends one.
func (p hostPolicy) allows(hostport string) bool {
	if p.any || hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = normHost(host)
	if p.names[host] {
		return true
	}
	for _, s := range p.suffixes {
		if host == s[1:] || strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// normHost lower-cases a host name and drops a trailing dot.
func normHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

// validHostName reports whether s is a DNS name: dot-separated labels of
// letters, digits, '-' and '_'.
func validHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

// clipName cuts a name from a request or a flag for a message.
func clipName(s string) string {
	if len(s) > 100 {
		return s[:100] + "..."
	}
	return s
}
