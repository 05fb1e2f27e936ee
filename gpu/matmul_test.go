//go:build js

package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
	"wasmllm/model"
)

// matmulWeight returns a random (N, K) weight of dtype dt and its exact
// values. Quantised weights are made as GGUF Q8_0/Q4_0 blocks, dequantised
// by the loader as ggml does, and repacked with loader.ToPlanar for the
// planar types, so the kernels are checked against ggml's layout; K-quants
// are kquantTensor's ggml blocks.
func matmulWeight(t testing.TB, r *rand.Rand, dt loader.DType, N, K int) (*loader.Tensor, []float64) {
	t.Helper()
	if kquantWeight(dt) { // ggml's blocks, K a multiple of 256
		lw, f := kquantTensor(t, r, dt, N, K)
		want := make([]float64, len(f))
		for i, v := range f {
			want[i] = float64(v)
		}
		return lw, want
	}
	n := N * K
	block := dt
	switch dt {
	case loader.Q8:
		block = loader.Q8_0
	case loader.Q4:
		block = loader.Q4_0
	}
	size, err := block.Size(n)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	putF16 := func(b []byte, f float32) { h := loader.F32ToF16(f); b[0], b[1] = byte(h), byte(h>>8) }
	switch block {
	case loader.F32:
		for i := 0; i < n; i++ {
			bits := math.Float32bits(r.Float32()*2 - 1)
			data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		}
	case loader.F16:
		for i := 0; i < n; i++ {
			putF16(data[2*i:], r.Float32()*2-1)
		}
	default:
		bb := block.BlockBytes()
		for b := 0; b < n/32; b++ {
			blk := data[b*bb : (b+1)*bb]
			for j := 2; j < bb; j++ {
				blk[j] = byte(r.Uint32())
			}
			putF16(blk, (r.Float32()+0.05)*0.05)
		}
	}
	w := &loader.Tensor{Name: fmt.Sprintf("w_%s_%dx%d", dt, N, K), DType: block, Shape: []int{N, K}, Data: data}
	f, err := w.F32()
	if err != nil {
		t.Fatal(err)
	}
	if block != dt {
		if w, err = loader.ToPlanar(w); err != nil {
			t.Fatal(err)
		}
		if w.DType != dt {
			t.Fatalf("ToPlanar gave %s, want %s", w.DType, dt)
		}
	}
	want := make([]float64, n)
	for i, v := range f {
		want[i] = float64(v)
	}
	return w, want
}

// randomInput is a (T, K) f32 tensor of values in [-1, 1), and its values.
func randomInput(b *Backend, r *rand.Rand, T, K int) (model.Tensor, []float32) {
	xv := make([]float32, T*K)
	for i := range xv {
		xv[i] = r.Float32()*2 - 1
	}
	x := b.NewF32(T, K)
	b.WriteF32(x, xv)
	return x, xv
}

// matmulRef is out (T, N) = x (T, K) · wᵀ in float64.
func matmulRef(x []float32, w []float64, T, N, K int) []float64 {
	out := make([]float64, T*N)
	for t := 0; t < T; t++ {
		for n := 0; n < N; n++ {
			var s float64
			for k := 0; k < K; k++ {
				s += float64(x[t*K+k]) * w[n*K+k]
			}
			out[t*N+n] = s
		}
	}
	return out
}

// checkMatMul fails when any |got-want| exceeds tol × max|want|, naming the
// worst index as (t, n).
func checkMatMul(t *testing.T, what string, got []float32, want []float64, N int, tol float64) {
	t.Helper()
	var maxW, maxD float64
	worst := 0
	for i, w := range want {
		maxW = math.Max(maxW, math.Abs(w))
		d := math.Abs(float64(got[i]) - w)
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if d > maxD {
			maxD, worst = d, i
		}
	}
	if maxD > tol*maxW || maxW == 0 {
		t.Errorf("%s: t=%d n=%d: got %v want %v (error %.3g of max %.3g)", what, worst/N, worst%N, got[worst], want[worst], maxD, maxW)
	}
}

