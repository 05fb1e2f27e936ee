//go:build js

package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"wasmllm/cmd/bench/internal/result"
	"wasmllm/gpu/webgpu"
	"wasmllm/shaders"
)

// roofline runs the probes on d: the streaming read over a few workgroup
// shapes and the f32 FMA loop.
type roofline struct {
	d    *webgpu.Device
	mods map[string]probeModule
	t    *timer
	sync *webgpu.Buffer // 16 bytes read back to wait for the GPU
	dst  []byte
	log  func(format string, args ...any)
}

func newRoofline(d *webgpu.Device, t *timer, log func(string, ...any)) (*roofline, error) {
	sync, err := d.CreateBuffer("probe sync", 16, webgpu.UsageStorage)
	if err != nil {
		return nil, err
	}
	r := &roofline{d: d, mods: map[string]probeModule{}, t: t, sync: sync, dst: make([]byte, 4), log: log}
	// The cost of a readback alone: the least of a few, as for the timings.
	var best float64
	for i := range 7 {
		start := time.Now()
		if err := d.RunRead(nil, nil, sync, 0, r.dst); err != nil {
			return nil, err
		}
		if ms := msSince(start); i == 0 || ms < best {
			best = ms
		}
	}
	t.syncMs = best
	return r, nil
}

// probeModule is a compiled shader and the interface read from its source.
type probeModule struct {
	sm    *webgpu.ShaderModule
	iface *shaders.Module
}

// pipeline compiles entry of a shaders/ file with override constants, with
// the bind group layout its WGSL declares.
func (r *roofline) pipeline(file, entry string, consts map[string]float64) (*webgpu.Pipeline, *webgpu.BindGroupLayout, error) {
	mod, ok := r.mods[file]
	if !ok {
		src, err := shaders.Build(file, shaders.Features{Subgroups: r.d.Features.Subgroups, F16: r.d.Features.ShaderF16})
		if err != nil {
			return nil, nil, err
		}
		if mod.iface, err = shaders.Parse(shaders.Path(file), src); err != nil {
			return nil, nil, err
		}
		if mod.sm, err = r.d.CreateShaderModule(shaders.Path(file), src); err != nil {
			return nil, nil, err
		}
		r.mods[file] = mod
	}
	e, ok := mod.iface.Entries[entry]
	if !ok {
		return nil, nil, fmt.Errorf("%s has no entry point %s", shaders.Path(file), entry)
	}
	types := make([]webgpu.BindingType, len(e.Bindings))
	for i, b := range e.Bindings {
		switch b.Access {
		case shaders.Read:
			types[i] = webgpu.ReadOnlyStorage
		case shaders.ReadWrite:
			types[i] = webgpu.Storage
		case shaders.Uniform:
			types[i] = webgpu.Uniform
		}
	}
	label := fmt.Sprintf("%s:%s %v", file, entry, consts)
	bgl, err := r.d.CreateBindGroupLayout(label, types...)
	if err != nil {
		return nil, nil, err
	}
	pl, err := r.d.CreatePipelineLayout(label, bgl)
	if err != nil {
		return nil, nil, err
	}
	p, err := r.d.CreateComputePipeline(label, mod.sm, entry, pl, consts)
	return p, bgl, err
}

// grid splits n workgroups into (x, y) within the per-dimension limit.
func (r *roofline) grid(n int) (int, int) {
	m := r.d.Limits.MaxComputeWorkgroupsPerDimension
	if n <= m {
		return n, 1
	}
	y := (n + m - 1) / m
	return (n + y - 1) / y, y
}

// program records calls dispatches of one pipeline and bind group.
func (r *roofline) program(label string, p *webgpu.Pipeline, bg *webgpu.BindGroup, groups, calls int) (*webgpu.Program, error) {
	rec := r.d.NewRecorder(label)
	rec.SetPipeline(p)
	rec.SetBindGroup(0, bg)
	x, y := r.grid(groups)
	for range calls {
		rec.Dispatch(x, y, 1)
	}
	return rec.Finish()
}

// timeDispatches returns the milliseconds of one dispatch of (p, bg) over
// groups workgroups: a first submit sizes the timed ones.
func (r *roofline) timeDispatches(label string, p *webgpu.Pipeline, bg *webgpu.BindGroup, groups int) (float64, int, error) {
	one, err := r.program(label, p, bg, groups, 1)
	if err != nil {
		return 0, 0, err
	}
	defer one.Free()
	run := func(prog *webgpu.Program) error { return r.d.RunRead(prog, nil, r.sync, 0, r.dst) }
	if err := run(one); err != nil { // compile and warm
		return 0, 0, err
	}
	start := time.Now()
	if err := run(one); err != nil {
		return 0, 0, err
	}
	calls := r.t.calls(time.Since(start), 512)
	prog, err := r.program(label, p, bg, groups, calls)
	if err != nil {
		return 0, 0, err
	}
	defer prog.Free()
	ms, err := r.t.best(func() error { return run(prog) })
	return ms / float64(calls), calls, err
}

// readShapes are the (threads per workgroup, workgroups) the read probe
// tries; each thread reads 16 bytes per step, grid-stride.
var readShapes = [][2]int{{64, 4096}, {64, 16384}, {128, 2048}, {128, 8192}, {256, 1024}, {256, 4096}, {256, 16384}}

