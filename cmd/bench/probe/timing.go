//go:build js

package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// timer measures GPU work by wall time around a submit that ends in a small
// readback (WebGPU timestamps are an optional feature). The cost of the
// readback alone, syncMs, is measured first and subtracted.
type timer struct {
	syncMs float64
	// target is the wall time one timed submit should take, so that the
	// readback's cost is small beside it.
	target time.Duration
	trials int
}

// calls returns how many calls to put in one timed submit, given the time
// of a first submit of one call.
func (t *timer) calls(first time.Duration, max int) int {
	per := first.Seconds()*1e3 - t.syncMs
	if per <= 0 {
		return max
	}
	n := int(math.Ceil(float64(t.target.Milliseconds()) / per))
	return min(max, n)
}

// best runs step trials times and returns the smallest time, less syncMs,
// in milliseconds (never below a microsecond).
func (t *timer) best(step func() error) (float64, error) {
	times := make([]float64, 0, t.trials)
	for range t.trials {
		start := time.Now()
		if err := step(); err != nil {
			return 0, err
		}
		times = append(times, float64(time.Since(start).Microseconds())/1e3)
	}
	return max(slices.Min(times)-t.syncMs, 1e-3), nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1e3 }

func newRand() *rand.Rand { return rand.New(rand.NewPCG(2048, 8192)) }