// matmulLimit is the binding limit of TestMatMulShapes: small enough to
// split most of its weights into row-parts, large enough to bind its
// activations x (T, K) and out (T, N) whole.
const matmulLimit = 32 << 10

var matmulTypes = []loader.DType{loader.F32, loader.F16, loader.Q8, loader.Q4, loader.Q8_0, loader.Q4_0}

// TestMatMulShapes runs both kernels (the GEMM with activation loads of
// either width), and MatMul's own choice, at awkward
// shapes for every weight dtype with the binding limit lowered so weights are
// split into row-parts; then a few of them again without subgroups.
func TestMatMulShapes(t *testing.T) {
	shapes := [][3]int{ // T, N, K
		{1, 67, 32}, {1, 257, 2048}, {2, 130, 96}, {3, 1000, 96}, {3, 257, 2048}, {4, 63, 64},
		{9, 70, 32}, {17, 100, 448}, {33, 67, 96}, {64, 100, 96}, {64, 123, 32},
	}
	t.Run("subgroups", func(t *testing.T) { testMatMulShapes(t, webgpu.Options{}, shapes, matmulTypes) })
	t.Run("nosubgroups", func(t *testing.T) {
		testMatMulShapes(t, webgpu.Options{DisableFeatures: []string{"subgroups"}},
			[][3]int{{1, 257, 2048}, {9, 70, 32}}, []loader.DType{loader.F16, loader.Q4})
	})
}

func testMatMulShapes(t *testing.T, opts webgpu.Options, shapes [][3]int, types []loader.DType) {
	opts.MaxStorageBufferBindingSize = matmulLimit
	b := newTestBackend(t, opts)
	if len(opts.DisableFeatures) > 0 && b.d.Features.Subgroups {
		t.Fatal("subgroups were not disabled")
	}
	split := map[loader.DType]bool{}
	for _, sh := range shapes {
		T, N, K := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(uint64(T*1000003+N*1009+K), 7))
		x, xv := randomInput(b, r, T, K)
		for _, dt := range types {
			lw, wf := matmulWeight(t, r, dt, N, K)
			w, err := b.Upload(lw)
			if err != nil {
				t.Fatalf("upload %s: %v", lw.Name, err)
			}
			if len(tt(w).parts) > 1 {
				split[dt] = true
			}
			want := matmulRef(xv, wf, T, N, K)
			for _, path := range []string{"MatMul", "gemm", "gemm-wide", "gemm-narrow", "gemv-gpu", "gemv-cpu"} {
				if strings.HasPrefix(path, "gemv") && T > 17 {
					continue
				}
				o := tt(b.NewF32(T, N))
				switch path {
				case "MatMul":
					b.MatMul(o, x, w, model.MatMulFusion{})
				case "gemm":
					b.gemmAcc(o, tt(x), tt(w), T, N, K, false)
				case "gemm-wide", "gemm-narrow": // the other adapter kind's activation loads
					own := b.tune
					b.tune.wideLoads = path == "gemm-wide"
					b.gemmAcc(o, tt(x), tt(w), T, N, K, false)
					b.tune = own
				case "gemv-gpu", "gemv-cpu":
					tu := b.tune
					tu.cpu = path == "gemv-cpu"
					b.gemvFused(o, tt(x), tt(w), T, N, K, tu.gemvShape(tt(w).dtype, T, K), gemvFusion{})
				}
				got := make([]float32, T*N)
				what := fmt.Sprintf("%s %s T=%d N=%d K=%d parts=%d", path, dt, T, N, K, len(tt(w).parts))
				if err := b.ReadF32(o, got); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				checkMatMul(t, what, got, want, N, 1e-5)
				b.Free(o)
			}
			b.Free(w)
		}
		b.Free(x)
	}
	for _, dt := range types {
		if !split[dt] {
			t.Errorf("no %s weight was split into parts", dt)
		}
	}
}

