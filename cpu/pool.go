package cpu

import (
	"runtime"
	"sync"
)

// task is a unit of parallel work over an index range; worker identifies
// the goroutine so a task can use per-worker scratch.
type task interface {
	run(worker, lo, hi int)
}

type job struct {
	t      task
	lo, hi int
	worker int
	wg     *sync.WaitGroup
}

// pool is a fixed set of goroutines that split index ranges; Run allocates
// nothing, so the forward pass has no per-token allocation.
type pool struct {
	n    int
	jobs chan job
	wg   sync.WaitGroup
}

func newPool(n int) *pool {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	p := &pool{n: n, jobs: make(chan job, n)}
	for i := 0; i < n; i++ {
		go func() {
			for j := range p.jobs {
				j.t.run(j.worker, j.lo, j.hi)
				j.wg.Done()
			}
		}()
	}
	return p
}

// Run calls t.run over [0, n) split into at most p.n chunks of at least
// grain indices, and waits.
func (p *pool) Run(t task, n, grain int) {
	if n <= 0 {
		return
	}
	chunks := p.n
	if grain < 1 {
		grain = 1
	}
	if c := (n + grain - 1) / grain; c < chunks {
		chunks = c
	}
	if chunks <= 1 {
		t.run(0, 0, n)
		return
	}
	p.wg.Add(chunks)
	for c := 0; c < chunks; c++ {
		p.jobs <- job{t: t, lo: n * c / chunks, hi: n * (c + 1) / chunks, worker: c, wg: &p.wg}
	}
	p.wg.Wait()
}
