package wasmsimd

import (
	"encoding/binary"
)

// Value types.
const (
	i32  = 0x7f
	i64  = 0x7e
	f32  = 0x7d
	f64  = 0x7c
	v128 = 0x7b
)

// fn is one function's code under construction.
type fn struct {
	params  int    // i32 parameters (when ptypes is nil)
	ptypes  []byte // the parameters' types, when not all i32
	results []byte
	locals  []byte // types of the locals after the parameters
	code    []byte // the body
	name    string // export name ("": not exported)
}

func (f *fn) paramTypes() []byte {
	if f.ptypes != nil {
		return f.ptypes
	}
	p := make([]byte, f.params)
	for i := range p {
		p[i] = i32
	}
	return p
}

func (f *fn) local(t byte) uint32 {
	f.locals = append(f.locals, t)
	return uint32(len(f.paramTypes()) + len(f.locals) - 1)
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
func (f *fn) load8U(off uint32) *fn  { return f.op(0x2d, 0).u32(off) }
func (f *fn) load8S(off uint32) *fn  { return f.op(0x2c, 0).u32(off) }
func (f *fn) f32FromI32S() *fn       { return f.op(0xb2) }
func (f *fn) f32Store(off uint32) *fn {
	return f.op(0x38, 0).u32(off)
}
func (f *fn) s64(v int64) *fn        { f.code = appendSLEB(f.code, v); return f }
func (f *fn) f32Load(off uint32) *fn { return f.op(0x2a, 0).u32(off) }
func (f *fn) i32Load(off uint32) *fn { return f.op(0x28, 0).u32(off) }
func (f *fn) divU() *fn              { return f.op(0x6e) }
func (f *fn) remU() *fn              { return f.op(0x70) }
func (f *fn) gtS() *fn               { return f.op(0x4a) }
func (f *fn) eqz() *fn               { return f.op(0x45) }
func (f *fn) eq() *fn                { return f.op(0x46) }
func (f *fn) ifBlock() *fn           { return f.op(0x04, 0x40) }
func (f *fn) f32Sub() *fn            { return f.op(0x93) }
func (f *fn) f32Div() *fn            { return f.op(0x95) }
func (f *fn) f32Max() *fn            { return f.op(0x97) }
func (f *fn) call(i uint32) *fn      { return f.op(0x10).u32(i) }
func (f *fn) f32Add() *fn            { return f.op(0x92) }
func (f *fn) f32Mul() *fn            { return f.op(0x94) }
func (f *fn) f32FromI32U() *fn       { return f.op(0xb3) }
func (f *fn) f32AsI32() *fn          { return f.op(0xbc) }
func (f *fn) i32AsF32() *fn          { return f.op(0xbe) }
func (f *fn) loop() *fn              { return f.op(0x03, 0x40) }
func (f *fn) block() *fn             { return f.op(0x02, 0x40) }
func (f *fn) end() *fn               { return f.op(0x0b) }
func (f *fn) brIf(depth uint32) *fn  { return f.op(0x0d).u32(depth) }

// SIMD instructions (prefix 0xfd, then the opcode as a LEB128 u32).
func (f *fn) simd(op uint32) *fn { return f.op(0xfd).u32(op) }

func (f *fn) vLoad(off uint32) *fn     { return f.simd(0x00).u32(0).u32(off) }
func (f *fn) vStore(off uint32) *fn    { return f.simd(0x0b).u32(0).u32(off) }
func (f *fn) vLoad8x8S(off uint32) *fn { return f.simd(0x01).u32(0).u32(off) }
func (f *fn) i8Splat() *fn             { return f.simd(0x0f) }
func (f *fn) f32Splat() *fn            { return f.simd(0x13) }
func (f *fn) f32Lane(i byte) *fn       { return f.simd(0x1f).op(i) }
func (f *fn) vAnd() *fn                { return f.simd(0x4e) }
func (f *fn) i8ShrU() *fn              { return f.simd(0x6d) }
func (f *fn) i8Sub() *fn               { return f.simd(0x71) }
func (f *fn) i8Add() *fn               { return f.simd(0x6e) }
func (f *fn) i8Shl() *fn               { return f.simd(0x6b) }
func (f *fn) vOr() *fn                 { return f.simd(0x50) }
func (f *fn) i16FromI8Low() *fn        { return f.simd(0x87) }
func (f *fn) i16FromI8High() *fn       { return f.simd(0x88) }
func (f *fn) i32FromI16Low() *fn       { return f.simd(0xa7) }
func (f *fn) i32FromI16High() *fn      { return f.simd(0xa8) }
func (f *fn) f32x4Add() *fn            { return f.simd(0xe4) }
func (f *fn) f32x4Mul() *fn            { return f.simd(0xe6) }
func (f *fn) f32x4Sub() *fn            { return f.simd(0xe5) }
func (f *fn) f32x4Div() *fn            { return f.simd(0xe7) }
func (f *fn) f32x4Min() *fn            { return f.simd(0xe8) }
func (f *fn) f32x4Max() *fn            { return f.simd(0xe9) }
func (f *fn) f32x4Neg() *fn            { return f.simd(0xe1) }
func (f *fn) f32x4Floor() *fn          { return f.simd(0x68) }
func (f *fn) f32x4Lt() *fn             { return f.simd(0x43) }
func (f *fn) f32x4Gt() *fn             { return f.simd(0x44) }
func (f *fn) vBitselect() *fn          { return f.simd(0x52) }
func (f *fn) i32x4TruncSatF32() *fn    { return f.simd(0xf8) }
func (f *fn) i32Splat() *fn            { return f.simd(0x11) }
func (f *fn) i32x4Add() *fn            { return f.simd(0xae) }
func (f *fn) i32x4Sub() *fn            { return f.simd(0xb1) }
func (f *fn) i32x4Shl() *fn            { return f.simd(0xab) }
func (f *fn) i32x4ShrS() *fn           { return f.simd(0xac) }
func (f *fn) f32x4FromI32() *fn        { return f.simd(0xfa) }
func (f *fn) vZero() *fn               { return f.f32c(0).f32Splat() }

// module assembles the functions into a module importing its memory as
// env.mem; a function's index is its place in fns.
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
		pt := f.paramTypes()
		types = vec(types, len(pt))
		types = append(types, pt...)
		types = vec(types, len(f.results))
		types = append(types, f.results...)
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
	n := 0
	for _, f := range fns {
		if f.name != "" {
			n++
		}
	}
	exports = vec(exports, n)
	for i, f := range fns {
		if f.name == "" {
			continue
		}
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
