package cpu

import (
	"errors"
	"fmt"
	"time"

	"wasmllm/loader"
	"wasmllm/model"
)

// Tensor parallelism across ranks (browser: one Web Worker each, with its
// own instance of the engine's wasm; see ranks_js.go). Rank 0 is the
// Backend that runs the model; ranks 1..N-1 each hold a slice of the rows
// of every large weight matrix and compute those rows of each product with
// it: rank r holds rows [bounds[r], bounds[r+1]) of a weight of n rows, so
// the weights' memory is split N ways, not multiplied. Every output value
// is computed whole by one rank, with the same kernel as on one rank, so
// the results are bit-identical for every N (no reduction across ranks).
// Embedding lookups of rows a peer holds are answered by that peer.
//
// This is vLLM's ColumnParallelLinear with its outputs gathered, applied to
// every linear layer (q/k/v, o_proj, gate_up, down, lm_head) and to
// VocabParallelEmbedding; attention, norms and the MoE experts stay on
// rank 0.

// jobKind is what a peer does for a job.
type jobKind int32

const (
	jobMatMul jobKind = 1 + iota // its rows of x (T, K) · wᵀ: (T, rows) f32
	jobRows                      // the rows of ids it holds, dequantised: (T, K) f32
)

// peerJob is one op every peer runs on its rows of weight id.
type peerJob struct {
	kind jobKind
	id   int
	T, K int
	x    []float32 // (T, K), jobMatMul
	ids  []int32   // (T), jobRows
}

// peers are ranks 1..N-1, as rank 0's Backend sees them.
type peers interface {
	// ranks is N, rank 0 included.
	ranks() int
	// store hands rank r (1 <= r < N) weight id, rows [lo, lo+rows) of the
	// matrix, as w.
	store(r, id, lo int, w *loader.Tensor) error
	// start sends j to every peer; wait blocks until all have answered,
	// handing each one's result to got, or returns the first failure.
	start(j *peerJob) error
	wait(got func(rank int, res []float32)) error
	// fits is the most tokens of a job of K inputs and at most rows
	// output rows per peer that one exchange carries.
	fits(K, rows int) int
	close()
}

// RankError is a failure of a peer rank: one that died, did not answer,
// could not start, or refused a job. The request it happened in ends with
// it; the engine must be reloaded.
type RankError struct {
	Rank   int    // the rank (1..N-1), 0 for the group
	Op     string // what was asked: "start", "store", "matmul", "rows"
	Reason string
}

func (e *RankError) Error() string {
	if e.Rank == 0 {
		return fmt.Sprintf("cpu ranks: %s: %s", e.Op, e.Reason)
	}
	return fmt.Sprintf("cpu rank %d: %s: %s", e.Rank, e.Op, e.Reason)
}

// RankOptions configure a Backend whose weights are split across ranks.
type RankOptions struct {
	// Ranks is N, rank 0 included.
	Ranks int
	// MinShardBytes is the smallest weight split across the ranks (0:
	// DefaultMinShardBytes); tests lower it to 1 to split every matrix.
	MinShardBytes int
	// Timeout fails a job a peer has not answered in this long (browser
	// ranks; 0: a minute). StartTimeout bounds the workers' start (0: a
	// minute).
	Timeout, StartTimeout time.Duration
}

// DefaultMinShardBytes is the smallest weight split by default: below it
// one exchange (tens of microseconds between browser workers) costs more
// than the rows it shares out.
const DefaultMinShardBytes = 1 << 20

// shard records how a weight's rows are split: rank r holds rows
// [bounds[r], bounds[r+1]); rank 0's are the tensor's own storage.
type shard struct {
	id     int
	bounds []int
}

// rowBounds splits n rows N ways, in multiples of 16 where n allows.
func rowBounds(n, N int) []int {
	b := make([]int, N+1)
	for r := 1; r < N; r++ {
		b[r] = (n * r / N) &^ 15
	}
	b[N] = n
	return b
}

// Shardable reports whether a weight of type d, shape and stored size
// bytes is split across N ranks of a Backend whose MinShardBytes is
// minBytes: a matrix of at least minBytes, of at least 16 rows a rank,
// whose rows the matmul and the lookup read. A matrix of fewer than
// minShardCols columns (a Gated DeltaNet's conv kernel, read whole by its
// op) is not a linear layer's and stays whole. The fit check before a load
// counts the shares with it.
func Shardable(d loader.DType, shape []int, bytes int64, N, minBytes int) bool {
	if N < 2 || len(shape) != 2 || shape[0] < 16*N || shape[1] < minShardCols {
		return false
	}
	if minBytes <= 0 {
		minBytes = DefaultMinShardBytes
	}
	switch {
	case directType(d):
	case d == loader.F32, d == loader.F16, d == loader.BF16:
	default:
		return false
	}
	return bytes >= int64(minBytes)
}

