// Package wasmsimd emits a small WebAssembly module of SIMD128 kernels
// for the CPU engine's hot loops: Go's js/wasm port emits no SIMD, so the
// kernels are written here, instruction by instruction, and the module's
// bytes are built at start-up (Module). The module imports the Go
// instance's memory (env.mem), so a kernel reads weights and activations
// where Go keeps them and writes its results back there; one call covers
// a whole matrix. Each kernel computes what the plain-Go loop of the same
// name in package cpu computes, in the same order (bit for bit).
package wasmsimd

import "encoding/binary"

// Value types.
const (
	i32  = 0x7f
	v128 = 0x7b
)

// fn is one function's code under construction.
type fn struct {
	params int    // i32 parameters
	locals []byte // types of the locals after the parameters
	code   []byte // the body
	name   string // export name
}

func (f *fn) local(t byte) uint32 {
	f.locals = append(f.locals, t)
	return uint32(f.params + len(f.locals) - 1)
}

func (f *fn) op(b ...byte) *fn { f.code = append(f.code, b...); return f }

func (f *fn) u32(v uint32) *fn { f.code = binary.AppendUvarint(f.code, uint64(v)); return f }

func (f *fn) s32(v int32) *fn { f.code = appendSLEB(f.code, int64(v)); return f }

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Plain instructions.
func (f *fn) get(l uint32) *fn { return f.op(0x20).u32(l) }
func (f *fn) set(l uint32) *fn { return f.op(0x21).u32(l) }
func (f *fn) tee(l uint32) *fn { return f.op(0x22).u32(l) }
func (f *fn) i32c(v int32) *fn { return f.op(0x41).s32(v) }
func (f *fn) f32c(v uint32) *fn {
	f.op(0x43)
	f.code = binary.LittleEndian.AppendUint32(f.code, v)
	return f
}
func (f *fn) add() *fn               { return f.op(0x6a) }
func (f *fn) sub() *fn               { return f.op(0x6b) }
func (f *fn) mul() *fn               { return f.op(0x6c) }
func (f *fn) and() *fn               { return f.op(0x71) }
func (f *fn) or() *fn                { return f.op(0x72) }
func (f *fn) shl() *fn               { return f.op(0x74) }
func (f *fn) shrU() *fn              { return f.op(0x76) }
func (f *fn) ltU() *fn               { return f.op(0x49) }
func (f *fn) geU() *fn               { return f.op(0x4f) }
func (f *fn) sel() *fn               { return f.op(0x1b) }
func (f *fn) load16U(off uint32) *fn { return f.op(0x2f, 0).u32(off) }
func (f *fn) f32Store(off uint32) *fn {
	return f.op(0x38, 0).u32(off)
}
func (f *fn) f32Add() *fn           { return f.op(0x92) }
func (f *fn) f32Mul() *fn           { return f.op(0x94) }
func (f *fn) f32FromI32U() *fn      { return f.op(0xb3) }
func (f *fn) f32AsI32() *fn         { return f.op(0xbc) }
func (f *fn) i32AsF32() *fn         { return f.op(0xbe) }
func (f *fn) loop() *fn             { return f.op(0x03, 0x40) }
func (f *fn) block() *fn            { return f.op(0x02, 0x40) }
func (f *fn) end() *fn              { return f.op(0x0b) }
func (f *fn) brIf(depth uint32) *fn { return f.op(0x0d).u32(depth) }

// SIMD instructions (prefix 0xfd, then the opcode as a LEB128 u32).
func (f *fn) simd(op uint32) *fn { return f.op(0xfd).u32(op) }

func (f *fn) vLoad(off uint32) *fn     { return f.simd(0x00).u32(0).u32(off) }
func (f *fn) vLoad8x8S(off uint32) *fn { return f.simd(0x01).u32(0).u32(off) }
func (f *fn) i8Splat() *fn             { return f.simd(0x0f) }
func (f *fn) f32Splat() *fn            { return f.simd(0x13) }
func (f *fn) f32Lane(i byte) *fn       { return f.simd(0x1f).op(i) }
func (f *fn) vAnd() *fn                { return f.simd(0x4e) }
func (f *fn) i8ShrU() *fn              { return f.simd(0x6d) }
func (f *fn) i8Sub() *fn               { return f.simd(0x71) }
func (f *fn) i16FromI8Low() *fn        { return f.simd(0x87) }
func (f *fn) i16FromI8High() *fn       { return f.simd(0x88) }
func (f *fn) i32FromI16Low() *fn       { return f.simd(0xa7) }
func (f *fn) i32FromI16High() *fn      { return f.simd(0xa8) }
func (f *fn) f32x4Add() *fn            { return f.simd(0xe4) }
func (f *fn) f32x4Mul() *fn            { return f.simd(0xe6) }
func (f *fn) f32x4FromI32() *fn        { return f.simd(0xfa) }
func (f *fn) vZero() *fn               { return f.f32c(0).f32Splat() }

// module assembles the functions, each of type (i32 × params) -> (), into
// a module importing its memory as env.mem.
func module(fns []*fn) []byte {
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	section := func(id byte, body []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	vec := func(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }
	str := func(b []byte, s string) []byte { return append(vec(b, len(s)), s...) }

	// Types: one per function (small modules; no dedup needed).
	var types []byte
	types = vec(types, len(fns))
	for _, f := range fns {
		types = append(types, 0x60)
		types = vec(types, f.params)
		for range f.params {
			types = append(types, i32)
		}
		types = vec(types, 0)
	}
	section(1, types)

	var imports []byte
	imports = vec(imports, 1)
	imports = str(imports, "env")
	imports = str(imports, "mem")
	imports = append(imports, 0x02, 0x00, 0x00) // memory, limits: min 0, no max
	section(2, imports)

	var funcs []byte
	funcs = vec(funcs, len(fns))
	for i := range fns {
		funcs = vec(funcs, i)
	}
	section(3, funcs)

	var exports []byte
	exports = vec(exports, len(fns))
	for i, f := range fns {
		exports = str(exports, f.name)
		exports = append(exports, 0x00)
		exports = vec(exports, i)
	}
	section(7, exports)

	var code []byte
	code = vec(code, len(fns))
	for _, f := range fns {
		var body []byte
		body = vec(body, len(f.locals))
		for _, t := range f.locals {
			body = append(body, 1, t)
		}
		body = append(body, f.code...)
		body = append(body, 0x0b)
		code = vec(code, len(body))
		code = append(code, body...)
	}
	section(10, code)
	return out
}