// read runs shaders/bench_read.wgsl (stream_read) over size bytes of
// random data with each shape and returns the best.
func (r *roofline) read(size int64, rf *result.Roofline) error {
	src, err := r.d.CreateBuffer("probe src", uint64(size), webgpu.UsageStorage)
	if err != nil {
		return err
	}
	defer src.Destroy()
	if err := r.fillRandom(src, size); err != nil {
		return err
	}
	n := size / 16
	rf.ReadBytes = size
	for _, sh := range readShapes {
		wg, groups := sh[0], sh[1]
		p, bgl, err := r.pipeline("bench_read.wgsl", "stream_read", map[string]float64{"WG": float64(wg)})
		if err != nil {
			return err
		}
		dst, err := r.d.CreateBuffer("probe dst", uint64(wg*groups*16), webgpu.UsageStorage)
		if err != nil {
			return err
		}
		params, err := r.params(uint32(n), 0x9e3779b9)
		if err != nil {
			return err
		}
		bg, err := r.d.CreateBindGroup("probe read", bgl, webgpu.Binding{Binding: 0, Buffer: src},
			webgpu.Binding{Binding: 1, Buffer: dst}, webgpu.Binding{Binding: 2, Buffer: params})
		if err != nil {
			return err
		}
		ms, calls, err := r.timeDispatches("read probe", p, bg, groups)
		dst.Destroy()
		params.Destroy()
		if err != nil {
			return err
		}
		gbps := float64(size) / ms / 1e6
		r.log("read probe: %d workgroups of %d: %.2f GB/s (%.3f ms, %d per submit)", groups, wg, gbps, ms, calls)
		rf.ReadShapes = append(rf.ReadShapes, result.Shape{WG: wg, Groups: groups, Rate: gbps})
		rf.ReadGBps = max(rf.ReadGBps, gbps)
	}
	return nil
}

// fmaShapes are the (threads per workgroup, workgroups) of the FMA probe.
var fmaShapes = [][2]int{{64, 2048}, {64, 8192}, {256, 512}, {256, 2048}}

// fma runs shaders/bench_fma.wgsl with each shape, sizing the loop so a
// dispatch takes a few milliseconds, and returns the best rate.
func (r *roofline) fma(rf *result.Roofline) error {
	for _, sh := range fmaShapes {
		wg, groups := sh[0], sh[1]
		p, bgl, err := r.pipeline("bench_fma.wgsl", "fma_loop", map[string]float64{"WG": float64(wg)})
		if err != nil {
			return err
		}
		dst, err := r.d.CreateBuffer("fma dst", uint64(wg*groups*16), webgpu.UsageStorage)
		if err != nil {
			return err
		}
		// More rounds per thread until the rate stops growing: a short
		// loop measures the launch of the threads, not the arithmetic.
		iters, best, bestIters := 64, 0.0, 0
		for iters <= 1<<16 {
			params, err := r.params(uint32(iters), 0x7f7fffff)
			if err != nil {
				return err
			}
			bg, err := r.d.CreateBindGroup("fma", bgl, webgpu.Binding{Binding: 0, Buffer: dst}, webgpu.Binding{Binding: 1, Buffer: params})
			if err != nil {
				return err
			}
			ms, _, err := r.timeDispatches("fma probe", p, bg, groups)
			params.Destroy()
			if err != nil {
				return err
			}
			rate := float64(wg*groups) * float64(iters) * 64 / ms / 1e6
			grew := rate > 1.1*best
			if rate > best {
				best, bestIters = rate, iters
			}
			if ms > 100 || (ms >= 10 && !grew) {
				break
			}
			iters *= 4
		}
		dst.Destroy()
		gflops := best
		r.log("fma probe: %d workgroups of %d, %d rounds: %.1f GFLOP/s", groups, wg, bestIters, gflops)
		rf.FMAShapes = append(rf.FMAShapes, result.Shape{WG: wg, Groups: groups, Rate: gflops})
		rf.FMAGFLOPs = max(rf.FMAGFLOPs, gflops)
	}
	return nil
}

// params makes a 16-byte uniform of two words.
func (r *roofline) params(a, b uint32) (*webgpu.Buffer, error) {
	buf, err := r.d.CreateBuffer("probe params", 16, webgpu.UsageUniform)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, 16)
	binary.LittleEndian.PutUint32(raw, a)
	binary.LittleEndian.PutUint32(raw[4:], b)
	return buf, r.d.WriteBuffer(buf, 0, raw)
}

// fillRandom writes 16 MiB of random bytes to a staging buffer and copies
// them over buf on the GPU.
func (r *roofline) fillRandom(buf *webgpu.Buffer, size int64) error {
	chunk := min(size, 16<<20)
	raw := make([]byte, chunk)
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i+8 <= len(raw); i += 8 {
		binary.LittleEndian.PutUint64(raw[i:], rng.Uint64())
	}
	stage, err := r.d.CreateBuffer("probe stage", uint64(chunk), webgpu.UsageStorage)
	if err != nil {
		return err
	}
	defer stage.Destroy()
	if err := r.d.WriteBuffer(stage, 0, raw); err != nil {
		return err
	}
	rec := r.d.NewRecorder("fill")
	for off := int64(0); off < size; off += chunk {
		rec.Copy(stage, 0, buf, uint64(off), uint64(min(chunk, size-off)))
	}
	prog, err := rec.Finish()
	if err != nil {
		return err
	}
	defer prog.Free()
	return r.d.RunRead(prog, nil, r.sync, 0, r.dst)
}