// TestMatMulUnalignedK covers f32 and f16 rows whose K is not a multiple of
// the GEMV chunk: MatMul must take the GEMM, which pads the last K tile.
func TestMatMulUnalignedK(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(11, 7))
	for _, c := range []struct {
		dt      loader.DType
		T, N, K int
	}{{loader.F32, 1, 5, 3}, {loader.F32, 2, 67, 30}, {loader.F16, 1, 9, 6}, {loader.F16, 3, 66, 70}, {loader.F32, 70, 65, 17}} {
		lw, wf := matmulWeight(t, r, c.dt, c.N, c.K)
		w, err := b.Upload(lw)
		if err != nil {
			t.Fatal(err)
		}
		xv := make([]float32, c.T*c.K)
		for i := range xv {
			xv[i] = r.Float32()*2 - 1
		}
		x, o := b.NewF32(c.T, c.K), b.NewF32(c.T, c.N)
		b.WriteF32(x, xv)
		b.MatMul(o, x, w, model.MatMulFusion{})
		got := make([]float32, c.T*c.N)
		if err := b.ReadF32(o, got); err != nil {
			t.Fatal(err)
		}
		checkMatMul(t, fmt.Sprintf("%s T=%d N=%d K=%d", c.dt, c.T, c.N, c.K), got, matmulRef(xv, wf, c.T, c.N, c.K), c.N, 1e-5)
	}
}

// TestMatMulRepeatAllocatesNothing replays the same MatMul: after the first
// step it records no program and creates no bind group.
func TestMatMulRepeatAllocatesNothing(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{MaxStorageBufferBindingSize: 8192})
	r := rand.New(rand.NewPCG(12, 7))
	lw, wf := matmulWeight(t, r, loader.Q4, 300, 256)
	w, err := b.Upload(lw)
	if err != nil {
		t.Fatal(err)
	}
	xv := make([]float32, 256)
	for i := range xv {
		xv[i] = r.Float32()*2 - 1
	}
	x, o := b.NewF32(1, 256), b.NewF32(1, 300)
	got := make([]float32, 300)
	step := func() {
		b.WriteF32(x, xv)
		b.MatMul(o, x, w, model.MatMulFusion{})
		if err := b.ReadF32(o, got); err != nil {
			t.Fatal(err)
		}
	}
	step()
	builds, groups, kernels := b.counters.ProgramBuilds, len(b.groups), len(b.pipes.kernels)
	for i := 0; i < 3; i++ {
		step()
	}
	if b.counters.ProgramBuilds != builds || len(b.groups) != groups || len(b.pipes.kernels) != kernels {
		t.Errorf("repeat steps built programs %d -> %d, bind groups %d -> %d, kernels %d -> %d",
			builds, b.counters.ProgramBuilds, groups, len(b.groups), kernels, len(b.pipes.kernels))
	}
	if len(tt(w).parts) < 2 {
		t.Errorf("weight not split: %d parts", len(tt(w).parts))
	}
	checkMatMul(t, "q4 repeat", got, matmulRef(xv, wf, 1, 300, 256), 300, 1e-5)
}

// TestMatMulBadShapes checks that mismatched tensors give ErrOp at the next
// Read rather than a dispatch.
func TestMatMulBadShapes(t *testing.T) {
	b := newTestBackend(t, webgpu.Options{})
	r := rand.New(rand.NewPCG(13, 7))
	lw, _ := matmulWeight(t, r, loader.Q4, 6, 64)
	w, err := b.Upload(lw)
	if err != nil {
		t.Fatal(err)
	}
	sq, _ := matmulWeight(t, r, loader.F32, 64, 64)
	wsq, err := b.Upload(sq)
	if err != nil {
		t.Fatal(err)
	}
	x := b.NewF32(2, 64)
	for _, c := range []struct {
		name      string
		out, x, w model.Tensor
	}{
		{"K differs", b.NewF32(2, 6), b.NewF32(2, 32), w},
		{"N differs", b.NewF32(2, 5), x, w},
		{"T differs", b.NewF32(3, 6), x, w},
		{"x is a weight", b.NewF32(64, 64), wsq, wsq},
		{"w is an activation", b.NewF32(2, 64), x, b.NewF32(64, 64)},
		{"out is x", x, x, wsq},
		{"i32 x", b.NewF32(2, 6), b.NewI32(2, 64), w},
	} {
		b.MatMul(c.out, c.x, c.w, model.MatMulFusion{})
		err := b.ReadF32(x, make([]float32, 128))
		if !errors.Is(err, ErrOp) {
			t.Errorf("%s: got %v, want ErrOp", c.name, err)
		}
	}
}

