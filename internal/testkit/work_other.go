//go:build !linux && !darwin

package testkit

import "time"

// cpuTime: this platform (js/wasm in a browser) reports no CPU time.
func cpuTime() (time.Duration, bool) { return 0, false }
