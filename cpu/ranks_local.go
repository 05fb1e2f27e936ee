package cpu

import (
	"sync"

	"wasmllm/loader"
)

// NewLocalRanks returns a one-thread Backend whose large weights are split
// across o.Ranks ranks that are goroutines of this process: the browser's
// tensor-parallel layout (ranks_js.go) without the workers, for tests and
// for measuring the split natively.
func NewLocalRanks(o RankOptions) *Backend {
	b := New(1)
	b.minShard = o.MinShardBytes
	if b.minShard <= 0 {
		b.minShard = DefaultMinShardBytes
	}
	if o.Ranks > 1 {
		p := &localPeers{stores: make([]*rankStore, o.Ranks)}
		for r := 1; r < o.Ranks; r++ {
			p.stores[r] = newRankStore()
		}
		b.peers = p
	}
	return b
}

// localPeers runs each peer's jobs in a goroutine of its own.
type localPeers struct {
	stores []*rankStore // [0] unused
	wg     sync.WaitGroup
	res    [][]float32
	errs   []error
}

func (p *localPeers) ranks() int { return len(p.stores) }

func (p *localPeers) store(r, id, lo int, w *loader.Tensor) error {
	if err := p.stores[r].store(id, lo, w); err != nil {
		return &RankError{Rank: r, Op: "store", Reason: err.Error()}
	}
	return nil
}

func (p *localPeers) start(j *peerJob) error {
	n := len(p.stores)
	p.res, p.errs = make([][]float32, n), make([]error, n)
	p.wg.Add(n - 1)
	for r := 1; r < n; r++ {
		go func() {
			defer p.wg.Done()
			p.res[r], p.errs[r] = p.stores[r].run(j)
		}()
	}
	return nil
}

func (p *localPeers) wait(got func(rank int, res []float32)) error {
	p.wg.Wait()
	for r := 1; r < len(p.stores); r++ {
		if p.errs[r] != nil {
			return &RankError{Rank: r, Op: "job", Reason: p.errs[r].Error()}
		}
		got(r, p.res[r])
	}
	return nil
}

func (p *localPeers) fits(K, rows int) int { return 1 << 30 }

func (p *localPeers) close() {}
