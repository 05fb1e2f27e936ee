//go:build js

package cpu

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"syscall/js"
	"time"
	"unsafe"

	"wasmllm/loader"
)

// The ranks of the browser's CPU engine: rank 0 is the engine's own
// instance; ranks 1..N-1 are Web Workers (web/rank.js), each running its own
// instance of the same compiled WebAssembly.Module, which the page hands
// over as __wasmllmModule, and started by __wasmllmRankWorker(rank, init),
// which returns the Worker or a handle with its terminate. The engine's
// worker has the page start them (web/worker.js): Firefox stalls workers
// nested in a worker that blocks in Atomics.wait (3 ranks hung after 21
// loads there, 4 at the first). Go's memory cannot be shared, so jobs and results pass
// through two SharedArrayBuffers (the page must be cross-origin isolated):
//
//   ctrl, Int32Array: [0] the job's sequence number, [1..15] its header
//   (op, weight id, T, K, target rank, a, b), [16..23] a stored weight's
//   shape; from word 64, eight words a rank: done (the sequence number it
//   finished), status (0, or 1 with a message in its out region), ready,
//   dead, the length of its message.
//   data: the job's inputs (x, ids, or a chunk of a weight being stored) in
//   [0, xBytes), then each peer's out region of outBytes.
//
// A peer waits on ctrl[0] (Atomics.wait: a worker may block), runs the
// job and stores its done word; rank 0 computes its own rows meanwhile and
// then waits on the done words: with Atomics.wait in a worker, spinning on
// the page's main thread (the test pages), where Atomics.wait throws. A
// rank whose Go program ends or throws marks itself dead (rank.js); one
// that stops answering fails the job after RankOptions.Timeout.

const (
	ctrlBytes  = 4096
	hdrWords   = 24 // words 0..23: the sequence number, the header, the shape
	rankWord   = 64
	rankStride = 8

	wOp, wID, wT, wK, wTarget, wA, wB, wShape = 1, 2, 3, 4, 5, 6, 7, 16

	rDone, rStatus, rReady, rDead, rLen = 0, 1, 2, 3, 4

	opMatMul, opRows, opStoreBegin, opStoreChunk, opStoreEnd, opQuit = 1, 2, 3, 4, 5, 6

	xBytes   = 16 << 20
	outBytes = 16 << 20
)

// The JavaScript side of the exchange: one call per step, not one per word.
var rankJS = js.Global().Get("Function").New("", `
const canWait = (() => { try { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0); return true; } catch (e) { return false; } })();
const now = () => performance.now();
return {
	canWait,
	post(ctrl, seq) { Atomics.store(ctrl, 0, seq); Atomics.notify(ctrl, 0); },
	// next waits until ctrl[0] differs from old (spinning spinMs first) and returns it.
	next(ctrl, old, spinMs) {
		const t0 = now();
		for (;;) {
			const v = Atomics.load(ctrl, 0);
			if (v !== old) return v;
			if (now() - t0 > spinMs && canWait) Atomics.wait(ctrl, 0, old, 1000);
		}
	},
	ack(ctrl, w, seq, status, len) {
		Atomics.store(ctrl, w + 1, status);
		Atomics.store(ctrl, w + 4, len);
		Atomics.store(ctrl, w, seq);
		Atomics.notify(ctrl, w);
	},
	// waitAll waits for ranks 1..n-1 to finish job seq: 0, or 8r + 1 (timed
	// out), 8r + 2 (dead), 8r + 3 (failed).
	waitAll(ctrl, n, seq, timeoutMs, spinMs) {
		const t0 = now();
		for (let r = 1; r < n; r++) {
			const w = 64 + 8 * r;
			for (;;) {
				if (Atomics.load(ctrl, w + 3) !== 0) return 8 * r + 2;
				const v = Atomics.load(ctrl, w);
				if (v === seq) break;
				const t = now() - t0;
				if (t > timeoutMs) return 8 * r + 1;
				if (t > spinMs && canWait) Atomics.wait(ctrl, w, v, 5);
			}
			if (Atomics.load(ctrl, w + 1) !== 0) return 8 * r + 3;
		}
		return 0;
	},
	mark(ctrl, w, v) { Atomics.store(ctrl, w, v); Atomics.notify(ctrl, w); },
	load(ctrl, w) { return Atomics.load(ctrl, w); },
};`).Invoke()

// spinMs is how long a waiting side spins before it blocks: a blocked
// worker takes tens of microseconds to wake.
const spinMs = 0.2

func f32Bytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

func i32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 4*len(v))
}

