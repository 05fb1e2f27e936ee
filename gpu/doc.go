// Package gpu is a thin WebGPU binding over syscall/js, covering what the
// WebGPU backend uses: one device, storage/uniform buffers, WGSL compute
// pipelines, bind groups, and programs.
//
// A Program is a prebuilt list of compute work (set pipeline, set bind
// group, dispatch, copy, clear, write) that a small JavaScript replayer
// encodes into one command buffer and submits once, so a decode step crosses
// from Go into JavaScript a fixed number of times however many dispatches it
// has. Device.Run replays a program; Device.RunRead replays one and reads a
// small buffer back in the same submit.
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
// *UsageError or *LimitError at the call that makes them.
package gpu
