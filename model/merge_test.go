package model

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"wasmllm/loader"
)

// testTensor makes a tensor of type d, in memory, or lazy (counting its
// loads in *loads) when loads is non-nil.
func testTensor(t *testing.T, name string, d loader.DType, shape []int, seed float32, loads *int) *loader.Tensor {
	t.Helper()
	x := &loader.Tensor{Name: name, DType: d, Shape: shape}
	f := make([]float32, x.NumElements())
	for i := range f {
		f[i] = seed + float32(i%7)*0.25
	}
	data, err := loader.Quantize(d, f)
	if err != nil {
		t.Fatal(err)
	}
	if loads == nil {
		x.Data = data
		return x
	}
	x.Load = func() ([]byte, error) { *loads++; return data, nil }
	return x
}

// TestMergeLazy checks that a merge with a lazy part is lazy, reads nothing
// until loaded, and loads what the merge of the same parts in memory holds,
// for one dtype and for mixed dtypes (widened to F32).
func TestMergeLazy(t *testing.T) {
	type merge func(parts []*loader.Tensor) (*loader.Tensor, error)
	concat := func(parts []*loader.Tensor) (*loader.Tensor, error) { return concatRows("m", parts...) }
	inter := func(parts []*loader.Tensor) (*loader.Tensor, error) {
		return interleaveExperts("m", parts[0], parts[1])
	}
	stack := func(parts []*loader.Tensor) (*loader.Tensor, error) { return stackExperts("m", parts) }
	cases := []struct {
		name   string
		m      merge
		dtypes []loader.DType
		shapes [][]int
	}{
		{"concat", concat, []loader.DType{loader.Q8_0, loader.Q8_0, loader.Q8_0}, [][]int{{4, 32}, {2, 32}, {2, 32}}},
		{"concat mixed", concat, []loader.DType{loader.Q4_0, loader.F16, loader.F32}, [][]int{{4, 32}, {2, 32}, {2, 32}}},
		{"interleave", inter, []loader.DType{loader.F16, loader.F16}, [][]int{{3, 2, 32}, {3, 2, 32}}},
		{"interleave mixed", inter, []loader.DType{loader.Q4_0, loader.Q8_0}, [][]int{{3, 2, 32}, {3, 1, 32}}},
		{"stack", stack, []loader.DType{loader.BF16, loader.BF16}, [][]int{{2, 32}, {2, 32}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var inMem, mixed []*loader.Tensor
			loads := 0
			for i, d := range c.dtypes {
				inMem = append(inMem, testTensor(t, "p", d, c.shapes[i], float32(i), nil))
				var counter *int
				if i%2 == 1 {
					counter = &loads
				}
				mixed = append(mixed, testTensor(t, "p", d, c.shapes[i], float32(i), counter))
			}
			want, err := c.m(inMem)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.m(mixed)
			if err != nil {
				t.Fatal(err)
			}
			if want.Lazy() || !got.Lazy() || loads != 0 {
				t.Fatalf("in memory: lazy %v; with a lazy part: lazy %v after %d loads", want.Lazy(), got.Lazy(), loads)
			}
			if err := want.CheckSize(); err != nil {
				t.Fatal(err)
			}
			b, err := got.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || !bytes.Equal(b, want.Data) || loads == 0 {
				t.Errorf("lazy merge %s %v, %d bytes after %d loads; want %s %v, %d bytes", got.DType, got.Shape, len(b), loads, want.DType, want.Shape, len(want.Data))
			}
		})
	}
}

