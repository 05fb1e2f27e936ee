package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wasmllm/server/openai"
)

// testLimits are limits small enough for tests to wait them out.
var testLimits = Limits{ReadHeader: 300 * time.Millisecond, Read: 300 * time.Millisecond, WriteIdle: 200 * time.Millisecond, Idle: 5 * time.Second}

// smallSite writes web/ with index.html and the files of the given sizes
// (sparse, so that big ones cost nothing), and returns its config.
func smallSite(t *testing.T, sizes map[string]int64) Config {
	t.Helper()
	dir := t.TempDir()
	web := filepath.Join(dir, "web")
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(web, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(web, "index.html"), []byte("<p>hi</p>\n"), 0o644)
	for name, size := range sizes {
		f, err := os.Create(filepath.Join(web, name))
		if err != nil {
			t.Fatal(err)
		}
		// A few bytes at the start and end, so that a truncated copy shows.
		f.WriteAt([]byte("head"), 0)
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("tail"), size-4)
		f.Close()
	}
	return Config{Web: web, Wasm: filepath.Join(dir, "none.wasm"), Models: filepath.Join(dir, "models"), MaxAge: time.Minute, Limits: testLimits}
}

// smallBuffers makes accepted TCP connections buffer little, so that a
// client that stops reading blocks the server's writes at once.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(32 << 10)
	}
	return c, err
}

// startServe runs serve with h and lim on a loopback port until the test
// ends, and returns the address and the server's log.
func startServe(t *testing.T, cfg Config) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	h, err := newHandler(cfg, log.New(logs, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, smallBuffers{ln}, h, cfg.Limits, log.New(logs, "", 0)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String(), logs
}

// dialSmall connects with a small receive buffer.
func dialSmall(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	tc.SetReadBuffer(32 << 10)
	t.Cleanup(func() { c.Close() })
	return tc
}

// waitClosed reads c until the server closes it, failing if that takes
// longer than within.
func waitClosed(t *testing.T, c net.Conn, r io.Reader, within time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", within)
	}
}

// waitLog waits for a log line containing substr and returns it.
func waitLog(t *testing.T, logs *syncBuffer, substr string, within time.Duration) string {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, substr) {
				return l
			}
		}
	}
	t.Fatalf("no log line with %q after %v:\n%s", substr, within, logs.String())
	return ""
}

// TestRequestBodyRefused: a request that declares a body and never sends it
// is answered and its connection closed at once, where before it was kept
// open forever (net/http waits to read the rest of a body).
func TestRequestBodyRefused(t *testing.T) {
	addr, _ := startServe(t, smallSite(t, nil))
	for _, tc := range []struct {
		req    string
		status int
	}{
		{"GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n", 413},
		{"HEAD / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n", 413},
		{"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\nabc", 405},
	} {
		c := dialSmall(t, addr)
		start := time.Now()
		io.WriteString(c, tc.req)
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.req, err)
		}
		if resp.StatusCode != tc.status || !resp.Close {
			t.Errorf("%q: %d, close %v; want %d and Connection: close", tc.req, resp.StatusCode, resp.Close, tc.status)
		}
		waitClosed(t, c, br, 2*time.Second)
		if d := time.Since(start); d > testLimits.Read+time.Second {
			t.Errorf("%q: closed after %v", tc.req, d)
		}
	}
}

