//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) used by the process so far,
// which, unlike wall time, is not inflated when the machine is shared.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