func shardable(w *loader.Tensor, N, minBytes int) bool {
	n, err := w.Size()
	return err == nil && Shardable(w.DType, w.Shape, int64(n), N, minBytes)
}

// minShardCols is the fewest columns of a matrix split across ranks.
const minShardCols = 16

// MinShard is the smallest weight the backend splits across its ranks.
func (b *Backend) MinShard() int { return b.minShard }

// rowSlice is rows [lo, hi) of the matrix w as a tensor of its own, its
// bytes read through read (len(dst) bytes at offset off of w's data).
func rowSlice(w *loader.Tensor, read func(dst []byte, off int), lo, hi int) (*loader.Tensor, error) {
	K, n := w.Cols(), hi-lo
	out := &loader.Tensor{Name: w.Name, DType: w.DType, Shape: []int{n, K}}
	switch w.DType {
	case loader.Q4, loader.Q8:
		if K%32 != 0 {
			return nil, fmt.Errorf("cpu: %s: %d columns is not a multiple of 32", w.Name, K)
		}
		per := 16
		if w.DType == loader.Q8 {
			per = 32
		}
		g := K / 32
		scaleOff := (w.Rows()*g*per + 3) &^ 3
		qn := (n*g*per + 3) &^ 3
		out.Data = make([]byte, qn+(n*g*2+3)&^3)
		read(out.Data[:n*g*per], lo*g*per)
		read(out.Data[qn:qn+n*g*2], scaleOff+lo*g*2)
	default:
		rb, err := w.DType.RowBytes(K)
		if err != nil {
			return nil, fmt.Errorf("cpu: %s: %w", w.Name, err)
		}
		out.Data = make([]byte, n*rb)
		read(out.Data, lo*rb)
	}
	return out, nil
}

// uploadSharded keeps rows [0, bounds[1]) of w and stores the others on
// the peers.
func (b *Backend) uploadSharded(w *loader.Tensor) (*tensor, error) {
	data, err := w.Bytes()
	if err != nil {
		return nil, err
	}
	if err := w.CheckSize(); err != nil {
		return nil, err
	}
	full := &loader.Tensor{Name: w.Name, DType: w.DType, Shape: w.Shape, Data: data}
	return b.uploadRows(full, func(dst []byte, off int) { copy(dst, data[off:]) })
}

// UploadFrom uploads a weight of type d and shape, whose n bytes read
// copies out (len(dst) bytes at offset off), when the backend splits it
// across its ranks: each rank's rows are read and handed over in turn, so
// the whole tensor is never held here. It returns nil, nil for a weight
// it does not split (the caller uploads it whole).
func (b *Backend) UploadFrom(name string, d loader.DType, shape []int, n int64, read func(dst []byte, off int64)) (model.Tensor, error) {
	if b.peers == nil || !Shardable(d, shape, n, b.peers.ranks(), b.minShard) {
		return nil, nil
	}
	w := &loader.Tensor{Name: name, DType: d, Shape: shape}
	if want, err := w.Size(); err != nil || int64(want) != n {
		return nil, fmt.Errorf("cpu: %s %v %s: %d bytes, want %d (%v)", name, shape, d, n, want, err)
	}
	return b.uploadRows(w, func(dst []byte, off int) { read(dst, int64(off)) })
}

// uploadRows splits w (its bytes through read) across the ranks.
func (b *Backend) uploadRows(w *loader.Tensor, read func(dst []byte, off int)) (*tensor, error) {
	N := b.peers.ranks()
	sh := &shard{id: b.nextShard, bounds: rowBounds(w.Rows(), N)}
	b.nextShard++
	for r := 1; r < N; r++ {
		part, err := rowSlice(w, read, sh.bounds[r], sh.bounds[r+1])
		if err != nil {
			return nil, err
		}
		if err := b.peers.store(r, sh.id, sh.bounds[r], part); err != nil {
			return nil, err
		}
	}
	own, err := rowSlice(w, read, 0, sh.bounds[1])
	if err != nil {
		return nil, err
	}
	t, err := upload(own)
	if err != nil {
		return nil, err
	}
	t.shape = append([]int(nil), w.Shape...)
	t.shard = sh
	return t, nil
}

// fail records the first failure of an op; the next read returns it.
func (b *Backend) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Close ends the backend's peer ranks (their workers, in a browser).
func (b *Backend) Close() {
	if b.peers != nil {
		b.peers.close()
		b.peers = nil
	}
}

// Ranks is N, the ranks the weights are split across (1 without peers).
func (b *Backend) Ranks() int {
	if b.peers == nil {
		return 1
	}
	return b.peers.ranks()
}

// Err is the first failure of an op since the backend was made (a rank
// that died, for one): the reads return it too.
func (b *Backend) Err() error { return b.err }

