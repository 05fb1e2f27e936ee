//go:build unix

package server

import "syscall"

// openFileLimit returns the process's soft limit on open files (0: unknown
// or unlimited).
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	if cur := uint64(rl.Cur); cur < 1<<40 { // RLIM_INFINITY is all ones
		return cur
	}
	return 0
}