// benchBackend opens a backend with the adapter's own limits for benchmarks.
func benchBackend(b *testing.B) *Backend {
	b.Helper()
	d, err := openDevice(webgpu.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Close)
	be, err := NewBackend(d, BackendOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return be
}

// benchMatMulInputs uploads a random (N, K) weight of dtype dt and makes x
// (T, K) and out (T, N). bytes is the weight's size as bound (values and
// scales).
func benchMatMulInputs(b *testing.B, be *Backend, dt loader.DType, T, N, K int) (x, w, o model.Tensor, bytes float64) {
	r := rand.New(rand.NewPCG(uint64(N), uint64(K)))
	lw, _ := matmulWeight(b, r, dt, N, K)
	w, err := be.Upload(lw)
	if err != nil {
		b.Fatal(err)
	}
	x, _ = randomInput(be, r, T, K)
	return x, w, be.NewF32(T, N), float64(len(lw.Data))
}

// timeSteps runs issue reps times per step, reading out back once per step,
// b.N steps, and returns the seconds per issue.
func timeSteps(b *testing.B, be *Backend, reps int, issue func(), out model.Tensor) float64 {
	b.Helper()
	dst := make([]float32, tt(out).numel())
	step := func() {
		for i := 0; i < reps; i++ {
			issue()
		}
		if err := be.ReadF32(out, dst); err != nil {
			b.Fatal(err)
		}
	}
	step() // compile and record the program
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.StopTimer()
	return b.Elapsed().Seconds() / float64(b.N*reps)
}

// readProbe streams a buffer of size random bytes with
// shaders/bench_read.wgsl. Its issue records one pass, with the grid that
// was fastest in a short sweep; sync waits for the GPU.
type readProbe struct {
	be     *Backend
	k      kernelOf[benchReadParams]
	src    *webgpu.Buffer
	dst    model.Tensor
	one    model.Tensor
	n      int
	gx, gy int
}

func newReadProbe(b *testing.B, be *Backend, size int) *readProbe {
	b.Helper()
	k, err := use(be, kBenchRead, constant{"WG", 256})
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, size&^15)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	src, err := be.createFilled("bench src", data)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(src.Destroy)
	p := &readProbe{be: be, k: k, src: src, n: len(data) / 16, one: be.NewF32(4)}
	best := math.Inf(1)
	bestGroups := 0
	for _, groups := range []int{16, 64, 256, 1024, 4096} {
		if groups*256 > p.n && bestGroups > 0 {
			break
		}
		if p.dst != nil {
			be.Free(p.dst)
		}
		p.dst = be.NewF32(groups * 256 * 4)
		p.gx, p.gy = be.groups2D(groups)
		p.sync(b) // compile, record
		start := time.Now()
		for i := 0; i < 2; i++ {
			p.issue()
			p.issue()
			p.sync(b)
		}
		if s := time.Since(start).Seconds(); s < best {
			best, bestGroups = s, groups
		}
	}
	be.Free(p.dst)
	p.dst = be.NewF32(bestGroups * 256 * 4)
	p.gx, p.gy = be.groups2D(bestGroups)
	b.Logf("read probe: %d workgroups of 256 over %d bytes", bestGroups, len(data))
	return p
}

func (p *readProbe) issue() {
	p.k.dispatch(p.be, benchReadParams{N: uint32(p.n), Magic: 0x9e3779b9}, p.gx, p.gy, 1, bind{buf: p.src}, tt(p.dst).whole())
}

