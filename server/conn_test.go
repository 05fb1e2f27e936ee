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
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
		{"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", 413},
		{"HEAD / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 413},
		{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc", 405},
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
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
	waitClosed(t, c, c, testLimits.ReadHeader+2*time.Second)
}

// TestStalledReaderDropped: a client that stops reading a large response
// is dropped after WriteIdle, not kept until it goes away.
func TestStalledReaderDropped(t *testing.T) {
	const size = 64 << 20
	addr, logs := startServe(t, smallSite(t, map[string]int64{"big.bin": size}))
	c := dialSmall(t, addr)
	io.WriteString(c, "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
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
	io.WriteString(c, "GET /big.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
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
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
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