// exchange is the shared memory and its views, on either side.
type exchange struct {
	n         int
	ctrl      js.Value // Int32Array over the ctrl buffer
	ctrl8     js.Value // Uint8Array over the header words
	data8     js.Value // Uint8Array over the input region
	out8      []js.Value
	ctrlBuf   js.Value
	dataBuf   js.Value
	hdr       [hdrWords]int32
	hdrBytes  [4 * hdrWords]byte
	workers   []js.Value
	timeoutMs float64
	seq       int32
	inflight  *peerJob    // the job start sent, for wait
	res       [][]float32 // per peer: its answer's scratch
}

func newExchange(n int, ctrlBuf, dataBuf js.Value) *exchange {
	u8 := js.Global().Get("Uint8Array")
	e := &exchange{n: n, ctrlBuf: ctrlBuf, dataBuf: dataBuf,
		ctrl:  js.Global().Get("Int32Array").New(ctrlBuf),
		ctrl8: u8.New(ctrlBuf, 4, 4*(hdrWords-1)),
		data8: u8.New(dataBuf, 0, xBytes)}
	e.out8 = make([]js.Value, n)
	e.res = make([][]float32, n)
	for r := 1; r < n; r++ {
		e.out8[r] = u8.New(dataBuf, xBytes+(r-1)*outBytes, outBytes)
	}
	return e
}

func (e *exchange) word(r, w int) int { return rankWord + rankStride*r + w }

// NewRanks returns a Backend whose large weights (at least o.MinShardBytes)
// are split across o.Ranks ranks, the others in Web Workers it starts; or a
// *RankError when the page cannot run them (not cross-origin isolated, no
// module or worker hook, a worker that does not start).
func NewRanks(o RankOptions) (*Backend, error) {
	b := New(1)
	b.minShard = o.MinShardBytes
	if b.minShard <= 0 {
		b.minShard = DefaultMinShardBytes
	}
	if o.Ranks <= 1 {
		return b, nil
	}
	p, err := startRanks(o)
	if err != nil {
		return nil, err
	}
	b.peers = p
	return b, nil
}

// RanksAvailable says whether this page can run ranks in workers, and if
// not, why.
func RanksAvailable() (bool, string) {
	g := js.Global()
	switch {
	case !g.Get("crossOriginIsolated").Truthy():
		return false, "the page is not cross-origin isolated (COOP/COEP headers), so it cannot share memory with workers"
	case g.Get("SharedArrayBuffer").Type() != js.TypeFunction:
		return false, "the browser has no SharedArrayBuffer"
	case !g.Get("__wasmllmModule").Truthy() || g.Get("__wasmllmRankWorker").Type() != js.TypeFunction:
		return false, "the page did not hand over the engine's module and rank worker"
	}
	return true, ""
}