func (p *readProbe) sync(b *testing.B) {
	p.be.CopyRows(p.one, p.dst, 0)
	if err := p.be.ReadF32(p.one, make([]float32, 4)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMatMulQ4GEMV measures the decode GEMV (T=1) on q4 weights in GB/s
// of weight bytes (values and scales; q4, q8 and the K-quants of Q4_K_M),
// next to the streaming-read probe over
// as many bytes on the same adapter, timed in alternation (the machine may be
// shared); ratio = GEMV rate / probe rate. ns/op covers 4 GEMVs and 4
// probe passes, each group with its readback.
func BenchmarkMatMulQ4GEMV(b *testing.B) {
	for _, c := range []struct {
		dt   loader.DType
		N, K int
	}{{loader.Q4, 2048, 2048}, {loader.Q4, 8192, 2048}, {loader.Q8, 8192, 2048}, {loader.Q4_K, 8192, 2048}, {loader.Q6_K, 8192, 2048}} {
		dt, N, K := c.dt, c.N, c.K
		b.Run(fmt.Sprintf("%s,N=%d,K=%d", dt, N, K), func(b *testing.B) {
			be := benchBackend(b)
			x, w, o, bytes := benchMatMulInputs(b, be, dt, 1, N, K)
			probe := newReadProbe(b, be, int(bytes))
			dst := make([]float32, N)
			const reps = 4
			var tGEMV, tRead time.Duration
			be.MatMul(o, x, w, model.MatMulFusion{})
			if err := be.ReadF32(o, dst); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				for j := 0; j < reps; j++ {
					be.MatMul(o, x, w, model.MatMulFusion{})
				}
				if err := be.ReadF32(o, dst); err != nil {
					b.Fatal(err)
				}
				mid := time.Now()
				for j := 0; j < reps; j++ {
					probe.issue()
				}
				probe.sync(b)
				tGEMV += mid.Sub(start)
				tRead += time.Since(mid)
			}
			b.StopTimer()
			gemv := bytes * reps * float64(b.N) / tGEMV.Seconds()
			read := bytes * reps * float64(b.N) / tRead.Seconds()
			b.ReportMetric(gemv/1e9, "GB/s")
			b.ReportMetric(read/1e9, "readGB/s")
			b.ReportMetric(gemv/read, "ratio")
		})
	}
}

// BenchmarkMatMulGEMM measures the prefill GEMM at T=128 in GFLOP/s.
func BenchmarkMatMulGEMM(b *testing.B) {
	for _, dt := range []loader.DType{loader.Q4, loader.Q8, loader.F16, loader.F32} {
		b.Run(fmt.Sprintf("%s,T=128,N=2048,K=2048", dt), func(b *testing.B) {
			be := benchBackend(b)
			const T, N, K = 128, 2048, 2048
			x, w, o, _ := benchMatMulInputs(b, be, dt, T, N, K)
			sec := timeSteps(b, be, 1, func() { be.MatMul(o, x, w, model.MatMulFusion{}) }, o)
			b.ReportMetric(2*T*N*K/sec/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkMatMulCrossover times both kernels per token on q4 at
// N=K=2048 over T, to choose gemvMaxT.
func BenchmarkMatMulCrossover(b *testing.B) {
	be := benchBackend(b)
	const N, K = 2048, 2048
	for _, T := range []int{1, 4, 16, 64, 128} {
		x, w, o, _ := benchMatMulInputs(b, be, loader.Q4, T, N, K)
		for _, path := range []string{"gemv", "gemm"} {
			b.Run(fmt.Sprintf("T=%d/%s", T, path), func(b *testing.B) {
				issue := func() { be.gemvFused(tt(o), tt(x), tt(w), T, N, K, be.tune.gemvShape(tt(w).dtype, T, K), gemvFusion{}) }
				if path == "gemm" {
					issue = func() { be.gemmAcc(tt(o), tt(x), tt(w), T, N, K, false) }
				}
				sec := timeSteps(b, be, 1, issue, o)
				b.ReportMetric(sec/float64(T)*1e6, "µs/token")
			})
		}
		be.Free(x)
		be.Free(w)
		be.Free(o)
	}
}
