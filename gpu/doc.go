// Package gpu is the WebGPU model.Backend: the model's ops as WGSL compute
// kernels (shaders/) over the binding in package gpu/webgpu, plus the KV
// cache, weight upload (split by rows to the device's binding limits) and
// top-k/argmax selection.
//
// Ops append commands to a pending list; a Read turns the list into one
// webgpu.Program (recorded once per distinct list, then replayed from a
// cache) and submits it once, so a decode step costs a fixed handful of calls
// into JavaScript however many dispatches it has (see ARCHITECTURE.md,
// "capture by equality"). Kernels, bind groups and uniform parameter buffers
// are cached too, so a repeated step allocates nothing.
//
// Each kernel's interface is stated once, in its WGSL: the bind group
// layout comes from shaders.Parse of the built source, and the uniform's
// fields from a Go struct per kernel in kernels.go, in the WGSL struct's
// order, which a native test checks against every shader (as it checks the
// few Go constants that restate a shader's).
//
// A typical use:
//
//	b, d, err := gpu.OpenBackend(ctx, gpu.Options{}, gpu.BackendOptions{})
//	defer d.Close()
//	// b is a model.Backend: upload weights with b.Upload (or b.UploadJS
//	// from shard bytes held by JavaScript) and run the model's Forward on it
//
// Device and Options are the binding's webgpu.Device and webgpu.Options
// (aliases), and ErrNoWebGPU is webgpu.ErrNoWebGPU, so that code which only
// opens a backend needs no second import. The binding's error types
// (webgpu.DeviceLostError, GPUError, ShaderError, LimitError, UsageError)
// come back from the Backend's calls unchanged, for errors.As; this package
// adds KVCacheError and KVShapeError for KV caches that do not fit. The
// errors that have a stable code carry it (errcode.Coded): a lost device,
// a limit or the device's memory exceeded, no WebGPU.
//
// Everything that touches JavaScript needs GOOS=js (files with the js build
// tag); the error types build everywhere. A Backend is not safe for
// concurrent use: drive it, like its Device, from one goroutine.
package gpu
