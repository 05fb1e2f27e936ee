package gpu

import (
	"reflect"
	"strings"
	"testing"

	"wasmllm/shaders"
)

// kBenchRead is the streaming read of the matmul benchmarks' roofline.
var kBenchRead = spec[benchReadParams]("bench_read.wgsl", "stream_read")

type benchReadParams struct{ N, Magic uint32 }

// wgslScalar is the Go type of each WGSL scalar a params struct may hold.
var wgslScalar = map[string]reflect.Type{
	"u32": reflect.TypeFor[uint32](),
	"i32": reflect.TypeFor[int32](),
	"f32": reflect.TypeFor[float32](),
}

// TestKernelParams: every kernel spec names an entry point of its shader
// (whose interface is the same under every feature set: shaders'
// TestInterface), and its Go params struct has the WGSL uniform
// struct's fields, in order, with the same names (case and underscores
// aside) and scalar types, packed as WGSL lays them out.
func TestKernelParams(t *testing.T) {
	if len(kernelSpecs) < 20 {
		t.Fatalf("only %d kernel specs registered", len(kernelSpecs))
	}
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	for _, s := range kernelSpecs {
		m, err := shaders.Interface(s.file, shaders.Features{})
		if err != nil {
			t.Fatal(err)
		}
		e, ok := m.Entries[s.entry]
		if !ok {
			t.Errorf("%s has no @compute entry point %s", shaders.Path(s.file), s.entry)
			continue
		}
		if e.Params == "" || len(e.Bindings) == 0 || e.Bindings[len(e.Bindings)-1].Access != shaders.Uniform {
			t.Errorf("%s:%s: the last binding is not the uniform params", s.file, s.entry)
			continue
		}
		if len(e.Bindings)-1 > maxBindings {
			t.Errorf("%s:%s: %d storage bindings; the backend takes %d", s.file, s.entry, len(e.Bindings)-1, maxBindings)
		}
		p := s.params
		if p.Kind() != reflect.Struct || p.NumField() != len(e.Fields) {
			t.Errorf("%s:%s: Go %v has %d fields, WGSL %s has %d: %v", s.file, s.entry, p, p.NumField(), e.Params, len(e.Fields), e.Fields)
			continue
		}
		if p.Size() != uintptr(4*len(e.Fields)) || len(e.Fields) > len(Params{}) {
			t.Errorf("%s:%s: Go %v is %d bytes for %d fields (at most %d)", s.file, s.entry, p, p.Size(), len(e.Fields), len(Params{}))
		}
		for i, wf := range e.Fields {
			gf := p.Field(i)
			if norm(gf.Name) != norm(wf.Name) || wgslScalar[wf.Type] != gf.Type || gf.Offset != uintptr(4*i) {
				t.Errorf("%s:%s: field %d is Go %s %v at %d, WGSL %s.%s: %s", s.file, s.entry, i, gf.Name, gf.Type, gf.Offset, e.Params, wf.Name, wf.Type)
			}
		}
	}
}

// TestKernelConstants: the limits read from the shaders (shaderConst) are
// there and consistent: topk's block is its workgroup times its per-thread
// count, and every limit is positive.
func TestKernelConstants(t *testing.T) {
	m, err := shaders.Interface("topk.wgsl", shaders.Features{})
	if err != nil {
		t.Fatal(err)
	}
	wg, err1 := m.Const("WG")
	per, err2 := m.Const("PER")
	if err1 != nil || err2 != nil || int(wg*per) != topkBlock {
		t.Errorf("topk.wgsl: CH %d, WG %d × PER %d (%v %v)", topkBlock, wg, per, err1, err2)
	}
	for name, v := range map[string]int{"topkBlock": topkBlock, "topkMaxL": topkMaxL, "gemvMaxTB": gemvMaxTB, "gemmBN": gemmBN, "gemmBM": gemmBM,
		"moeMaxA": moeMaxA, "moeGemvMaxRows": moeGemvMaxRows, "moeTileRows": moeTileRows, "moeTileT": moeTileT, "decodeChunk": decodeChunk} {
		if v <= 0 {
			t.Errorf("%s = %d", name, v)
		}
	}
}

// TestPackParams: the words are the fields in order, floats as their bits.
func TestPackParams(t *testing.T) {
	got := packParams(&ropeKVParams{Row: 1, Heads: 2, KVHeads: 3, Half: 4, NeoX: 5, Bias: 6, Norm: 7, Eps: 1.5, Cap: 9})
	want := Params{1, 2, 3, 4, 5, 6, 7, 0x3fc00000, 9}
	if got != want {
		t.Errorf("packParams = %v, want %v", got, want)
	}
}
