package server

import (
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// limitListener accepts at most n connections at once: Accept waits for a
// served connection to close first (the waiting clients stay in the
// kernel's backlog). Like golang.org/x/net/netutil.LimitListener, but it
// also serves at most perClient of them from one client address (an IPv4
// address, an IPv6 /64: one host's share), refusing more at once with a
// 429, so that one client cannot hold every connection and lock the others
// out (issue 39 #7: 600 slow POSTs from one address made every new client
// wait 30 s).
type limitListener struct {
	net.Listener
	slots     chan struct{} // one element per connection being served
	done      chan struct{} // closed by Close
	once      sync.Once
	perClient int          // 0: no cap per client
	refused   func(string) // called with the client of each refused connection (Accept's goroutine)

	mu      sync.Mutex
	clients map[string]int // connections served per client key
}

func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{}), clients: map[string]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		key := clientKeyOf(c.RemoteAddr())
		l.mu.Lock()
		full := l.perClient > 0 && l.clients[key] >= l.perClient
		if !full {
			l.clients[key]++
		}
		l.mu.Unlock()
		if full {
			refuseConn(c)
			<-l.slots
			if l.refused != nil {
				l.refused(key)
			}
			continue
		}
		return &limitConn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

// release gives back the slot of a connection of client key.
func (l *limitListener) release(key string) {
	l.mu.Lock()
	if l.clients[key]--; l.clients[key] <= 0 {
		delete(l.clients, key)
	}
	l.mu.Unlock()
	<-l.slots
}

// Close stops the listener, waking an Accept that waits for a slot.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.done) })
	return err
}

// clientKeyOf is what the per-client cap counts by: the IPv4 address, or
// the /64 of an IPv6 address (a host is given a whole /64, so counting
// single IPv6 addresses would cap nothing).
func clientKeyOf(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := ta.AddrPort().Addr().Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// tooManyConns is the answer on a refused connection, written before the
// request is read: a client reading it sees why, and when to try again.
var tooManyConns = func() string {
	const body = "429 too many connections from your address\n"
	return "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

// refuseConn answers a connection over its client's cap and closes it.
// The write goes to an empty socket buffer, so it does not wait; the
// deadline makes sure.
func refuseConn(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	io.WriteString(c, tooManyConns)
	c.Close()
}

// refusalLog returns a limitListener.refused that logs refused connections
// at most once per refusalLogEvery, with how many there were.
func refusalLog(logger *log.Logger) func(string) {
	var last time.Time
	var n int
	return func(client string) {
		n++
		if now := time.Now(); now.Sub(last) >= refusalLogEvery {
			logger.Printf("refused %d connection(s) over the cap per client address (last from %s)", n, client)
			last, n = now, 0
		}
	}
}

// refusalLogEvery spaces the log lines of refused connections.
const refusalLogEvery = 10 * time.Second

// limitConn gives its listener's slot back when closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// ReadFrom keeps the TCP connection's sendfile path for file bodies.
func (c *limitConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(c.Conn, r)
}

// CloseWrite lets net/http half-close the connection before closing it
// (so that an unread request body does not reset the response).
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// writeChunk is how much of a response one write deadline covers: a client
// must take writeChunk bytes per WriteIdle (64 KiB per 30 s, about 2 KiB/s)
// to keep its connection.
const writeChunk = 64 << 10

// progressWriter gives every write of a response at most idle to complete,
// writing in chunks of writeChunk and extending the connection's write
// deadline before each: a client that stops reading is dropped after idle,
// one that reads steadily, however slowly, gets the whole body.
type progressWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func newProgressWriter(w http.ResponseWriter, idle time.Duration) *progressWriter {
	pw := &progressWriter{ResponseWriter: w, rc: http.NewResponseController(w), idle: idle}
	pw.extend() // covers a response with no body, written after the handler
	return pw
}

// extend moves the write deadline to idle from now. Writers without
// deadlines (httptest.ResponseRecorder) are left alone.
func (w *progressWriter) extend() {
	w.rc.SetWriteDeadline(time.Now().Add(w.idle))
}

func (w *progressWriter) Write(p []byte) (int, error) {
	var n int
	for len(p) > 0 {
		c := p[:min(len(p), writeChunk)]
		w.extend()
		m, err := w.ResponseWriter.Write(c)
		n += m
		if err != nil {
			return n, err
		}
		p = p[len(c):]
	}
	return n, nil
}

// ReadFrom copies r in chunks of writeChunk through the underlying
// ReaderFrom (sendfile for a file). A *io.LimitedReader, as io.CopyN and so
// http.ServeContent pass, is unwrapped so that each chunk still reaches
// sendfile as a file under one LimitedReader.
func (w *progressWriter) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		rf = writerReaderFrom{w.ResponseWriter}
	}
	src, left := r, int64(-1) // -1: until EOF
	if lr, ok := r.(*io.LimitedReader); ok {
		src, left = lr.R, max(lr.N, 0)
		defer func() { lr.N = left }()
	}
	var total int64
	for left != 0 {
		want := int64(writeChunk)
		if left > 0 {
			want = min(want, left)
		}
		w.extend()
		n, err := rf.ReadFrom(&io.LimitedReader{R: src, N: want})
		total += n
		if left > 0 {
			left -= n
		}
		if err != nil || n < want { // an error, or src's end
			return total, err
		}
	}
	return total, nil
}

// Unwrap lets http.ResponseController reach the connection.
func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writerReaderFrom copies with plain Writes, for a ResponseWriter that is no
// io.ReaderFrom.
type writerReaderFrom struct{ w io.Writer }

func (c writerReaderFrom) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{c.w}, r)
}