// TestStackRowsMerge: parts of different types merge into row blocks in
// their own types (runs of one type concatenated), lazily where a part is
// lazy, holding exactly the rows the F32 widening held; and a gated q/k/v
// of mixed types (Qwen3.5's) keeps its query and gate rows in q's type.
func TestStackRowsMerge(t *testing.T) {
	loads := 0
	parts := []*loader.Tensor{
		testTensor(t, "a", loader.Q4_0, []int{4, 32}, 0, nil),
		testTensor(t, "b", loader.Q4_0, []int{2, 32}, 1, &loads),
		testTensor(t, "c", loader.Q8_0, []int{2, 32}, 2, nil),
	}
	got, err := stackRows("m", parts...)
	if err != nil {
		t.Fatal(err)
	}
	if got.DType != loader.Mixed || len(got.Stack) != 2 || got.Stack[0].DType != loader.Q4_0 || got.Stack[0].Rows() != 6 ||
		got.Stack[1].DType != loader.Q8_0 || !slices.Equal(got.Shape, []int{8, 32}) || loads != 0 {
		t.Fatalf("stack %s %v of %d blocks after %d loads", got.DType, got.Shape, len(got.Stack), loads)
	}
	wide, err := concatRows("m", parts...)
	if err != nil {
		t.Fatal(err)
	}
	gf, err := got.F32()
	if err != nil {
		t.Fatal(err)
	}
	wf, _ := wide.F32()
	if !slices.Equal(gf, wf) || wide.DType != loader.Q8_0 {
		t.Errorf("the stack's rows differ from the one-type merge's (%s: Q4_0 with Q8_0 rows merge as Q8_0)", wide.DType)
	}
	if one, _ := stackRows("m", parts[0], parts[1]); one.DType != loader.Q4_0 {
		t.Errorf("parts of one type merged as %s", one.DType)
	}

	c := &Config{Heads: 2, HeadDim: 32}
	q := testTensor(t, "q", loader.Q8_0, []int{2 * 2 * 32, 32}, 3, nil) // [q | gate] per head
	k := testTensor(t, "k", loader.Q4_0, []int{32, 32}, 4, nil)
	v := testTensor(t, "v", loader.Q4_0, []int{32, 32}, 5, nil)
	gs, err := gatedQKV(c, "qkv", []*loader.Tensor{q, k, v})
	if err != nil {
		t.Fatal(err)
	}
	var f32s []*loader.Tensor
	for _, p := range []*loader.Tensor{q, k, v} {
		f, _ := p.F32()
		f32s = append(f32s, &loader.Tensor{Name: p.Name, DType: loader.F32, Shape: p.Shape, Data: f32Bytes(f)})
	}
	gw, err := gatedQKV(c, "qkv", f32s)
	if err != nil {
		t.Fatal(err)
	}
	if gs.DType != loader.Mixed || len(gs.Stack) != 3 || gs.Stack[0].DType != loader.Q8_0 || gs.Stack[1].DType != loader.Q4_0 || gs.Stack[2].DType != loader.Q8_0 {
		t.Fatalf("gated q/k/v of mixed types: %s with %d blocks", gs.DType, len(gs.Stack))
	}
	a, _ := gs.F32()
	b, _ := gw.F32()
	if !slices.Equal(a, b) {
		t.Errorf("gated q/k/v's rows differ from the F32 merge's")
	}
}

// TestConcatRowsQ4Q8 merges Q4_0 and Q8_0 rows (a q4_0 file's attn_q with
// its Q8_0 attn_k and attn_v) as Q8_0 holding exactly the parts' values,
// and other mixes as F32.
func TestConcatRowsQ4Q8(t *testing.T) {
	vals := func(n int, seed float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Sin(float64(seed*float32(i+1)))) * 2
		}
		return v
	}
	mk := func(dt loader.DType, rows int, seed float32) *loader.Tensor {
		data, err := loader.Quantize(dt, vals(rows*64, seed))
		if err != nil {
			t.Fatal(err)
		}
		return &loader.Tensor{Name: dt.String(), DType: dt, Shape: []int{rows, 64}, Data: data}
	}
	q, k := mk(loader.Q4_0, 3, 1.3), mk(loader.Q8_0, 2, 0.7)
	m, err := concatRows("qkv", q, k, k)
	if err != nil {
		t.Fatal(err)
	}
	if m.DType != loader.Q8_0 || !slices.Equal(m.Shape, []int{7, 64}) {
		t.Fatalf("merged %v %v, want Q8_0 [7 64]", m.DType, m.Shape)
	}
	got, err := m.F32()
	if err != nil {
		t.Fatal(err)
	}
	var want []float32
	for _, p := range []*loader.Tensor{q, k, k} {
		v, err := p.F32()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, v...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("merged values differ from the parts'")
	}
	f16 := &loader.Tensor{Name: "f16", DType: loader.F16, Shape: []int{1, 64}, Data: make([]byte, 128)}
	if m, err := concatRows("mixed", q, f16); err != nil || m.DType != loader.F32 {
		t.Errorf("Q4_0 with F16: %v, %v; want F32", m.DType, err)
	}
}
