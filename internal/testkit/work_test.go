package testkit

import (
	"testing"
	"time"
)

// TestStartWork: a busy loop's work is counted, a sleep's is not.
func TestStartWork(t *testing.T) {
	work := StartWork()
	time.Sleep(300 * time.Millisecond)
	if d := work(); d > 200*time.Millisecond {
		t.Errorf("a 300 ms sleep counted %v of work", d)
	}
	work = StartWork()
	x := 0
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
		x++
	}
	if d := work(); d < 20*time.Millisecond {
		t.Errorf("200 ms of busy loop (%d turns) counted %v of work", x, d)
	}
}