// TestSlowHeaderDropped: a client that never finishes its request header
// is dropped after ReadHeader.
func TestSlowHeaderDropped(t *testing.T) {
	addr, _ := startServe(t, smallSite(t, nil))
	c := dialSmall(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n")
	waitClosed(t, c, c, testLimits.ReadHeader+2*time.Second)
}

// TestStalledReaderDropped: a client that stops reading a large response
// is dropped after WriteIdle, not kept until it goes away.
func TestStalledReaderDropped(t *testing.T) {
	const size = 64 << 20
	addr, logs := startServe(t, smallSite(t, map[string]int64{"big.bin": size}))
	c := dialSmall(t, addr)
	io.WriteString(c, "GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
	line := waitLog(t, logs, "GET /big.bin ", 5*time.Second)
	f := strings.Fields(line)
	if n, err := strconv.ParseInt(f[3], 10, 64); err != nil || n >= size {
		t.Errorf("log %q: want fewer than %d bytes sent", line, size)
	}
	// What was buffered arrives, then the connection ends short.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := io.Copy(io.Discard, c)
	if n >= size {
		t.Errorf("got %d bytes, the whole file", n)
	}
}

// TestSlowReaderGetsWholeFile: a client that reads steadily, far slower
// than loopback and for many times WriteIdle, still gets the whole file,
// since each chunk written moves the write deadline on.
func TestSlowReaderGetsWholeFile(t *testing.T) {
	const size = 4 << 20
	addr, logs := startServe(t, smallSite(t, map[string]int64{"big.bin": size}))
	c := dialSmall(t, addr)
	start := time.Now()
	io.WriteString(c, "GET /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	br := bufio.NewReaderSize(c, 16<<10)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	var head, tail []byte
	buf := make([]byte, 32<<10) // at most 32 KiB per 5 ms: 4 MiB take 640 ms or more
	for {
		m, err := resp.Body.Read(buf)
		if n < 4 {
			head = append(head, buf[:min(m, 4-int(n))]...)
		}
		n += int64(m)
		tail = append(tail, buf[max(0, m-4):m]...)
		tail = tail[max(0, len(tail)-4):]
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d bytes, %v: %v\n%s", n, time.Since(start), err, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	d := time.Since(start)
	if n != size || string(head) != "head" || string(tail) != "tail" {
		t.Errorf("got %d bytes, starting %q and ending %q", n, head, tail)
	}
	if l := waitLog(t, logs, "GET /big.bin ", time.Second); !strings.Contains(l, fmt.Sprintf(" 200 %d ", size)) {
		t.Errorf("log %q", l)
	}
	t.Logf("%d bytes in %v (write idle %v)", size, d, testLimits.WriteIdle)
	if d < 3*testLimits.WriteIdle {
		t.Errorf("the transfer took %v, too short to show the write deadline moving on", d)
	}
}

// TestConnectionCap: with MaxConns 2, a third connection is not served
// until one of the first two closes.
func TestConnectionCap(t *testing.T) {
	cfg := smallSite(t, nil)
	cfg.Limits.MaxConns = 2
	addr, _ := startServe(t, cfg)
	get := func(c net.Conn, br *bufio.Reader, within time.Duration) (*http.Response, error) {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(within))
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
		}
		return resp, err
	}
	var held []net.Conn
	for range 2 {
		c := dialSmall(t, addr)
		if _, err := get(c, bufio.NewReader(c), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		held = append(held, c) // kept alive, idle
	}
	third := dialSmall(t, addr)
	br := bufio.NewReader(third)
	_, err := get(third, br, 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("third connection served while two are open: %v", err)
	}
	held[0].Close()
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("third connection after one closed: %v", err)
	}
}

// TestLimitListenerClose: Close wakes an Accept waiting for a slot.
func TestLimitListenerClose(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(inner, 1)
	go net.Dial("tcp", inner.Addr().String())
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := ln.Accept()
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	ln.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting after Close")
	}
}

func TestConnCap(t *testing.T) {
	for nofile, want := range map[uint64]int{0: maxConnsDefault, 256: (256 - fdsReserved) / fdsPerConn, 1 << 20: maxConnsDefault, 10: 4} {
		if got := connCap(nofile); got != want {
			t.Errorf("connCap(%d) = %d, want %d", nofile, got, want)
		}
	}
}

// TestFileErrorStatus: only a request naming nothing servable is 404; the
// server running out of file descriptors, or any other failure of its own,
// is 503.
func TestFileErrorStatus(t *testing.T) {
	pe := func(err error) error { return &fs.PathError{Op: "openat", Path: "x", Err: err} }
	for _, tc := range []struct {
		err      error
		status   int
		shortage bool
	}{
		{pe(syscall.ENOENT), 404, false},
		{pe(fs.ErrNotExist), 404, false},
		{pe(syscall.ENOTDIR), 404, false},
		{pe(syscall.ELOOP), 404, false},
		{pe(syscall.ENAMETOOLONG), 404, false},
		{pe(errOutside), 404, false},
		{pe(errHidden), 404, false},
		{pe(errors.New("path escapes from parent")), 404, false},
		{pe(syscall.EMFILE), 503, true},
		{pe(syscall.ENFILE), 503, true},
		{pe(syscall.ENOMEM), 503, true},
		{pe(syscall.EIO), 503, false},
		{pe(syscall.EACCES), 503, false},
		{fmt.Errorf("listing: %w", pe(syscall.EMFILE)), 503, true},
	} {
		if got := fileErrorStatus(tc.err); got != tc.status || isShortage(tc.err) != tc.shortage {
			t.Errorf("%v: %d shortage %v, want %d %v", tc.err, got, isShortage(tc.err), tc.status, tc.shortage)
		}
	}
}

// dialFrom connects to addr from the loopback address src (127.0.0.0/8 is
// all loopback on Linux, so that tests can play several clients).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// needLoopbackRange skips where 127.0.0.2 cannot be a source address
// (only Linux routes all of 127.0.0.0/8 to loopback by default).
func needLoopbackRange(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("127.0.0.2 as a source address needs Linux")
	}
}

