//go:build js

package webgpu

import (
	"syscall/js"
	"testing"
)

// stepProgram is a decode-step stand-in: a 16-byte uniform written from the
// upload, then 300 dispatches alternating two bind groups.
func stepProgram(b *testing.B, d *Device) (*Program, *Buffer) {
	k := newAddKernel(b, d)
	x0, _, g, _, _ := pingPong(b, d, k, 1000, 1)
	step := newBuffer(b, d, "step", 16, UsageUniform)
	rec := d.NewRecorder("step")
	rec.Write(step, 0, 0, 16)
	rec.SetPipeline(k.pipe)
	for i := 0; i < 300; i++ {
		rec.SetBindGroup(0, g[i%2])
		rec.Dispatch(groups(1000), 1, 1)
	}
	prog, err := rec.Finish()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(prog.Free)
	return prog, x0
}

func reportStats(b *testing.B, s Stats) {
	n := float64(b.N)
	b.ReportMetric(float64(s.Dispatches)/n, "dispatches/op")
	b.ReportMetric(float64(s.Submits)/n, "submits/op")
	b.ReportMetric(float64(s.JSCalls)/n, "jscalls/op")
	b.ReportMetric(float64(s.BytesRead)/n, "readB/op")
}

// BenchmarkReplay300 is the per-step Go+JS cost of encoding and submitting
// 300 dispatches through the replayer, without waiting for the GPU (the
// queue is drained every 16 steps with the timer stopped).
func BenchmarkReplay300(b *testing.B) {
	d := device(b)
	prog, _ := stepProgram(b, d)
	upload := u32Bytes(1, 2, 3, 4)
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	before := d.Stats()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Run(prog, upload); err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 {
			b.StopTimer()
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	reportStats(b, d.Stats().Sub(before))
}

// BenchmarkReplay300Read is a whole step as the sampler sees it: upload,
// 300 dispatches, and a 4-byte readback in the same submit, waiting for the
// GPU (on SwiftShader this includes running the kernels on the CPU).
func BenchmarkReplay300Read(b *testing.B) {
	d := device(b)
	prog, x0 := stepProgram(b, d)
	upload := u32Bytes(1, 2, 3, 4)
	dst := make([]byte, 4)
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	before := d.Stats()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.RunRead(prog, upload, x0, 0, dst); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportStats(b, d.Stats().Sub(before))
}

// BenchmarkEncodeFromGo300 is the baseline the replayer replaces: the same
// 300 dispatches encoded call by call from Go.
func BenchmarkEncodeFromGo300(b *testing.B) {
	d := device(b)
	k := newAddKernel(b, d)
	x0, x1, _, _, _ := pingPong(b, d, k, 1000, 1)
	bb := f32Buffer(b, d, "b", make([]float32, 1000))
	params := newBuffer(b, d, "params", 16, UsageUniform)
	if err := d.WriteBuffer(params, 0, u32Bytes(1000, 0, 0, 0)); err != nil {
		b.Fatal(err)
	}
	entry := func(i int, buf *Buffer) any {
		return map[string]any{"binding": i, "resource": map[string]any{"buffer": buf.JSValue()}}
	}
	var g [2]js.Value
	for i, io := range [2][2]*Buffer{{x0, x1}, {x1, x0}} {
		g[i] = d.dev.Call("createBindGroup", map[string]any{"layout": k.layout.v, "entries": []any{
			entry(0, io[0]), entry(1, bb), entry(2, io[1]), entry(3, params)}})
	}
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	before := d.Stats()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		enc := d.dev.Call("createCommandEncoder")
		pass := enc.Call("beginComputePass")
		pass.Call("setPipeline", k.pipe.v)
		for j := 0; j < 300; j++ {
			pass.Call("setBindGroup", 0, g[j%2])
			pass.Call("dispatchWorkgroups", groups(1000), 1, 1)
		}
		pass.Call("end")
		d.queue.Call("submit", []any{enc.Call("finish")})
		if i%16 == 15 {
			b.StopTimer()
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	if err := d.Sync(); err != nil {
		b.Fatal(err)
	}
	s := d.Stats().Sub(before)
	s.Dispatches, s.Submits, s.JSCalls = int64(300*b.N), int64(b.N), int64(606*b.N)
	reportStats(b, s)
}
