package testkit

import "time"

// StartWork starts measuring the work a test does and returns the function
// that reads it: the process's CPU time (user + system) since the call,
// where the platform reports it, else the wall time. A bound on work ("a
// hostile template is refused within a second of CPU") holds however
// loaded the machine is, where a bound on wall time fails when other test
// processes share the cores (make test runs several at once).
func StartWork() func() time.Duration {
	start, ok := cpuTime()
	if !ok {
		t0 := time.Now()
		return func() time.Duration { return time.Since(t0) }
	}
	return func() time.Duration {
		now, _ := cpuTime()
		return now - start
	}
}
