//go:build unix

package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
