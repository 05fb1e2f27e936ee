//go:build js

package cpu

import (
	"math"
	"runtime"
	"syscall/js"
	"unsafe"

	"wasmllm/cpu/internal/wasmsimd"
	"wasmllm/loader"
)

// The page's loader (web/worker.js, the test and bench pages) hands the
// Go instance's memory over as globalThis.wasmllmGoMemory; without it, or
// without SIMD128 in the browser, the plain-Go loops run.
func init() {
	loadSIMD()
	// In a rank's worker (web/rank.js) the program is a peer of the CPU
	// engine's tensor parallelism: it serves jobs and never returns.
	if r := js.Global().Get("__wasmllmRank"); r.Truthy() {
		serveRank(r)
	}
}

func loadSIMD() {
	defer func() { _ = recover() }() // a browser without SIMD128: no kernels
	mem := js.Global().Get("wasmllmGoMemory")
	if !mem.Truthy() {
		return
	}
	code := wasmsimd.Module()
	buf := js.Global().Get("Uint8Array").New(len(code))
	js.CopyBytesToJS(buf, code)
	wa := js.Global().Get("WebAssembly")
	mod := wa.Get("Module").New(buf)
	imports := map[string]any{"env": map[string]any{"mem": mem}}
	ex := wa.Get("Instance").New(mod, imports).Get("exports")
	k := &jsSIMD{}
	for name, dst := range map[string]*js.Value{wasmsimd.F32: &k.f32k, wasmsimd.Q8_0: &k.q80, wasmsimd.Q4_0: &k.q40, wasmsimd.Q8: &k.q8, wasmsimd.Q4: &k.q4, wasmsimd.Attn: &k.attnk, wasmsimd.Exp: &k.exp, wasmsimd.Silu: &k.siluk, wasmsimd.Batch: &k.batchk, wasmsimd.DeltaStep: &k.deltak} {
		*dst = ex.Get(name)
	}
	simd = k
}

type jsSIMD struct {
	f32k, q80, q40, q8, q4, attnk, exp, siluk, batchk, deltak js.Value
	table                                                     []int32 // batch's entries
}

func ptr[T any](s []T) int { return int(uintptr(unsafe.Pointer(unsafe.SliceData(s)))) }

func (k *jsSIMD) has(d loader.DType) bool {
	switch d {
	case loader.Q8_0, loader.Q4_0, loader.Q8, loader.Q4:
		return true
	}
	return false
}

func (k *jsSIMD) gemv(w *tensor, row, rows int, x, out []float32) {
	K := len(x)
	nb := K / 32
	switch w.dtype {
	case loader.Q8_0:
		k.q80.Invoke(ptr(w.q[row*nb*34:]), ptr(x), ptr(out), rows, K)
	case loader.Q4_0:
		k.q40.Invoke(ptr(w.q[row*nb*18:]), ptr(x), ptr(out), rows, K)
	case loader.Q8:
		k.q8.Invoke(ptr(w.q[row*nb*32:]), ptr(w.q[w.scales+2*row*nb:]), ptr(x), ptr(out), rows, K)
	case loader.Q4:
		k.q4.Invoke(ptr(w.q[row*nb*16:]), ptr(w.q[w.scales+2*row*nb:]), ptr(x), ptr(out), rows, K)
	}
	runtime.KeepAlive(w)
	runtime.KeepAlive(x)
	runtime.KeepAlive(out)
}

func (k *jsSIMD) f32(w, x, out []float32, rows, K, T, ldo int) {
	k.f32k.Invoke(ptr(w), ptr(x), ptr(out), rows, K, T, ldo)
	runtime.KeepAlive(w)
	runtime.KeepAlive(x)
	runtime.KeepAlive(out)
}

func (k *jsSIMD) attn(a *attnTask, worker, lo, hi int) {
	s := a.scores[worker]
	scale := float32(1 / math.Sqrt(float64(a.Dh)))
	k.attnk.Invoke(ptr(a.qkv), ptr(a.kc), ptr(a.vc), ptr(a.out), ptr(s), ptr(a.pos), lo, hi, a.H, a.Hk, a.Dh, a.window, int(math.Float32bits(scale)))
	runtime.KeepAlive(a.qkv)
	runtime.KeepAlive(a.kc)
	runtime.KeepAlive(a.vc)
	runtime.KeepAlive(a.out)
	runtime.KeepAlive(s)
	runtime.KeepAlive(a.pos)
}

