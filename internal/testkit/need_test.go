package testkit

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNeed runs a test that needs something missing in a child process:
// skipped outside CI, failed under CI=true.
func TestNeed(t *testing.T) {
	if os.Getenv("TESTKIT_NEED_CHILD") != "" {
		Need(t, true, "present")
		Need(t, false, "no %s on PATH", "frobnicate")
		t.Error("Need returned for a missing tool")
		return
	}
	for _, c := range []struct {
		ci, want string
		fails    bool
	}{
		{"", "--- SKIP: TestNeed", false},
		{"false", "--- SKIP: TestNeed", false},
		{"true", "--- FAIL: TestNeed", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeed$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTKIT_NEED_CHILD=1", "CI="+c.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "no frobnicate on PATH") {
			t.Errorf("CI=%q: err %v, output:\n%s", c.ci, err, out)
		}
		if c.fails && !strings.Contains(string(out), "CI=true, and a test cannot run") {
			t.Errorf("CI=true: the failure does not say why:\n%s", out)
		}
	}
}
