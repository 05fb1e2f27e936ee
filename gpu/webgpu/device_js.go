//go:build js

package webgpu

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall/js"
	"wasmllm/internal/jsutil"
)

//go:embed runtime.js
var runtimeJS string

// requestedFeatures are the optional features Open asks for when present.
var requestedFeatures = []string{"subgroups", "shader-f16"}

// Device is an open WebGPU device with the runtime that replays programs.
type Device struct {
	Limits      Limits
	Features    Features
	AdapterInfo AdapterInfo

	dev, queue, rt js.Value
	upload         js.Value // the runtime's upload array, uploadCap bytes
	uploadCap      int
	done           chan doneMsg
	onDone, onLost js.Func
	seq            int            // the next completion's sequence number
	inflight       []*PendingRead // completions not yet received, in order
	lost           atomic.Pointer[DeviceLostError]
	closed         bool
	jsCalls        int64
}

// doneMsg is what the runtime passes to onDone.
type doneMsg struct {
	errMsg   string // "" on success
	view     js.Value
	errCount int
	seq      int
}

// Open requests a high-performance adapter and a device with the adapter's
// maximum buffer, binding and workgroup limits and the subgroups and
// shader-f16 features when the adapter has them.
func Open(ctx context.Context, opt Options) (*Device, error) {
	gpu := js.Global().Get("navigator").Get("gpu")
	if !gpu.Truthy() {
		return nil, fmt.Errorf("%w: navigator.gpu is undefined (not a secure context, or the browser lacks WebGPU)", ErrNoWebGPU)
	}
	pref := opt.PowerPreference
	if pref == "" {
		pref = "high-performance"
	}
	adapter, err := jsutil.Await(ctx, gpu.Call("requestAdapter", map[string]any{"powerPreference": pref}))
	if err != nil {
		return nil, fmt.Errorf("%w: requestAdapter: %v", ErrNoWebGPU, err)
	}
	if !adapter.Truthy() {
		return nil, fmt.Errorf("%w: requestAdapter returned no adapter", ErrNoWebGPU)
	}

	d := &Device{done: make(chan doneMsg, maxInflight)}
	info := adapter.Get("info")
	d.AdapterInfo = AdapterInfo{
		Vendor:       jsStr(info, "vendor"),
		Architecture: jsStr(info, "architecture"),
		Device:       jsStr(info, "device"),
		Description:  jsStr(info, "description"),
		Fallback:     info.Get("isFallbackAdapter").Truthy() || adapter.Get("isFallbackAdapter").Truthy(),
	}

	al := adapter.Get("limits")
	required := map[string]any{}
	for _, name := range []string{
		"maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize",
		"maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX", "maxComputeWorkgroupSizeY",
		"maxComputeWorkgroupSizeZ", "maxComputeWorkgroupsPerDimension", "maxStorageBuffersPerShaderStage",
		"maxUniformBufferBindingSize", "maxBindGroups",
	} {
		if v := al.Get(name); v.Type() == js.TypeNumber {
			required[name] = v.Float()
		}
	}
	var features []any
	for _, f := range requestedFeatures {
		if jsSetHas(adapter.Get("features"), f) && !slices.Contains(opt.DisableFeatures, f) {
			features = append(features, f)
		}
	}
	dev, err := jsutil.Await(ctx, adapter.Call("requestDevice", map[string]any{
		"label":            "wasmllm",
		"requiredLimits":   required,
		"requiredFeatures": features,
	}))
	if err != nil {
		return nil, fmt.Errorf("gpu: requestDevice: %v", err)
	}
	d.dev = dev
	d.queue = dev.Get("queue")

	l := dev.Get("limits")
	d.Limits = Limits{
		MaxStorageBufferBindingSize:       uint64(jsNum(l, "maxStorageBufferBindingSize")),
		MaxBufferSize:                     uint64(jsNum(l, "maxBufferSize")),
		MaxUniformBufferBindingSize:       uint64(jsNum(l, "maxUniformBufferBindingSize")),
		MaxComputeWorkgroupStorageSize:    int(jsNum(l, "maxComputeWorkgroupStorageSize")),
		MaxComputeInvocationsPerWorkgroup: int(jsNum(l, "maxComputeInvocationsPerWorkgroup")),
		MaxComputeWorkgroupSizeX:          int(jsNum(l, "maxComputeWorkgroupSizeX")),
		MaxComputeWorkgroupSizeY:          int(jsNum(l, "maxComputeWorkgroupSizeY")),
		MaxComputeWorkgroupSizeZ:          int(jsNum(l, "maxComputeWorkgroupSizeZ")),
		MaxComputeWorkgroupsPerDimension:  int(jsNum(l, "maxComputeWorkgroupsPerDimension")),
		MaxStorageBuffersPerShaderStage:   int(jsNum(l, "maxStorageBuffersPerShaderStage")),
		MaxBindGroups:                     int(jsNum(l, "maxBindGroups")),
		MinStorageBufferOffsetAlignment:   int(jsNum(l, "minStorageBufferOffsetAlignment")),
		MinUniformBufferOffsetAlignment:   int(jsNum(l, "minUniformBufferOffsetAlignment")),
	}
	if v := opt.MaxStorageBufferBindingSize; v != 0 && v < d.Limits.MaxStorageBufferBindingSize {
		d.Limits.MaxStorageBufferBindingSize = v
	}
	if v := opt.MaxBufferSize; v != 0 && v < d.Limits.MaxBufferSize {
		d.Limits.MaxBufferSize = v
	}
	df := dev.Get("features")
	d.Features = Features{Subgroups: jsSetHas(df, "subgroups"), ShaderF16: jsSetHas(df, "shader-f16")}
	if d.Features.Subgroups {
		d.Features.SubgroupMinSize = int(jsNum(info, "subgroupMinSize"))
		d.Features.SubgroupMaxSize = int(jsNum(info, "subgroupMaxSize"))
	}

	d.onDone = js.FuncOf(func(_ js.Value, a []js.Value) any {
		m := doneMsg{view: jsutil.Arg(a, 1)}
		if e := jsutil.Arg(a, 0); e.Type() == js.TypeString {
			m.errMsg = e.String()
		}
		if n := jsutil.Arg(a, 2); n.Type() == js.TypeNumber {
			m.errCount = n.Int()
		}
		if n := jsutil.Arg(a, 3); n.Type() == js.TypeNumber {
			m.seq = n.Int()
		}
		d.done <- m
		return nil
	})
	d.onLost = js.FuncOf(func(_ js.Value, a []js.Value) any {
		d.lost.CompareAndSwap(nil, &DeviceLostError{Reason: jsutil.Arg(a, 0).String(), Message: jsutil.Arg(a, 1).String()})
		return nil
	})
	err = try("gpu runtime", func() {
		factory := js.Global().Get("Function").New("return (" + runtimeJS + ")").Invoke()
		d.rt = factory.Invoke(dev, d.onDone, d.onLost)
		d.upload = d.rt.Call("uploadBuffer", 0)
		d.uploadCap = d.upload.Length()
	})
	if err != nil {
		dev.Call("destroy")
		d.release()
		return nil, err
	}
	return d, nil
}