// getOn sends GET / on c and returns the status, or an error (a timeout
// when it is not served within).
func getOn(c net.Conn, br *bufio.Reader, within time.Duration) (int, error) {
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(within))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// TestClientConnectionCap: one address holds at most MaxClientConns
// connections; one more is answered 429 and closed at once, while another
// address is still served, and a slot given back is taken again.
func TestClientConnectionCap(t *testing.T) {
	needLoopbackRange(t)
	cfg := smallSite(t, nil)
	cfg.Limits.MaxConns, cfg.Limits.MaxClientConns = 8, 2
	addr, logs := startServe(t, cfg)
	var held []net.Conn
	for range 2 {
		c := dialFrom(t, "127.0.0.2", addr)
		if st, err := getOn(c, bufio.NewReader(c), 5*time.Second); err != nil || st != 200 {
			t.Fatalf("%d %v", st, err)
		}
		held = append(held, c) // kept alive, idle
	}
	start := time.Now()
	third := dialFrom(t, "127.0.0.2", addr)
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("a third connection from one address: %v %v", resp, err)
	}
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "too many connections from your address") {
		t.Errorf("429 body %q", b)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refused after %v", d)
	}
	other := dialFrom(t, "127.0.0.3", addr)
	if st, err := getOn(other, bufio.NewReader(other), time.Second); err != nil || st != 200 {
		t.Fatalf("another address while the first is at its cap: %d %v", st, err)
	}
	held[0].Close()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c := dialFrom(t, "127.0.0.2", addr)
		st, err := getOn(c, bufio.NewReader(c), time.Second)
		if err == nil && st == 200 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the slot given back is not served again: %d %v", st, err)
		}
		c.Close()
	}
	waitLog(t, logs, "over the cap per client address (last from 127.0.0.2)", time.Second)
}

func TestClientKeyOf(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.2:1234":             "127.0.0.2",
		"[::ffff:10.1.2.3]:80":       "10.1.2.3",
		"[2001:db8:1:2:aaaa::1]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:bbbb::9]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:443":      "2001:db8:1:3::/64",
		"[fe80::1%eth0]:80":          "fe80::/64",
	} {
		ta, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := clientKeyOf(ta); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
	if clientCap(512) != 64 || clientCap(100) != 16 || clientCap(4) != 4 {
		t.Errorf("clientCap: %d %d %d", clientCap(512), clientCap(100), clientCap(4))
	}
}

// slowPost opens a connection from src that sends a /v1/ request header
// announcing a body of size bytes, then one byte per every, until the
// server answers or closes. It reports when that happened and the status
// (0: closed without an answer).
func slowPost(t *testing.T, src, addr string, size int, every time.Duration) <-chan slowResult {
	c := dialFrom(t, src, addr)
	out := make(chan slowResult, 1)
	start := time.Now()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("{")); err != nil {
					return
				}
			}
		}
	}()
	go func() {
		defer close(stop)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		r := slowResult{after: time.Since(start)}
		if err == nil {
			r.status = resp.StatusCode
			b, _ := io.ReadAll(resp.Body)
			r.body = string(b)
		}
		out <- r
	}()
	return out
}

type slowResult struct {
	after  time.Duration
	status int
	body   string
}

