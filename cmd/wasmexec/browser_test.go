package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"wasmllm/internal/testkit"
)

// TestMain lets the tests run this test binary as the wasmexec command.
func TestMain(m *testing.M) {
	if os.Getenv("WASMEXEC_TEST_AS_MAIN") == "1" {
		os.Exit(run())
	}
	os.Exit(m.Run())
}

var (
	progOnce sync.Once
	progPath string
	progErr  error
)

// buildProg compiles testdata/prog for GOOS=js once per test binary.
func buildProg(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	_, err := findBrowser("")
	testkit.Need(t, err == nil, "%v", err)
	progOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wasmexec-test")
		if err != nil {
			progErr = err
			return
		}
		progPath = filepath.Join(dir, "prog.wasm")
		cmd := exec.Command("go", "build", "-o", progPath, "./testdata/prog")
		cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
		if out, err := cmd.CombinedOutput(); err != nil {
			progErr = errors.New(string(out))
		}
	})
	if progErr != nil {
		t.Fatalf("building testdata/prog: %v", progErr)
	}
	return progPath
}

// runner runs the wasmexec command on the test program in the current
// directory, with extra environment variables.
func runner(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-timeout", "60s"}, args...)...)
	cmd.Env = append(append(os.Environ(), "WASMEXEC_TEST_AS_MAIN=1"), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func TestRunEcho(t *testing.T) {
	prog := buildProg(t)
	out, errOut, code := runner(t, []string{"WASMLLM_TEST=x y", "HOME=/secret"}, prog, "echo", "a b", "-test.v")
	if code != 7 {
		t.Errorf("exit code %d, want 7; stderr:\n%s", code, errOut)
	}
	want := "args=[\"a b\" \"-test.v\"]\nWASMLLM_TEST=\"x y\" HOME=\"\"\n"
	if out != want {
		t.Errorf("stdout = %q, want %q", out, want)
	}
	if errOut != "on stderr\n" {
		t.Errorf("stderr = %q", errOut)
	}
}

func TestRunFetchRepoFile(t *testing.T) {
	prog := buildProg(t)
	// The test's cwd is cmd/wasmexec, so the repository root is two levels up.
	out, errOut, code := runner(t, nil, prog, "fetch",
		"/fs/cmd/wasmexec/testdata/prog/main.go", "/fs/go.mod", "/fs/../../etc/passwd", "/fs/cmd/wasmexec/nope")
	want := "/fs/cmd/wasmexec/testdata/prog/main.go 200\n/fs/go.mod 200\n/fs/../../etc/passwd 404\n/fs/cmd/wasmexec/nope 404\n"
	if code != 0 || out != want {
		t.Errorf("code %d stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errOut)
	}
}

func TestRunAllowWrite(t *testing.T) {
	prog := buildProg(t)
	out := filepath.Join(t.TempDir(), "out.txt")
	stdout, errOut, code := runner(t, nil, "-allow-write", out, prog, "write", "hello", out)
	want := "6 <nil>\ntrue open " + out + ".other: Permission denied\n"
	if code != 0 || stdout != want {
		t.Errorf("code %d stdout %q, want %q; stderr:\n%s", code, stdout, want, errOut)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "hello+" {
		t.Errorf("the file holds %q, %v; want \"hello+\"", b, err)
	}
	if _, err := os.Stat(out + ".other"); err == nil {
		t.Error("a file that was not allowed was created")
	}
}

// TestRunCwd checks that the program's working directory is the runner's, so
// relative paths mean what they mean natively.
func TestRunCwd(t *testing.T) {
	prog := buildProg(t)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runner(t, nil, prog, "cwd")
	if want := wd + " <nil>\ntrue <nil>\n"; code != 0 || out != want {
		t.Errorf("code %d stdout %q, want %q; stderr:\n%s", code, out, want, errOut)
	}
}

func TestRunPanicExitCode(t *testing.T) {
	prog := buildProg(t)
	_, errOut, code := runner(t, nil, prog, "panic")
	if code != 2 || !strings.Contains(errOut, "panic: boom") || !strings.Contains(errOut, "main.main()") {
		t.Errorf("code %d, stderr:\n%s", code, errOut)
	}
}

func TestRunUncaughtExceptionIsFatal(t *testing.T) {
	prog := buildProg(t)
	_, errOut, code := runner(t, nil, prog, "throw")
	if code != 1 || !strings.Contains(errOut, "uncaught exception") || !strings.Contains(errOut, "thrown in page") {
		t.Errorf("code %d, stderr:\n%s", code, errOut)
	}
}

func TestRunHangTimesOutWithStacks(t *testing.T) {
	prog := buildProg(t)
	_, errOut, code := runner(t, []string{"WASMEXEC_TIMEOUT=3s"}, "-timeout", "3s", prog, "hang")
	if code != 1 || !strings.Contains(errOut, "timed out after 3s") || !strings.Contains(errOut, "goroutine 1 [select (no cases)]") {
		t.Errorf("code %d, stderr:\n%s", code, errOut)
	}
}

func TestRunBusyTimesOut(t *testing.T) {
	prog := buildProg(t)
	_, errOut, code := runner(t, nil, "-timeout", "3s", prog, "busy")
	if code != 1 || !strings.Contains(errOut, "timed out after 3s") {
		t.Errorf("code %d, stderr:\n%s", code, errOut)
	}
}

func TestRunWebGPUPresent(t *testing.T) {
	prog := buildProg(t)
	out, errOut, code := runner(t, nil, prog, "webgpu")
	if code != 0 || out != "navigator.gpu: true\n" {
		t.Errorf("code %d stdout %q; stderr:\n%s", code, out, errOut)
	}
}

func TestMissingBrowser(t *testing.T) {
	_, errOut, code := runner(t, []string{"WASMEXEC_BROWSER=/nonexistent/chromium"}, os.Args[0], "echo")
	if code != 1 || !strings.Contains(errOut, "/nonexistent/chromium") {
		t.Errorf("code %d, stderr:\n%s", code, errOut)
	}
}