// Close destroys the device. Later calls return a *DeviceLostError with
// Reason "destroyed".
func (d *Device) Close() {
	if d.closed {
		return
	}
	d.closed = true
	d.lost.CompareAndSwap(nil, &DeviceLostError{Reason: "destroyed", Message: "Device.Close was called"})
	d.dev.Call("destroy")
	// onLost and onDone stay alive: the runtime may still call them once.
}

func (d *Device) release() {
	d.onDone.Release()
	d.onLost.Release()
}

// Lost returns the *DeviceLostError once the device is lost, else nil.
func (d *Device) Lost() error {
	if e := d.lost.Load(); e != nil {
		return e
	}
	return nil
}

// Err returns the errors WebGPU has reported so far and not yet returned
// (see the package doc), or the loss of the device.
func (d *Device) Err() error {
	if err := d.Lost(); err != nil {
		return err
	}
	return d.takeErrors(d.rt.Call("errorCount").Int())
}

// Sync waits until the GPU has finished all submitted work and every error
// scope has settled, then returns any error WebGPU reported.
func (d *Device) Sync() error {
	if err := d.Lost(); err != nil {
		return err
	}
	d.jsCalls++
	r := d.expect(0)
	d.rt.Call("sync", r.seq)
	return d.doneErr(d.await(r), "Sync")
}

// doneErr turns a runtime completion into an error.
func (d *Device) doneErr(m doneMsg, op string) error {
	if err := d.Lost(); err != nil {
		return err
	}
	if err := d.takeErrors(m.errCount); err != nil {
		return err
	}
	if m.errMsg != "" {
		return &GPUError{Kind: "exception", Label: op, Message: m.errMsg}
	}
	return nil
}

// takeErrors fetches and clears the runtime's recorded errors when n > 0.
func (d *Device) takeErrors(n int) error {
	if n <= 0 {
		return nil
	}
	list := d.rt.Call("takeErrors")
	errs := make([]error, 0, list.Length())
	for i := 0; i < list.Length(); i++ {
		e := list.Index(i)
		errs = append(errs, &GPUError{Kind: jsStr(e, "kind"), Label: jsStr(e, "label"), Message: jsStr(e, "message")})
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Stats returns the work counters since Open.
func (d *Device) Stats() Stats {
	s := d.rt.Get("stats")
	return Stats{
		Dispatches:   int64(jsNum(s, "dispatches")),
		Submits:      int64(jsNum(s, "submits")),
		Passes:       int64(jsNum(s, "passes")),
		Maps:         int64(jsNum(s, "maps")),
		BytesRead:    int64(jsNum(s, "bytesRead")),
		BytesWritten: int64(jsNum(s, "bytesWritten")),
		ProgramRuns:  int64(jsNum(s, "runs")),
		Polls:        int64(jsNum(s, "polls")),
		JSCalls:      d.jsCalls,
	}
}

// JSValue returns the underlying GPUDevice, for code that needs WebGPU calls
// this package does not wrap.
func (d *Device) JSValue() js.Value { return d.dev }
