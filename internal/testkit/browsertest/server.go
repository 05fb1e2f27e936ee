package browsertest

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ServerOptions configure StartServer. Empty fields get defaults: a fresh
// WebDir, the built wasm, an empty models folder, a free port.
type ServerOptions struct {
	Web, Wasm, Models string
	// Addr is host:port; "" picks a free port on 127.0.0.1. Restart a
	// stopped server on the same origin (Cache Storage is per origin) by
	// passing the first one's Addr.
	Addr string
	Args []string // more flags, such as -cors
}

// Server is the real static server (go run . ...) running as a child
// process, with its log captured.
type Server struct {
	URL  string // http://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT

	cmd  *exec.Cmd
	mu   sync.Mutex
	log  []string
	done chan struct{}
}

var servingLine = regexp.MustCompile(`on http://([^/\s]+)/`)

// StartServer builds and starts the server; it is stopped when the test
// ends.
func StartServer(t testing.TB, o ServerOptions) *Server {
	t.Helper()
	if o.Web == "" {
		o.Web = WebDir(t, nil)
	}
	if o.Wasm == "" {
		o.Wasm = Wasm(t)
	}
	if o.Models == "" {
		o.Models = t.TempDir()
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	args := append([]string{"-addr", o.Addr, "-web", o.Web, "-wasm", o.Wasm, "-models", o.Models}, o.Args...)
	var s *Server
	// A restarted server may find its port still in TIME_WAIT for a moment.
	for try := 0; ; try++ {
		var err error
		s, err = startServer(ServerBinary(t), args)
		if err == nil {
			break
		}
		if try == 20 {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(s.Stop)
	return s
}

func startServer(bin string, args []string) (*Server, error) {
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log = append(s.log, line)
			s.mu.Unlock()
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		cmd.Wait()
		close(s.done)
	}()
	select {
	case a := <-addr:
		s.Addr, s.URL = a, "http://"+a
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("the server exited:\n%s", strings.Join(s.Log(), "\n"))
	case <-time.After(30 * time.Second):
		s.Stop()
		return nil, fmt.Errorf("the server did not start:\n%s", strings.Join(s.Log(), "\n"))
	}
}

// Stop shuts the server down (SIGTERM, then SIGKILL after 10 s) and waits.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Log returns the server's log lines so far.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Requests returns the access-log lines whose text contains every one of
// the given substrings.
func (s *Server) Requests(substr ...string) []string {
	var out []string
	for _, l := range s.Log() {
		if matchAll(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func matchAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
