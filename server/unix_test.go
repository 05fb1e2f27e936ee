//go:build unix

package server

import (
	"errors"
	"log"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

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
			h.ServeHTTP(w, httptest.NewRequest("GET", "http://localhost"+p, nil))
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
	h.ServeHTTP(w, httptest.NewRequest("GET", "http://localhost/index.html", nil))
	if w.Code != 200 {
		t.Errorf("after: %d", w.Code)
	}
}

// setLimit sets an Rlimit field, which is int64 on some systems.
func setLimit[T int64 | uint64](p *T, v int) { *p = T(v) }
