//go:build unix

package main

import (
	"bufio"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

// TestMain lets the test binary run the real main, for TestSignals.
func TestMain(m *testing.M) {
	if os.Getenv("WASMLLM_SERVER_MAIN") == "1" {
		os.Args = append([]string{"wasmllm"}, strings.Fields(os.Getenv("WASMLLM_SERVER_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSignals starts the server as a process, fetches a page, and stops it
// with SIGINT and with SIGTERM: it must log the shutdown and exit 0.
func TestSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			web := t.TempDir()
			os.WriteFile(filepath.Join(web, "index.html"), []byte("hello\n"), 0o644)
			cmd := exec.Command(os.Args[0], "-test.run=XXX")
			cmd.Env = append(os.Environ(), "WASMLLM_SERVER_MAIN=1",
				"WASMLLM_SERVER_ARGS=-addr 127.0.0.1:0 -web "+web+" -models "+filepath.Join(web, "none"))
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			addrRE := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)/`)
			var addr string
			var log []string
			for addr == "" {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("server exited:\n%s", strings.Join(log, "\n"))
					}
					log = append(log, l)
					if m := addrRE.FindStringSubmatch(l); m != nil {
						addr = m[1]
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("no listening line:\n%s", strings.Join(log, "\n"))
				}
			}
			resp, err := http.Get("http://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "hello\n" {
				t.Fatalf("got %q", b)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for l := range lines {
				log = append(log, l)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit: %v\n%s", err, strings.Join(log, "\n"))
			}
			all := strings.Join(log, "\n")
			if !strings.Contains(all, "GET / 200 6 - ") || !strings.Contains(all, "shutting down") || !strings.Contains(all, "stopped") {
				t.Errorf("log:\n%s", all)
			}
		})
	}
}

// TestOutOfFilesIs503 runs the process out of file descriptors (a lowered
// RLIMIT_NOFILE, every descriptor under it taken) and requests a page and
// the listing: they are 503 with Retry-After, not 404 as when opening the
// file failing looked like a missing file. The limit is restored after.
func TestOutOfFilesIs503(t *testing.T) {
	cfg := smallSite(t, nil)
	var logs syncBuffer
	h, err := newHandler(cfg, log.New(&logs, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Skip(err)
	}
	highest := 0
	for _, e := range fds {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			highest = max(highest, n)
		}
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Skip(err)
	}
	low := highest + 8
	if uint64(old.Cur) <= uint64(low) {
		t.Skipf("open-file limit %d already low", old.Cur)
	}
	statuses := map[string]*httptest.ResponseRecorder{}
	func() {
		lowered := old
		setLimit(&lowered.Cur, low)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
			t.Skip(err)
		}
		defer func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
				t.Fatalf("restoring the open-file limit: %v", err)
			}
		}()
		var fill []*os.File
		defer func() {
			for _, f := range fill {
				f.Close()
			}
		}()
		for {
			f, err := os.Open(os.DevNull)
			if err != nil {
				if !errors.Is(err, syscall.EMFILE) {
					t.Fatalf("filling descriptors: %v", err)
				}
				break
			}
			if fill = append(fill, f); len(fill) > 1000 {
				t.Fatal("the lowered limit does not hold")
			}
		}
		for _, p := range []string{"/index.html", "/models/"} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
			statuses[p] = w
		}
	}()
	for p, w := range statuses {
		if w.Code != 503 || w.Header().Get("Retry-After") == "" {
			t.Errorf("%s out of files: %d Retry-After %q, want 503", p, w.Code, w.Header().Get("Retry-After"))
		}
	}
	if !strings.Contains(logs.String(), "too many open files") {
		t.Errorf("log:\n%s", logs.String())
	}
	// With descriptors back, the page is served.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/index.html", nil))
	if w.Code != 200 {
		t.Errorf("after: %d", w.Code)
	}
}

// setLimit sets an Rlimit field, which is int64 on some systems.
func setLimit[T int64 | uint64](p *T, v int) { *p = T(v) }