func (k *jsSIMD) silu(out, gateUp []float32, T, F int) {
	k.siluk.Invoke(ptr(out), ptr(gateUp), T, F)
	runtime.KeepAlive(out)
	runtime.KeepAlive(gateUp)
}

// gemvOps and dequantOps are the module's kernels for each weight type.
var (
	gemvOps    = map[loader.DType]wasmsimd.Op{loader.Q8_0: wasmsimd.OpQ8_0, loader.Q4_0: wasmsimd.OpQ4_0, loader.Q8: wasmsimd.OpQ8, loader.Q4: wasmsimd.OpQ4}
	dequantOps = map[loader.DType]wasmsimd.Op{loader.Q8_0: wasmsimd.OpDQ8_0, loader.Q4_0: wasmsimd.OpDQ4_0, loader.Q8: wasmsimd.OpDQ8, loader.Q4: wasmsimd.OpDQ4,
		loader.Q2_K: wasmsimd.OpDQ2_K, loader.Q3_K: wasmsimd.OpDQ3_K, loader.Q4_K: wasmsimd.OpDQ4_K, loader.Q5_K: wasmsimd.OpDQ5_K, loader.Q6_K: wasmsimd.OpDQ6_K}
)

// kquantTiles: K-quant decode rows go through dequantised tiles here
// (decodeRows).
const kquantTiles = true

func (k *jsSIMD) dequants(d loader.DType) bool {
	_, ok := dequantOps[d]
	return ok
}

// weightPtrs are the addresses of rows [row, ...) of quantised w: the
// weights and, for the planar types, the scales (else the weights again).
func weightPtrs(w *tensor, row, K int) (q, s int32) {
	nb := K / 32
	switch w.dtype {
	case loader.Q8_0:
		q = int32(ptr(w.q[row*nb*34:]))
		return q, q
	case loader.Q4_0:
		q = int32(ptr(w.q[row*nb*18:]))
		return q, q
	case loader.Q8:
		return int32(ptr(w.q[row*nb*32:])), int32(ptr(w.q[w.scales+2*row*nb:]))
	case loader.Q4:
		return int32(ptr(w.q[row*nb*16:])), int32(ptr(w.q[w.scales+2*row*nb:]))
	default: // the K-quants' blocks
		q = int32(ptr(w.blockRow(row, K)))
		return q, q
	}
}

func (k *jsSIMD) batch(calls []kcall) {
	k.table = k.table[:0]
	for _, c := range calls {
		switch c.op {
		case opF32:
			k.table = append(k.table, int32(wasmsimd.OpF32), int32(ptr(c.f)), int32(ptr(c.x)), int32(ptr(c.out)), int32(c.rows), int32(c.K), int32(c.T), int32(c.ldo))
		case opGemv:
			q, s := weightPtrs(c.w, c.row, c.K)
			op := gemvOps[c.w.dtype]
			if op == wasmsimd.OpQ8 || op == wasmsimd.OpQ4 {
				k.table = append(k.table, int32(op), q, s, int32(ptr(c.x)), int32(ptr(c.out)), int32(c.rows), int32(c.K), 0)
			} else {
				k.table = append(k.table, int32(op), q, int32(ptr(c.x)), int32(ptr(c.out)), int32(c.rows), int32(c.K), 0, 0)
			}
		case opDequant:
			q, s := weightPtrs(c.w, c.row, c.K)
			k.table = append(k.table, int32(dequantOps[c.w.dtype]), q, s, int32(ptr(c.out)), int32(c.rows), int32(c.K), 0, 0)
		}
	}
	k.batchk.Invoke(ptr(k.table), len(calls))
	runtime.KeepAlive(calls)
	runtime.KeepAlive(k.table)
}

// deltaStep is deltaTask.step's recurrence on the module's DeltaStep.
func (k *jsSIMD) deltaStep(M, kv, v, q, o, dv []float32, decay, beta float32) {
	k.deltak.Invoke(ptr(M), ptr(kv), ptr(v), ptr(q), ptr(o), ptr(dv), len(dv), int(math.Float32bits(decay)), int(math.Float32bits(beta)))
	runtime.KeepAlive(M)
	runtime.KeepAlive(kv)
	runtime.KeepAlive(v)
	runtime.KeepAlive(q)
	runtime.KeepAlive(o)
	runtime.KeepAlive(dv)
}
