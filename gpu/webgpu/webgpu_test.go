//go:build js

package webgpu

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall/js"
	"testing"
	"time"
	"wasmllm/internal/jsutil"
	"wasmllm/internal/testkit/gputest"
)

var (
	sharedOnce sync.Once
	sharedDev  *Device
	sharedErr  error
)

// device returns the device shared by the tests that do not change it.
func device(t testing.TB) *Device {
	t.Helper()
	sharedOnce.Do(func() { sharedDev, sharedErr = openDevice(Options{}) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedDev
}

func openDevice(opt Options) (*Device, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Open(ctx, opt)
}

// addKernel is gputest.AddWGSL with an explicit layout.
type addKernel struct {
	d      *Device
	pipe   *Pipeline
	layout *BindGroupLayout
}

func newAddKernel(t testing.TB, d *Device) *addKernel {
	t.Helper()
	mod, err := d.CreateShaderModule("gputest.AddWGSL", gputest.AddWGSL)
	if err != nil {
		t.Fatal(err)
	}
	bgl, err := d.CreateBindGroupLayout("test_add", ReadOnlyStorage, ReadOnlyStorage, Storage, Uniform)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := d.CreatePipelineLayout("test_add", bgl)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.CreateComputePipeline("test_add", mod, "main", pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &addKernel{d: d, pipe: p, layout: bgl}
}

// bind makes the bind group out = a + b over n elements, with its uniform.
func (k *addKernel) bind(t testing.TB, label string, a, b, out *Buffer, n int) *BindGroup {
	t.Helper()
	params := newBuffer(t, k.d, label+".params", 16, UsageUniform)
	if err := k.d.WriteBuffer(params, 0, u32Bytes(uint32(n), 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	g, err := k.d.CreateBindGroup(label, k.layout,
		Binding{Binding: 0, Buffer: a}, Binding{Binding: 1, Buffer: b},
		Binding{Binding: 2, Buffer: out}, Binding{Binding: 3, Buffer: params})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func groups(n int) int { return (n + 63) / 64 }

func newBuffer(t testing.TB, d *Device, label string, size uint64, usage BufferUsage) *Buffer {
	t.Helper()
	b, err := d.CreateBuffer(label, size, usage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Destroy)
	return b
}

func f32Buffer(t testing.TB, d *Device, label string, v []float32) *Buffer {
	t.Helper()
	b := newBuffer(t, d, label, uint64(4*len(v)), UsageStorage)
	if err := d.WriteBuffer(b, 0, f32Bytes(v)); err != nil {
		t.Fatal(err)
	}
	return b
}

func readF32(t testing.TB, d *Device, b *Buffer, n int) []float32 {
	t.Helper()
	raw := make([]byte, 4*n)
	if err := d.ReadBuffer(b, 0, raw); err != nil {
		t.Fatal(err)
	}
	return bytesF32(raw)
}

func randF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func u32Bytes(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

// checkF32 compares exactly: f32 addition is the same on both sides.
func checkF32(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(got))
	}
}

func TestOpenReportsAdapter(t *testing.T) {
	d := device(t)
	t.Logf("adapter: vendor=%q architecture=%q device=%q description=%q fallback=%v",
		d.AdapterInfo.Vendor, d.AdapterInfo.Architecture, d.AdapterInfo.Device, d.AdapterInfo.Description, d.AdapterInfo.Fallback)
	t.Logf("features: %+v", d.Features)
	t.Logf("limits: %+v", d.Limits)
	l := d.Limits
	for name, v := range map[string]uint64{
		"MaxStorageBufferBindingSize":       l.MaxStorageBufferBindingSize,
		"MaxBufferSize":                     l.MaxBufferSize,
		"MaxComputeWorkgroupStorageSize":    uint64(l.MaxComputeWorkgroupStorageSize),
		"MaxComputeInvocationsPerWorkgroup": uint64(l.MaxComputeInvocationsPerWorkgroup),
		"MaxComputeWorkgroupSizeX":          uint64(l.MaxComputeWorkgroupSizeX),
		"MaxStorageBuffersPerShaderStage":   uint64(l.MaxStorageBuffersPerShaderStage),
		"MinStorageBufferOffsetAlignment":   uint64(l.MinStorageBufferOffsetAlignment),
	} {
		if v == 0 {
			t.Errorf("Limits.%s is 0", name)
		}
	}
	// WebGPU's guaranteed minimums: the device asked for the adapter's maxima.
	if l.MaxStorageBufferBindingSize < 128<<20 || l.MaxComputeInvocationsPerWorkgroup < 256 || l.MaxStorageBuffersPerShaderStage < 8 {
		t.Errorf("limits below WebGPU's defaults: %+v", l)
	}
	adapterF16 := sharedAdapterHas(t, "shader-f16")
	if d.Features.ShaderF16 != adapterF16 {
		t.Errorf("Features.ShaderF16 = %v, adapter has it: %v", d.Features.ShaderF16, adapterF16)
	}
	if d.Features.Subgroups != sharedAdapterHas(t, "subgroups") {
		t.Errorf("Features.Subgroups = %v, adapter disagrees", d.Features.Subgroups)
	}
	if d.Features.Subgroups && (d.Features.SubgroupMinSize <= 0 || d.Features.SubgroupMaxSize < d.Features.SubgroupMinSize) {
		t.Errorf("subgroup sizes %d..%d", d.Features.SubgroupMinSize, d.Features.SubgroupMaxSize)
	}
}

func jsGPU() js.Value { return js.Global().Get("navigator").Get("gpu") }

// sharedAdapterHas asks a fresh adapter whether it has feature f.
func sharedAdapterHas(t *testing.T, f string) bool {
	t.Helper()
	ad, err := jsutil.Await(context.Background(), jsGPU().Call("requestAdapter", map[string]any{"powerPreference": "high-performance"}))
	if err != nil || !ad.Truthy() {
		t.Fatalf("requestAdapter: %v", err)
	}
	return jsSetHas(ad.Get("features"), f)
}

func TestDisableFeatures(t *testing.T) {
	d, err := openDevice(Options{DisableFeatures: []string{"subgroups", "shader-f16"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Features.Subgroups || d.Features.ShaderF16 {
		t.Errorf("features %+v despite DisableFeatures", d.Features)
	}
	if d.JSValue().Get("features").Call("has", "subgroups").Bool() {
		t.Error("the GPUDevice has subgroups")
	}
}

func TestAddKernel(t *testing.T) {
	d := device(t)
	k := newAddKernel(t, d)
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 63, 64, 65, 1000, 4099} {
		a, b := randF32(r, n), randF32(r, n)
		const pad = 17
		sentinel := make([]float32, n+pad)
		for i := range sentinel {
			sentinel[i] = -12345
		}
		out := f32Buffer(t, d, "out", sentinel)
		g := k.bind(t, "add", f32Buffer(t, d, "a", a), f32Buffer(t, d, "b", b), out, n)
		rec := d.NewRecorder("add")
		rec.SetPipeline(k.pipe)
		rec.SetBindGroup(0, g)
		rec.Dispatch(groups(n), 1, 1)
		prog, err := rec.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Run(prog, nil); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, n+pad)
		for i := range want {
			want[i] = -12345 // past N the kernel must not write
			if i < n {
				want[i] = a[i] + b[i]
			}
		}
		checkF32(t, "out", readF32(t, d, out, n+pad), want)
		prog.Free()
	}
}

func TestAutoLayout(t *testing.T) {
	d := device(t)
	mod, err := d.CreateShaderModule("gputest.AddWGSL", gputest.AddWGSL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.CreateComputePipeline("test_add.auto", mod, "main", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	bgl, err := p.BindGroupLayout(0)
	if err != nil {
		t.Fatal(err)
	}
	k := &addKernel{d: d, pipe: p, layout: bgl}
	a, b := []float32{1, 2, 3}, []float32{10, 20, 30}
	out := newBuffer(t, d, "out", 12, UsageStorage)
	g := k.bind(t, "add.auto", f32Buffer(t, d, "a", a), f32Buffer(t, d, "b", b), out, 3)
	rec := d.NewRecorder("auto")
	rec.SetPipeline(p)
	rec.SetBindGroup(0, g)
	rec.Dispatch(1, 1, 1)
	prog, err := rec.Finish()
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 12)
	if err := d.RunRead(prog, nil, out, 0, dst); err != nil {
		t.Fatal(err)
	}
	checkF32(t, "out", bytesF32(dst), []float32{11, 22, 33})
}

func TestShaderCompileError(t *testing.T) {
	d := device(t)
	src := "// broken on purpose\n@compute @workgroup_size(1)\nfn main() {\n    let x: f32 = undefined_thing;\n}\n"
	_, err := d.CreateShaderModule("shaders/broken.wgsl", src)
	var se *ShaderError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want *ShaderError", err, err)
	}
	t.Logf("%v", err)
	if se.File != "shaders/broken.wgsl" || len(se.Messages) == 0 {
		t.Fatalf("ShaderError %+v", se)
	}
	m := se.Messages[0]
	if m.Type != "error" || m.Line != 4 || m.Col != 18 || !strings.Contains(m.Text, "undefined_thing") ||
		!strings.Contains(m.Src, "let x: f32 = undefined_thing;") {
		t.Errorf("message %+v", m)
	}
	if !strings.HasPrefix(err.Error(), "shaders/broken.wgsl:4:18: error: ") {
		t.Errorf("Error() = %q", err.Error())
	}
	// The device stays usable after a failed compile.
	if err := d.Err(); err != nil {
		t.Errorf("device error after a compile error: %v", err)
	}
}

func TestPipelineErrorNamesEntry(t *testing.T) {
	d := device(t)
	mod, err := d.CreateShaderModule("gputest.AddWGSL", gputest.AddWGSL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.CreateComputePipeline("add.nope", mod, "nope", nil, nil)
	var ge *GPUError
	if !errors.As(err, &ge) || !strings.Contains(ge.Label, "add.nope") || !strings.Contains(err.Error(), "gputest.AddWGSL") {
		t.Fatalf("err = %v", err)
	}
	t.Logf("%v", err)
}

// ping-pong bind groups: g[0] computes x1 = x0 + b, g[1] x0 = x1 + b.
func pingPong(t testing.TB, d *Device, k *addKernel, n int, seed uint64) (x0, x1 *Buffer, g [2]*BindGroup, init, b []float32) {
	r := rand.New(rand.NewPCG(seed, 7))
	init, b = randF32(r, n), randF32(r, n)
	x0, x1 = f32Buffer(t, d, "x0", init), f32Buffer(t, d, "x1", make([]float32, n))
	bb := f32Buffer(t, d, "b", b)
	g[0] = k.bind(t, "x1=x0+b", x0, bb, x1, n)
	g[1] = k.bind(t, "x0=x1+b", x1, bb, x0, n)
	return
}

// replayProgram records steps dispatches alternating the ping-pong groups;
// it writes the element count into params from the upload first.
func replayProgram(t testing.TB, d *Device, k *addKernel, g [2]*BindGroup, steps int) *Program {
	rec := d.NewRecorder("replay")
	rec.SetPipeline(k.pipe)
	for i := 0; i < steps; i++ {
		rec.SetBindGroup(0, g[i%2])
		rec.Dispatch(groups(1000), 1, 1)
	}
	prog, err := rec.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

func TestReplay300DispatchesOneSubmit(t *testing.T) {
	d := device(t)
	k := newAddKernel(t, d)
	const n, steps = 1000, 300
	x0, _, g, init, b := pingPong(t, d, k, n, 3)
	prog := replayProgram(t, d, k, g, steps)
	defer prog.Free()
	if prog.Dispatches() != steps {
		t.Fatalf("Dispatches() = %d", prog.Dispatches())
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}

	before := d.Stats()
	dst := make([]byte, 4*n)
	if err := d.RunRead(prog, nil, x0, 0, dst); err != nil {
		t.Fatal(err)
	}
	s := d.Stats().Sub(before)
	t.Logf("one step: %+v", s)
	if s.Dispatches != steps || s.Submits != 1 || s.Passes != 1 || s.ProgramRuns != 1 || s.Maps != 1 || s.BytesRead != 4*n {
		t.Errorf("stats %+v, want %d dispatches in 1 pass, 1 submit, 1 map of %d bytes", s, steps, 4*n)
	}
	if s.JSCalls != 2 {
		t.Errorf("RunRead made %d calls into JavaScript, want 2", s.JSCalls)
	}

	want := append([]float32(nil), init...)
	for i := 0; i < steps; i++ {
		for j := range want {
			want[j] += b[j]
		}
	}
	checkF32(t, "x0 after 300 adds", bytesF32(dst), want)
}

// A Write op takes the step's uniform from the upload; copies and clears
// split the pass and the replayer re-applies pipeline and bind group.
func TestProgramWriteCopyClear(t *testing.T) {
	d := device(t)
	k := newAddKernel(t, d)
	const n = 300
	r := rand.New(rand.NewPCG(5, 6))
	a, b := randF32(r, n), randF32(r, n)
	ab, bb := f32Buffer(t, d, "a", a), f32Buffer(t, d, "b", b)
	out := newBuffer(t, d, "out", 4*n, UsageStorage)
	params := newBuffer(t, d, "params", 16, UsageUniform)
	g, err := d.CreateBindGroup("g", k.layout, Binding{Binding: 0, Buffer: ab}, Binding{Binding: 1, Buffer: bb},
		Binding{Binding: 2, Buffer: out}, Binding{Binding: 3, Buffer: params})
	if err != nil {
		t.Fatal(err)
	}
	rec := d.NewRecorder("write-copy-clear")
	rec.Write(params, 0, 0, 16)
	rec.SetPipeline(k.pipe)
	rec.SetBindGroup(0, g)
	rec.Dispatch(groups(n), 1, 1) // out = a + b over the first m
	rec.Copy(out, 0, ab, 0, 4*n)  // a = out
	rec.Clear(out, 0, 4*n)
	rec.Dispatch(groups(n), 1, 1) // out = a + b again
	prog, err := rec.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if prog.UploadSize() != 16 {
		t.Fatalf("UploadSize = %d", prog.UploadSize())
	}
	const m = 123 // the step's element count, from the upload
	before := d.Stats()
	dst := make([]byte, 4*n)
	if err := d.RunRead(prog, u32Bytes(m, 0, 0, 0), out, 0, dst); err != nil {
		t.Fatal(err)
	}
	s := d.Stats().Sub(before)
	if s.Passes != 2 || s.Dispatches != 2 || s.Submits != 1 {
		t.Errorf("stats %+v, want 2 passes, 2 dispatches, 1 submit", s)
	}
	if s.JSCalls != 3 {
		t.Errorf("RunRead with upload made %d JS calls, want 3", s.JSCalls)
	}
	want := make([]float32, n)
	for i := 0; i < m; i++ {
		want[i] = a[i] + b[i] + b[i]
	}
	checkF32(t, "out", bytesF32(dst), want)
	if err := d.Run(prog, u32Bytes(1, 2)); err == nil {
		t.Error("Run accepted an upload shorter than the program's writes")
	}
}

func TestForcedSmallBindingLimit(t *testing.T) {
	const limit = 1024
	d, err := openDevice(Options{MaxStorageBufferBindingSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Limits.MaxStorageBufferBindingSize != limit {
		t.Fatalf("MaxStorageBufferBindingSize = %d, want %d", d.Limits.MaxStorageBufferBindingSize, limit)
	}
	k := newAddKernel(t, d)
	const n = 2 * limit / 4 // two bindings' worth of f32
	r := rand.New(rand.NewPCG(9, 9))
	a, b := randF32(r, n), randF32(r, n)
	ab, bb := f32Buffer(t, d, "a", a), f32Buffer(t, d, "b", b)
	out := newBuffer(t, d, "out", 4*n, UsageStorage)
	params := newBuffer(t, d, "params", 16, UsageUniform)
	if err := d.WriteBuffer(params, 0, u32Bytes(n/2, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}

	// Binding the whole tensor breaks the forced limit.
	_, err = d.CreateBindGroup("whole", k.layout, Binding{Binding: 0, Buffer: ab}, Binding{Binding: 1, Buffer: bb},
		Binding{Binding: 2, Buffer: out}, Binding{Binding: 3, Buffer: params})
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "maxStorageBufferBindingSize" || le.Need != 4*n || le.Have != limit {
		t.Fatalf("whole binding: err = %v", err)
	}
	// Split by rows into two halves of exactly the limit.
	rec := d.NewRecorder("split")
	rec.SetPipeline(k.pipe)
	for half := uint64(0); half < 2; half++ {
		off := half * limit
		g, err := d.CreateBindGroup("half", k.layout,
			Binding{Binding: 0, Buffer: ab, Offset: off, Size: limit}, Binding{Binding: 1, Buffer: bb, Offset: off, Size: limit},
			Binding{Binding: 2, Buffer: out, Offset: off, Size: limit}, Binding{Binding: 3, Buffer: params})
		if err != nil {
			t.Fatal(err)
		}
		rec.SetBindGroup(0, g)
		rec.Dispatch(groups(n/2), 1, 1)
	}
	prog, err := rec.Finish()
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 4*n)
	if err := d.RunRead(prog, nil, out, 0, dst); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, n)
	for i := range want {
		want[i] = a[i] + b[i]
	}
	checkF32(t, "split out", bytesF32(dst), want)

	// A misaligned split offset is caught in Go.
	_, err = d.CreateBindGroup("misaligned", k.layout, Binding{Binding: 0, Buffer: ab, Offset: 4, Size: 256},
		Binding{Binding: 1, Buffer: bb}, Binding{Binding: 2, Buffer: out}, Binding{Binding: 3, Buffer: params})
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Errorf("misaligned offset: err = %v", err)
	}
}

func TestReadOddSizes(t *testing.T) {
	d := device(t)
	const size = 37
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(3*i + 1)
	}
	buf := newBuffer(t, d, "odd", size, UsageStorage)
	if buf.Size() != size {
		t.Fatalf("Size() = %d", buf.Size())
	}
	// A write may end on a partial word at the end of the buffer.
	if err := d.WriteBuffer(buf, 0, data); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int{{0, 37}, {0, 1}, {1, 1}, {3, 5}, {5, 30}, {36, 1}, {33, 4}, {2, 35}, {7, 0}} {
		got := make([]byte, c[1])
		if err := d.ReadBuffer(buf, uint64(c[0]), got); err != nil {
			t.Fatalf("read [%d,+%d): %v", c[0], c[1], err)
		}
		if string(got) != string(data[c[0]:c[0]+c[1]]) {
			t.Errorf("read [%d,+%d) = %v, want %v", c[0], c[1], got, data[c[0]:c[0]+c[1]])
		}
	}
	var ue *UsageError
	for _, c := range [][2]int{{36, 2}, {38, 0}} {
		if err := d.ReadBuffer(buf, uint64(c[0]), make([]byte, c[1])); !errors.As(err, &ue) {
			t.Errorf("read [%d,+%d) past the end: err = %v", c[0], c[1], err)
		}
	}
	for _, c := range [][2]int{{2, 4}, {4, 3}} {
		if err := d.WriteBuffer(buf, uint64(c[0]), make([]byte, c[1])); !errors.As(err, &ue) {
			t.Errorf("misaligned write [%d,+%d): err = %v", c[0], c[1], err)
		}
	}
	// The rejected writes changed nothing.
	got := make([]byte, size)
	if err := d.ReadBuffer(buf, 0, got); err != nil || string(got) != string(data) {
		t.Errorf("after rejected writes: %v, %v", got, err)
	}
}

func TestGPUValidationErrorSurfaces(t *testing.T) {
	d := device(t)
	k := newAddKernel(t, d)
	a := newBuffer(t, d, "a", 16, UsageStorage)
	// Three of the layout's four bindings: only WebGPU notices.
	g, err := d.CreateBindGroup("incomplete", k.layout, Binding{Binding: 0, Buffer: a}, Binding{Binding: 1, Buffer: a}, Binding{Binding: 2, Buffer: a})
	if err != nil {
		t.Fatalf("Go-side check rejected it: %v", err)
	}
	rec := d.NewRecorder("uses-incomplete")
	rec.SetPipeline(k.pipe)
	rec.SetBindGroup(0, g)
	rec.Dispatch(1, 1, 1)
	prog, err := rec.Finish()
	if err != nil {
		t.Fatal(err)
	}
	err = d.RunRead(prog, nil, a, 0, make([]byte, 4))
	var ge *GPUError
	if !errors.As(err, &ge) || ge.Kind != "validation" {
		t.Fatalf("err = %v, want a validation *GPUError", err)
	}
	t.Logf("%v", err)
	if !strings.Contains(err.Error(), `"incomplete"`) {
		t.Errorf("error does not name the bind group: %v", err)
	}
	// Reported once; the device goes on working.
	if err := d.Sync(); err != nil {
		t.Errorf("Sync after the reported error: %v", err)
	}
}

func TestRecorderErrors(t *testing.T) {
	d := device(t)
	k := newAddKernel(t, d)
	buf := newBuffer(t, d, "buf", 64, UsageStorage)
	max := d.Limits.MaxComputeWorkgroupsPerDimension
	for name, rec := range map[string]func(*Recorder){
		"dispatch before pipeline": func(r *Recorder) { r.Dispatch(1, 1, 1) },
		"too many workgroups":      func(r *Recorder) { r.SetPipeline(k.pipe); r.Dispatch(max+1, 1, 1) },
		"misaligned copy":          func(r *Recorder) { r.Copy(buf, 2, buf, 8, 4) },
		"copy past end":            func(r *Recorder) { r.Copy(buf, 0, buf, 32, 64) },
		"bad group index":          func(r *Recorder) { r.SetBindGroup(d.Limits.MaxBindGroups, nil) },
		"indirect without usage":   func(r *Recorder) { r.SetPipeline(k.pipe); r.DispatchIndirect(buf, 0) },
	} {
		r := d.NewRecorder(name)
		rec(r)
		_, err := r.Finish()
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestCreateBufferLimits(t *testing.T) {
	d, err := openDevice(Options{MaxBufferSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.CreateBuffer("big", 1<<20+1, UsageStorage)
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "maxBufferSize" {
		t.Errorf("err = %v", err)
	}
	if _, err := d.CreateBuffer("zero", 0, UsageStorage); err == nil {
		t.Error("zero-size buffer accepted")
	}
}

func TestDeviceLost(t *testing.T) {
	d, err := openDevice(Options{})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := d.CreateBuffer("x", 16, UsageStorage)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	var le *DeviceLostError
	if err := d.ReadBuffer(buf, 0, make([]byte, 4)); !errors.As(err, &le) || le.Reason != "destroyed" {
		t.Errorf("ReadBuffer after Close: %v", err)
	}
	if _, err := d.CreateBuffer("y", 16, UsageStorage); !errors.As(err, &le) {
		t.Errorf("CreateBuffer after Close: %v", err)
	}
	// A fresh device works after the loss.
	d2, err := openDevice(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if err := d2.Sync(); err != nil {
		t.Fatal(err)
	}
}

// The runtime's own device.lost path: destroy the GPUDevice behind the
// binding's back and wait for the browser to report it.
func TestDeviceLostFromBrowser(t *testing.T) {
	d, err := openDevice(Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.JSValue().Call("destroy")
	if _, err := jsutil.Await(context.Background(), d.JSValue().Get("lost")); err != nil {
		t.Fatal(err)
	}
	var le *DeviceLostError
	if err := d.Sync(); !errors.As(err, &le) || le.Reason != "destroyed" {
		t.Errorf("Sync after device.destroy(): %v", err)
	}
}

// TestReadbackPolls: in Firefox a pending readback keeps the device polled
// with empty submits (runtime.js), which Submits does not count; Chromium
// polls its device itself, so there are none.
func TestReadbackPolls(t *testing.T) {
	d := device(t)
	buf := newBuffer(t, d, "polled", 16, UsageStorage)
	before := d.Stats()
	for range 3 {
		if err := d.ReadBuffer(buf, 0, make([]byte, 16)); err != nil {
			t.Fatal(err)
		}
	}
	s := d.Stats().Sub(before)
	firefox := strings.Contains(js.Global().Get("navigator").Get("userAgent").String(), "Firefox/")
	t.Logf("firefox %v: %d polls, %d submits for 3 readbacks", firefox, s.Polls, s.Submits)
	if firefox && s.Polls < 3 || !firefox && s.Polls != 0 {
		t.Errorf("%d polls for 3 readbacks (firefox %v)", s.Polls, firefox)
	}
	if s.Submits != 3 || s.Maps != 3 {
		t.Errorf("%d submits and %d maps for 3 readbacks, want 3 and 3", s.Submits, s.Maps)
	}
}

// TestRunReadAsync: readbacks submitted before earlier ones are waited for
// see the queue's order (a write between them lands between them), keep
// their own bytes, and may be waited for in any order.
func TestRunReadAsync(t *testing.T) {
	d := device(t)
	buf := newBuffer(t, d, "async", 16, UsageStorage)
	x, y := make([]byte, 16), make([]byte, 16)
	for i := range x {
		x[i], y[i] = byte(i+1), byte(100+i)
	}
	if err := d.WriteBuffer(buf, 0, x); err != nil {
		t.Fatal(err)
	}
	r1, err := d.RunReadAsync(nil, nil, buf, 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteBuffer(buf, 0, y); err != nil {
		t.Fatal(err)
	}
	r2, err := d.RunReadAsync(nil, nil, buf, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	// A synchronous read behind both.
	got3 := make([]byte, 16)
	if err := d.ReadBuffer(buf, 0, got3); err != nil || string(got3) != string(y) {
		t.Fatalf("read behind two pending: %v, %v", got3, err)
	}
	got2, got1 := make([]byte, 8), make([]byte, 16)
	if err := r2.Wait(got2); err != nil || string(got2) != string(y[4:12]) {
		t.Errorf("second read %v, %v; want %v", got2, err, y[4:12])
	}
	if err := r1.Wait(got1); err != nil || string(got1) != string(x) {
		t.Errorf("first read %v, %v; want %v (before the write)", got1, err, x)
	}
	if err := r1.Wait(make([]byte, 3)); err == nil {
		t.Error("Wait with a short dst: no error")
	}
}
