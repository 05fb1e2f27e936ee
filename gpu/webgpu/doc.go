// Package webgpu is a thin WebGPU binding over syscall/js, covering what the
// WebGPU backend (package gpu) and the bench probes use: one device,
// storage/uniform buffers, WGSL compute pipelines, bind groups, and programs.
// It knows nothing of models, kernels or shaders/: those are package gpu's,
// which imports this one.
//
// A Program is a prebuilt list of compute work (set pipeline, set bind
// group, dispatch, copy, clear, write) that a small JavaScript replayer
// encodes into one command buffer and submits once, so a decode step crosses
// from Go into JavaScript a fixed number of times however many dispatches it
// has. Device.Run replays a program; Device.RunRead replays one and reads a
// small buffer back in the same submit.
//
// A typical use, at load time and then once per step:
//
//	d, err := webgpu.Open(ctx, webgpu.Options{})
//	mod, err := d.CreateShaderModule("shaders/add.wgsl", src)
//	bgl, err := d.CreateBindGroupLayout("add", webgpu.ReadOnlyStorage, webgpu.ReadOnlyStorage, webgpu.Storage, webgpu.Uniform)
//	pl, err := d.CreatePipelineLayout("add", bgl)
//	pipe, err := d.CreateComputePipeline("add", mod, "main", pl, nil)
//	bg, err := d.CreateBindGroup("add", bgl, webgpu.Binding{Binding: 0, Buffer: a}, ...)
//	rec := d.NewRecorder("decode")
//	rec.Write(params, 0, 0, 16) // the step's uniform, from Run's upload
//	rec.SetPipeline(pipe)
//	rec.SetBindGroup(0, bg)
//	rec.Dispatch(groups, 1, 1)
//	prog, err := rec.Finish()
//	// per step: one submit, one await, 4 bytes back
//	err = d.RunRead(prog, upload, ids, 0, dst[:4])
//
// Everything that touches JavaScript needs GOOS=js (files with the js build
// tag); the error and option types build everywhere. A Device is not safe for
// concurrent use: drive it from one goroutine, never from inside a js.Func
// callback, since its blocking calls wait on the browser's event loop.
//
// WebGPU reports validation and out-of-memory errors asynchronously. Shader
// compilation and pipeline creation wait for theirs. Other errors come back,
// naming the object's label, from the next Run, RunRead, ReadBuffer or Sync.
// Sizes, offsets and limits are checked in Go first, so most mistakes are a
// *UsageError or *LimitError at the call that makes them. Error messages
// start with "gpu: ", as they did when this package was part of package gpu.
//
// The JavaScript half, runtime.js (embedded), holds the object tables and
// replays programs; the opcodes in program_js.go are its contract.
//
// Waiting for a readback is the browser's: Dawn (Chromium) resolves a
// mapAsync on its own, wgpu (Firefox) only when its device is polled, which
// unprompted happens about every 100 ms (a cap of about 10 tok/s whatever
// the model). While a readback is pending in Firefox, runtime.js submits an
// empty command list at most once a millisecond, yielding through a
// MessageChannel between polls (Stats.Polls counts them; they are not
// Submits). Unthrottled, the empty submits flood wgpu and slow decode
// further (2.6 tok/s on stories260K); at 1 ms, Firefox over llvmpipe
// decoded the tiny models at 130-185 tok/s, against 10 without polling and
// 60 in Chromium over SwiftShader on the same machine. In Chromium the loop
// gains nothing and takes a core from a software adapter, so it is off
// there.
package webgpu
