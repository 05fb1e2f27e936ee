//go:build js

package gpu

import (
	"context"
	"errors"
	"fmt"

	"wasmllm/gpu/webgpu"
	"wasmllm/model"
)

// BackendOptions configures NewBackend.
type BackendOptions struct {
	// MaxPrograms bounds the cache of recorded programs (default 64).
	MaxPrograms int
	// PrefillMath is the prefill GEMM's arithmetic (default MathAuto).
	PrefillMath Math

	// pipelines, when set, is a cache of compiled pipelines of the same
	// device shared with other backends (nil: the backend's own).
	pipelines *pipelineCache
}

// Backend is the WebGPU model.Backend. Ops append commands to a pending
// list; a Read turns the list into one program (recorded once per distinct
// list, then replayed) and submits it once. A decode step therefore costs a
// fixed handful of calls into JavaScript however many dispatches it has.
type Backend struct {
	d    *webgpu.Device
	opts BackendOptions
	tune tuning // the choices by adapter kind (tuning.go)

	pipes  *pipelineCache // compiled modules and pipelines
	groups map[groupKey]*webgpu.BindGroup
	params map[Params]*webgpu.Buffer
	dummy  *webgpu.Buffer // bound where a kernel's optional input is absent

	pending []cmd
	upload  []byte
	rbuf    []byte
	pair    *webgpu.Buffer // staging for ReadI32F32
	writes  bool           // pending holds only writes so far
	progs   map[uint64][]*cachedProg
	nprogs  int
	tick    uint64

	err error // first error of a deferred op, returned by the next Read

	ops opKernels

	// Counters for benchmarks (see Stats).
	counters BackendStats
	// layerMarks are counters.Dispatches at each MarkLayer of the last
	// Forward (see backend_layers_js.go).
	layerMarks []int64
}

// BackendStats counts the backend's own work; Device.Stats counts the
// device's.
type BackendStats struct {
	Flushes         int64 // programs submitted
	ProgramBuilds   int64 // programs recorded (cache misses)
	Commands        int64 // commands submitted
	Dispatches      int64 // dispatch commands recorded
	WeightBytes     int64 // bytes of weights uploaded
	ActivationBytes int64
}

var (
	_ model.Backend          = (*Backend)(nil)
	_ model.PairReader       = (*Backend)(nil)
	_ model.KVCacheAllocator = (*Backend)(nil)
)

// Device and Options are the binding's, which OpenBackend opens and returns,
// so that a caller which only opens a backend needs no second import.
type (
	Device  = webgpu.Device
	Options = webgpu.Options
)

// OpenBackend opens the browser's WebGPU device with o and builds a Backend
// on it; the caller closes the device when done.
func OpenBackend(ctx context.Context, o Options, bo BackendOptions) (*Backend, *Device, error) {
	d, err := webgpu.Open(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	b, err := NewBackend(d, bo)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return b, d, nil
}

// NewBackend builds a Backend on an open device.
func NewBackend(d *webgpu.Device, opts BackendOptions) (*Backend, error) {
	if opts.MaxPrograms <= 0 {
		opts.MaxPrograms = 64
	}
	b := &Backend{
		d: d, opts: opts,
		pipes:  opts.pipelines,
		groups: map[groupKey]*webgpu.BindGroup{},
		params: map[Params]*webgpu.Buffer{},
		progs:  map[uint64][]*cachedProg{},
		tune:   newTuning(d.AdapterInfo, d.Features, d.Limits, opts.PrefillMath),
	}
	if b.pipes == nil {
		b.pipes = newPipelineCache(d)
	} else if b.pipes.d != d {
		return nil, fmt.Errorf("gpu: a pipeline cache of another device")
	}
	var err error
	if b.dummy, err = d.CreateBuffer("dummy", 16, webgpu.UsageStorage); err != nil {
		return nil, err
	}
	return b, nil
}

// F16Math reports whether the prefill GEMM multiplies in f16.
func (b *Backend) F16Math() bool { return b.tune.f16math }

// Device returns the backend's device.
func (b *Backend) Device() *webgpu.Device { return b.d }

// Stats returns the backend's counters.
func (b *Backend) Stats() BackendStats { return b.counters }

// fail records the first error of a deferred op.
func (b *Backend) fail(err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
}

// takeErr returns and clears the deferred error, or the device's loss.
func (b *Backend) takeErr() error {
	if err := b.d.Lost(); err != nil {
		return err
	}
	err := b.err
	b.err = nil
	return err
}

// ErrOp reports an op that could not be recorded.
var ErrOp = errors.New("gpu backend: op failed")

func (b *Backend) opErr(op string, format string, args ...any) {
	b.fail(fmt.Errorf("%w: %s: %s", ErrOp, op, fmt.Sprintf(format, args...)))
}