// TestSlowPostLockout is issue 39 #7's repro, scaled down: slow POSTs (a
// 100 KB body, a byte at a time) from one address, more of them than the
// server has connections, used to hold every connection until Read ran
// out, so that every other client waited that long (30 s by default).
// Now that address gets MaxClientConns connections, the rest a 429 at
// once, and another client is served at once; the connections it holds
// are answered 408 after bodyTime, not extended by the trickle.
func TestSlowPostLockout(t *testing.T) {
	needLoopbackRange(t)
	up := newUpstreamRecorder(t)
	cfg := smallSite(t, nil)
	cfg.Limits = Limits{MaxConns: 8, MaxClientConns: 2, ReadHeader: 200 * time.Millisecond, Read: 10 * time.Second,
		WriteIdle: time.Second, Idle: 5 * time.Second}
	cfg.API = APIConfig{Upstream: up.srv.URL}
	addr, _ := startServe(t, cfg)
	const size = 100000
	want, _ := cfg.Limits.bodyTime(size, openai.DefaultMaxBody) // 200 ms + 1.5 s
	var attack []<-chan slowResult
	for range 12 {
		attack = append(attack, slowPost(t, "127.0.0.2", addr, size, 50*time.Millisecond))
	}
	time.Sleep(300 * time.Millisecond) // all connected and trickling
	start := time.Now()
	probe := dialFrom(t, "127.0.0.3", addr)
	st, err := getOn(probe, bufio.NewReader(probe), 5*time.Second)
	wait := time.Since(start)
	if err != nil || st != 200 {
		t.Fatalf("another client during the attack: %d %v after %v", st, err, wait)
	}
	t.Logf("another client served in %v during 12 slow POSTs from one address", wait)
	if wait > time.Second {
		t.Errorf("another client waited %v", wait)
	}
	var refused, timedOut int
	for _, a := range attack {
		r := <-a
		switch {
		case r.status == http.StatusTooManyRequests && r.after < time.Second:
			refused++
		case r.status == http.StatusRequestTimeout && strings.Contains(r.body, "did not arrive in time"):
			timedOut++
			if r.after < want-100*time.Millisecond || r.after > want+2*time.Second {
				t.Errorf("a slow body held its connection %v; bodyTime is %v (Read %v)", r.after, want, cfg.Limits.Read)
			}
		default:
			t.Errorf("slow POST: %d %q after %v", r.status, r.body, r.after)
		}
	}
	if refused != 10 || timedOut != 2 {
		t.Errorf("%d refused, %d timed out; want 10 and 2", refused, timedOut)
	}
	if s := up.seen(); len(s) != 0 {
		t.Errorf("partial bodies went upstream: %d", len(s))
	}
}

// TestSlowPostFromManyAddresses: when slow POSTs from several addresses,
// each within its cap, take every connection, a new client waits for the
// first of them to run out of bodyTime, not for Read.
func TestSlowPostFromManyAddresses(t *testing.T) {
	needLoopbackRange(t)
	up := newUpstreamRecorder(t)
	cfg := smallSite(t, nil)
	cfg.Limits = Limits{MaxConns: 8, MaxClientConns: 2, ReadHeader: 200 * time.Millisecond, Read: 10 * time.Second,
		WriteIdle: time.Second, Idle: 5 * time.Second}
	cfg.API = APIConfig{Upstream: up.srv.URL}
	addr, _ := startServe(t, cfg)
	var attack []<-chan slowResult
	for i := range 8 {
		attack = append(attack, slowPost(t, fmt.Sprintf("127.0.0.%d", 2+i/2), addr, 100000, 50*time.Millisecond))
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	probe := dialFrom(t, "127.0.0.9", addr)
	st, err := getOn(probe, bufio.NewReader(probe), 8*time.Second)
	wait := time.Since(start)
	if err != nil || st != 200 {
		t.Fatalf("a new client: %d %v after %v", st, err, wait)
	}
	want, _ := cfg.Limits.bodyTime(100000, openai.DefaultMaxBody)
	t.Logf("a new client served in %v while 8 slow POSTs from 4 addresses held every connection (bodyTime %v, Read %v)", wait, want, cfg.Limits.Read)
	if wait > want+2*time.Second {
		t.Errorf("a new client waited %v", wait)
	}
	for _, a := range attack {
		if r := <-a; r.status != http.StatusRequestTimeout {
			t.Errorf("slow POST: %d %q after %v", r.status, r.body, r.after)
		}
	}
}

func TestBodyTime(t *testing.T) {
	d := defaultLimits
	for _, c := range []struct {
		n    int64
		want time.Duration
	}{
		{0, 10 * time.Second},
		{100000, 10*time.Second + 100000*time.Second/minBodyRate},
		{640 << 10, 20 * time.Second}, // 10 s + 10 s: all Read leaves
		{-1, 20 * time.Second},        // chunked: as much as -max-body
		{1 << 62, 20 * time.Second},   // no overflow
	} {
		if got, ok := d.bodyTime(c.n, openai.DefaultMaxBody); !ok || got != c.want {
			t.Errorf("bodyTime(%d) = %v %v, want %v", c.n, got, ok, c.want)
		}
	}
	if _, ok := (Limits{ReadHeader: time.Second, Read: time.Second}).bodyTime(10, 100); ok {
		t.Error("bodyTime with no room past ReadHeader")
	}
}
