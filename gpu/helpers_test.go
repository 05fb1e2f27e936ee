//go:build js

package gpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"wasmllm/gpu/webgpu"
	"wasmllm/internal/testkit/gputest"
)

// Helpers shared by the backend's tests; the binding's own tests in
// gpu/webgpu have their twins.

// testDevices are the devices the tests share, one for each distinct
// webgpu.Options, with the compiled pipelines of each. On the software
// adapters compiling a pipeline is most of a kernel test's time, so a
// kernel compiles once per test binary: every test builds its own Backend
// (its own tuning, programs, bind groups and errors) on the shared device
// and its cache of pipelines. A test that loses or closes its device opens
// its own (openDevice).
var testDevices struct {
	sync.Mutex
	byOpts map[string]*webgpu.Device
	errs   map[string]error
	pipes  map[*webgpu.Device]*pipelineCache
}

// sharedDevice returns the test binary's device opened with opt, opening
// it on first use; it is never closed.
func sharedDevice(t testing.TB, opt webgpu.Options) *webgpu.Device {
	t.Helper()
	key := fmt.Sprintf("%+v", opt)
	testDevices.Lock()
	defer testDevices.Unlock()
	if testDevices.byOpts == nil {
		testDevices.byOpts, testDevices.errs = map[string]*webgpu.Device{}, map[string]error{}
		testDevices.pipes = map[*webgpu.Device]*pipelineCache{}
	}
	d, ok := testDevices.byOpts[key]
	if !ok {
		var err error
		if d, err = openDevice(opt); err != nil {
			testDevices.errs[key] = err
		} else {
			testDevices.byOpts[key] = d
			testDevices.pipes[d] = newPipelineCache(d)
		}
	}
	if err := testDevices.errs[key]; err != nil {
		t.Fatal(err)
	}
	return d
}

// sharedPipelines returns the BackendOptions for a Backend on the shared
// device d: opts with d's cache of compiled pipelines.
func sharedPipelines(d *webgpu.Device, opts BackendOptions) BackendOptions {
	testDevices.Lock()
	defer testDevices.Unlock()
	opts.pipelines = testDevices.pipes[d]
	return opts
}

// device returns the device shared by the tests that do not change it.
func device(t testing.TB) *webgpu.Device {
	t.Helper()
	return sharedDevice(t, webgpu.Options{})
}

func openDevice(opt webgpu.Options) (*webgpu.Device, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return webgpu.Open(ctx, opt)
}

// addKernel is gputest.AddWGSL with an explicit layout.
type addKernel struct {
	d      *webgpu.Device
	pipe   *webgpu.Pipeline
	layout *webgpu.BindGroupLayout
}

func newAddKernel(t testing.TB, d *webgpu.Device) *addKernel {
	t.Helper()
	mod, err := d.CreateShaderModule("gputest.AddWGSL", gputest.AddWGSL)
	if err != nil {
		t.Fatal(err)
	}
	bgl, err := d.CreateBindGroupLayout("test_add", webgpu.ReadOnlyStorage, webgpu.ReadOnlyStorage, webgpu.Storage, webgpu.Uniform)
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

func groups(n int) int { return (n + 63) / 64 }

func newBuffer(t testing.TB, d *webgpu.Device, label string, size uint64, usage webgpu.BufferUsage) *webgpu.Buffer {
	t.Helper()
	b, err := d.CreateBuffer(label, size, usage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Destroy)
	return b
}

func f32Buffer(t testing.TB, d *webgpu.Device, label string, v []float32) *webgpu.Buffer {
	t.Helper()
	b := newBuffer(t, d, label, uint64(4*len(v)), webgpu.UsageStorage)
	if err := d.WriteBuffer(b, 0, f32Bytes(v)); err != nil {
		t.Fatal(err)
	}
	return b
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