func startRanks(o RankOptions) (*exchange, error) {
	if ok, why := RanksAvailable(); !ok {
		return nil, &RankError{Op: "start", Reason: why}
	}
	n := o.Ranks
	sab := js.Global().Get("SharedArrayBuffer")
	e := newExchange(n, sab.New(ctrlBytes), sab.New(xBytes+(n-1)*outBytes))
	e.timeoutMs = float64(o.Timeout.Milliseconds())
	if e.timeoutMs <= 0 {
		e.timeoutMs = 60_000
	}
	mod := js.Global().Get("__wasmllmModule")
	execURL := js.Global().Get("__wasmllmExecURL")
	for r := 1; r < n; r++ {
		w, err := spawn(r, map[string]any{"module": mod, "ctrl": e.ctrlBuf, "data": e.dataBuf, "rank": r, "ranks": n,
			"xBytes": xBytes, "outBytes": outBytes, "wasmExec": execURL})
		if err != nil {
			e.close()
			return nil, err
		}
		e.workers = append(e.workers, w)
	}
	// The workers start while this side sleeps (a blocked thread would
	// keep them from starting).
	deadline := time.Now().Add(max(o.StartTimeout, time.Second))
	if o.StartTimeout <= 0 {
		deadline = time.Now().Add(60 * time.Second)
	}
	for r := 1; r < n; r++ {
		for rankJS.Call("load", e.ctrl, e.word(r, rReady)).Int() == 0 {
			if rankJS.Call("load", e.ctrl, e.word(r, rDead)).Int() != 0 {
				e.close()
				return nil, &RankError{Rank: r, Op: "start", Reason: "the worker's engine instance failed to start"}
			}
			if time.Now().After(deadline) {
				e.close()
				return nil, &RankError{Rank: r, Op: "start", Reason: "the worker did not start in time"}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return e, nil
}

// spawn asks the page to start rank r's worker (web/rank.js) with init; it
// returns the worker, or a handle with its terminate.
func spawn(r int, init map[string]any) (w js.Value, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &RankError{Rank: r, Op: "start", Reason: fmt.Sprint("the page's rank worker threw: ", p)}
		}
	}()
	w = js.Global().Call("__wasmllmRankWorker", r, init)
	if !w.Truthy() {
		return w, &RankError{Rank: r, Op: "start", Reason: "the page gave no worker"}
	}
	return w, nil
}

func (e *exchange) ranks() int { return e.n }

func (e *exchange) fits(K, rows int) int {
	t := xBytes / (4 * max(1, K))
	if rows > 0 {
		t = min(t, outBytes/(4*rows))
	}
	return t
}

// post sends the header (e.hdr) and the inputs in, as job e.seq+1.
func (e *exchange) post(in []byte) {
	e.seq++
	e.hdr[0] = e.seq
	for i, v := range e.hdr {
		binary.LittleEndian.PutUint32(e.hdrBytes[4*i:], uint32(v))
	}
	js.CopyBytesToJS(e.ctrl8, e.hdrBytes[4:]) // word 0 is stored by post, last
	if len(in) > 0 {
		js.CopyBytesToJS(e.data8, in)
	}
	rankJS.Call("post", e.ctrl, e.seq)
}

func (e *exchange) setHeader(op, id, T, K, target, a, bb int) {
	e.hdr = [hdrWords]int32{}
	e.hdr[wOp], e.hdr[wID], e.hdr[wT], e.hdr[wK], e.hdr[wTarget], e.hdr[wA], e.hdr[wB] =
		int32(op), int32(id), int32(T), int32(K), int32(target), int32(a), int32(bb)
}

// await waits for job e.seq on every peer.
func (e *exchange) await(op string) error {
	code := rankJS.Call("waitAll", e.ctrl, e.n, e.seq, e.timeoutMs, spinMs).Int()
	if code == 0 {
		return nil
	}
	r := code / 8
	switch code % 8 {
	case 1:
		return &RankError{Rank: r, Op: op, Reason: fmt.Sprintf("no answer in %.0f ms", e.timeoutMs)}
	case 2:
		return &RankError{Rank: r, Op: op, Reason: "the worker's engine instance died"}
	}
	n := rankJS.Call("load", e.ctrl, e.word(r, rLen)).Int()
	msg := make([]byte, min(n, 4096))
	js.CopyBytesToGo(msg, e.out8[r])
	return &RankError{Rank: r, Op: op, Reason: string(msg)}
}

func (e *exchange) store(r, id, lo int, w *loader.Tensor) error {
	if len(w.Shape) > len(e.hdr)-wShape {
		return &RankError{Rank: r, Op: "store", Reason: "too many dimensions"}
	}
	e.setHeader(opStoreBegin, id, len(w.Data), int(w.DType), r, lo, len(w.Shape))
	for i, d := range w.Shape {
		e.hdr[wShape+i] = int32(d)
	}
	e.post(nil)
	if err := e.await("store"); err != nil {
		return err
	}
	for off := 0; off < len(w.Data); off += xBytes {
		chunk := w.Data[off:min(len(w.Data), off+xBytes)]
		e.setHeader(opStoreChunk, id, len(chunk), 0, r, off, 0)
		e.post(chunk)
		if err := e.await("store"); err != nil {
			return err
		}
	}
	e.setHeader(opStoreEnd, id, 0, 0, r, 0, 0)
	e.post(nil)
	return e.await("store")
}

func (e *exchange) start(j *peerJob) error {
	switch j.kind {
	case jobMatMul:
		e.setHeader(opMatMul, j.id, j.T, j.K, 0, 0, 0)
		e.post(f32Bytes(j.x))
		runtime.KeepAlive(j.x)
	case jobRows:
		e.setHeader(opRows, j.id, j.T, j.K, 0, 0, 0)
		e.post(i32Bytes(j.ids))
		runtime.KeepAlive(j.ids)
	}
	e.inflight = j
	return nil
}

func (e *exchange) wait(got func(rank int, res []float32)) error {
	j := e.inflight
	e.inflight = nil
	op := map[jobKind]string{jobMatMul: "matmul", jobRows: "rows"}[j.kind]
	if err := e.await(op); err != nil {
		return err
	}
	for r := 1; r < e.n; r++ {
		n := int(rankJS.Call("load", e.ctrl, e.word(r, rLen)).Int())
		if n%4 != 0 || n > outBytes {
			return &RankError{Rank: r, Op: op, Reason: fmt.Sprintf("an answer of %d bytes", n)}
		}
		if cap(e.res[r]) < n/4 {
			e.res[r] = make([]float32, n/4)
		}
		res := e.res[r][:n/4] // got copies it out at once: reused every job
		js.CopyBytesToGo(f32Bytes(res), e.out8[r])
		got(r, res)
	}
	return nil
}

// close ends the peers: each answers a quit, lets go of its weights and
// returns to its worker's event loop (Chromium does not end a worker that
// is blocked in Atomics.wait), and the worker is terminated.
func (e *exchange) close() {
	if len(e.workers) > 0 {
		// A rank that stopped answering must not hold up an unload.
		saved := e.timeoutMs
		e.timeoutMs = min(saved, 2000)
		e.quit(0)
		_ = e.await("quit")
		e.timeoutMs = saved
	}
	for _, w := range e.workers {
		w.Call("terminate")
	}
	e.workers = nil
}

// quit asks rank target (0: every peer) to stop serving.
func (e *exchange) quit(target int) {
	e.setHeader(opQuit, 0, 0, 0, target, 0, 0)
	e.post(nil)
}

// serveRank is a peer's life: it runs jobs until it is told to quit.
func serveRank(init js.Value) {
	n, r := init.Get("ranks").Int(), init.Get("rank").Int()
	e := newExchange(n, init.Get("ctrl"), init.Get("data"))
	st := newRankStore()
	me := e.word(r, 0)
	rankJS.Call("mark", e.ctrl, e.word(r, rReady), 1)
	var hdrBytes [4 * hdrWords]byte
	var pending []byte       // a weight being stored
	var meta [hdrWords]int32 // and its header
	var x []float32
	var ids []int32
	seq := 0
	for {
		seq = rankJS.Call("next", e.ctrl, seq, spinMs).Int()
		js.CopyBytesToGo(hdrBytes[4:], e.ctrl8)
		var h [hdrWords]int32
		for i := range h {
			h[i] = int32(binary.LittleEndian.Uint32(hdrBytes[4*i:]))
		}
		if t := int(h[wTarget]); t != 0 && t != r {
			rankJS.Call("ack", e.ctrl, me, seq, 0, 0)
			continue
		}
		if h[wOp] == opQuit {
			rankJS.Call("ack", e.ctrl, me, seq, 0, 0)
			st, pending, x, ids = nil, nil, nil, nil
			runtime.GC()
			js.Global().Call("close")
			select {} // back to the worker's event loop, which ends it
		}
		res, err := func() (res []byte, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			T, K := int(h[wT]), int(h[wK])
			switch h[wOp] {
			case opStoreBegin:
				if T < 0 || int(h[wB]) > hdrWords-wShape {
					return nil, fmt.Errorf("a weight of %d bytes, %d dimensions", T, h[wB])
				}
				pending, meta = make([]byte, T), h
			case opStoreChunk:
				off := int(h[wA])
				if off < 0 || off+T > len(pending) || T > xBytes {
					return nil, fmt.Errorf("a chunk of %d bytes at %d of %d", T, off, len(pending))
				}
				js.CopyBytesToGo(pending[off:off+T], e.data8)
			case opStoreEnd:
				var shape []int
				for i := range int(meta[wB]) {
					shape = append(shape, int(meta[wShape+i]))
				}
				w := &loader.Tensor{Name: fmt.Sprint("weight ", meta[wID]), DType: loader.DType(meta[wK]), Shape: shape, Data: pending}
				pending = nil
				return nil, st.store(int(meta[wID]), int(meta[wA]), w)
			case opMatMul:
				if T*K*4 > xBytes || T < 0 || K < 0 {
					return nil, fmt.Errorf("a job of %d×%d inputs", T, K)
				}
				if cap(x) < T*K {
					x = make([]float32, T*K)
				}
				x = x[:T*K]
				js.CopyBytesToGo(f32Bytes(x), e.data8)
				out, err := st.run(&peerJob{kind: jobMatMul, id: int(h[wID]), T: T, K: K, x: x})
				return f32Bytes(out), err
			case opRows:
				if T*4 > xBytes || T < 0 {
					return nil, fmt.Errorf("a job of %d ids", T)
				}
				if cap(ids) < T {
					ids = make([]int32, T)
				}
				ids = ids[:T]
				js.CopyBytesToGo(i32Bytes(ids), e.data8)
				out, err := st.run(&peerJob{kind: jobRows, id: int(h[wID]), T: T, K: K, ids: ids})
				return f32Bytes(out), err
			default:
				return nil, fmt.Errorf("op %d", h[wOp])
			}
			return nil, nil
		}()
		if err != nil {
			msg := []byte(err.Error())
			js.CopyBytesToJS(e.out8[r], msg)
			rankJS.Call("ack", e.ctrl, me, seq, 1, len(msg))
			continue
		}
		if len(res) > outBytes {
			msg := []byte(fmt.Sprintf("an answer of %d bytes over the %d the exchange holds", len(res), outBytes))
			js.CopyBytesToJS(e.out8[r], msg)
			rankJS.Call("ack", e.ctrl, me, seq, 1, len(msg))
			continue
		}
		if len(res) > 0 {
			js.CopyBytesToJS(e.out8[r], res)
		}
		rankJS.Call("ack", e.ctrl, me, seq, 0, len(res))
	}
}
