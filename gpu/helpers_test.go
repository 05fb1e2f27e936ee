//go:build js

package gpu

import (
	"context"
	"encoding/binary"
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

var (
	sharedOnce sync.Once
	sharedDev  *webgpu.Device
	sharedErr  error
)

// device returns the device shared by the tests that do not change it.
func device(t testing.TB) *webgpu.Device {
	t.Helper()
	sharedOnce.Do(func() { sharedDev, sharedErr = openDevice(webgpu.Options{}) })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedDev
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