// matmulSharded is MatMul for a weight split across the ranks: the peers
// compute their rows while rank 0 computes its own, in blocks of tokens
// that one exchange carries.
func (b *Backend) matmulSharded(of, xf []float32, wt *tensor, T, N, K int) {
	if b.err != nil {
		return
	}
	sh := wt.shard
	most := 0
	for r := 1; r < len(sh.bounds)-1; r++ {
		most = max(most, sh.bounds[r+1]-sh.bounds[r])
	}
	step := b.peers.fits(K, most)
	if step < 1 {
		b.fail(&RankError{Op: "matmul", Reason: fmt.Sprintf("a row of %d inputs does not fit the exchange", K)})
		return
	}
	own := sh.bounds[1]
	for t0 := 0; t0 < T; t0 += step {
		tn := min(step, T-t0)
		x := xf[t0*K : (t0+tn)*K]
		out := of[t0*N : (t0+tn)*N]
		if err := b.peers.start(&peerJob{kind: jobMatMul, id: sh.id, T: tn, K: K, x: x}); err != nil {
			b.fail(err)
			return
		}
		b.workerBufs(&b.mm.buf, prefillTile*K)
		b.mm = matmulTask{out: out, x: x, w: wt, T: tn, N: N, buf: b.mm.buf, calls: &b.calls}
		b.pool.Run(&b.mm, own, rowGrain(tn, K))
		err := b.peers.wait(func(r int, res []float32) {
			lo, hi := sh.bounds[r], sh.bounds[r+1]
			for t := range tn {
				copy(out[t*N+lo:t*N+hi], res[t*(hi-lo):(t+1)*(hi-lo)])
			}
		})
		if err != nil {
			b.fail(err)
			return
		}
	}
}

// embedSharded is Embed for a table split across the ranks: rows rank 0
// holds are read here, the others are asked of their peers.
func (b *Backend) embedSharded(o, tb *tensor, ids []int32) {
	if b.err != nil {
		return
	}
	sh := tb.shard
	D := tb.cols()
	remote := false
	for r, id := range ids {
		if int(id) < sh.bounds[1] {
			tb.row(int(id), o.f[r*D:(r+1)*D])
		} else {
			remote = true
		}
	}
	if !remote {
		return
	}
	step := b.peers.fits(D, D)
	for t0 := 0; t0 < len(ids); t0 += max(1, step) {
		part := ids[t0:min(len(ids), t0+max(1, step))]
		if err := b.peers.start(&peerJob{kind: jobRows, id: sh.id, T: len(part), K: D, ids: part}); err != nil {
			b.fail(err)
			return
		}
		err := b.peers.wait(func(r int, res []float32) {
			lo, hi := sh.bounds[r], sh.bounds[r+1]
			for i, id := range part {
				if int(id) >= lo && int(id) < hi {
					copy(o.f[(t0+i)*D:(t0+i+1)*D], res[i*D:(i+1)*D])
				}
			}
		})
		if err != nil {
			b.fail(err)
			return
		}
	}
}

// rankStore is a peer's side: the rows it holds of each weight, and the
// backend (one thread: a rank is one) that computes with them.
type rankStore struct {
	be  *Backend
	w   map[int]*tensor
	lo  map[int]int // the first global row of each weight
	out []float32
}

func newRankStore() *rankStore {
	return &rankStore{be: New(1), w: map[int]*tensor{}, lo: map[int]int{}}
}

func (s *rankStore) store(id, lo int, w *loader.Tensor) error {
	t, err := upload(w)
	if err != nil {
		return err
	}
	s.w[id], s.lo[id] = t, lo
	return nil
}

var errNoWeight = errors.New("no such weight")

// run computes the peer's part of j into s.out and returns it.
func (s *rankStore) run(j *peerJob) ([]float32, error) {
	w, ok := s.w[j.id]
	if !ok {
		return nil, fmt.Errorf("weight %d: %w", j.id, errNoWeight)
	}
	rows := w.shape[0]
	switch j.kind {
	case jobMatMul:
		if w.cols() != j.K || len(j.x) != j.T*j.K {
			return nil, fmt.Errorf("weight %d has %d columns; the job %d inputs for %d tokens", j.id, w.cols(), j.K, j.T)
		}
		n := j.T * rows
		if cap(s.out) < n {
			s.out = make([]float32, n)
		}
		out := s.out[:n]
		be := s.be
		be.workerBufs(&be.mm.buf, prefillTile*j.K)
		be.mm = matmulTask{out: out, x: j.x, w: w, T: j.T, N: rows, buf: be.mm.buf, calls: &be.calls}
		be.pool.Run(&be.mm, rows, rowGrain(j.T, j.K))
		return out, nil
	case jobRows:
		D := w.cols()
		n := len(j.ids) * D
		if cap(s.out) < n {
			s.out = make([]float32, n)
		}
		out := s.out[:n]
		lo := s.lo[j.id]
		for i, id := range j.ids {
			if r := int(id) - lo; r >= 0 && r < rows {
				w.row(r, out[i*D:(i+1)*D])
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("job kind %d", j.kind)
}
