package shaders

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// Every kernel's interface parses, is the same under every feature set, and
// ends each entry point's bindings in its one uniform, the layout the
// backend builds.
func TestInterface(t *testing.T) {
	names, err := fs.Glob(FS, "*.wgsl")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shaders: %v", err)
	}
	for _, name := range names {
		if name == "common.wgsl" {
			continue
		}
		var first *Module
		for _, f := range []Features{{}, {Subgroups: true}, {F16: true}, {Subgroups: true, F16: true}, {F16: true, F16Math: true}} {
			m, err := Interface(name, f)
			if err != nil {
				t.Errorf("%s %+v: %v", name, f, err)
				continue
			}
			if len(m.Entries) == 0 {
				t.Errorf("%s: no @compute entry points", name)
			}
			if first == nil {
				first = m
				for _, e := range m.Entries {
					n := len(e.Bindings)
					if n == 0 || e.Bindings[n-1].Access != Uniform || e.Params == "" {
						t.Errorf("%s:%s: bindings %v do not end in the uniform params", name, e.Name, e.Bindings)
					}
				}
			} else if !reflect.DeepEqual(m.Entries, first.Entries) {
				t.Errorf("%s: the interface under %+v differs from the one without features", name, f)
			}
		}
	}
}

const parseSrc = `
enable f16;
struct Params {
    n: u32, // N
    @align(4) scale: f32,
    v: vec4<u32>,
}
struct Other { k: u32 }
/* a /* nested */ comment: @group(0) @binding(9) var<uniform> q: Params; */
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<atomic<u32>>;
@group(0) @binding(2) var<storage> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;
@group(0) @binding(0) var<storage, read> a2: array<vec4<f32>>;
@group(0) @binding(1) var<uniform> o: Other;
var<workgroup> scratch: array<f32, 64>;
const WG: u32 = 64u;
const CH: u32 = WG * (2u + 2u) - 0x10u;
override R: u32 = CH / 8u % 5u;
const NEG: f32 = -3.0e38;

fn helper(i: u32) -> f32 { return c[i] + f32(p.n); }
fn two(i: u32) -> f32 { return helper(i) * 2.0; }
// a parameter c and a local p: not bindings c and p
fn shadow(c: f32) -> f32 { let p = c * 2.0; return p; }

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    atomicAdd(&b[0], u32(a[gid.x] + two(gid.x)));
}

@compute @workgroup_size(64)
fn second(@builtin(global_invocation_id) gid: vec3<u32>) {
    scratch[0] = shadow(a2[gid.x].b) + f32(o.k); // .b: a member, not binding b
}
`

func TestParse(t *testing.T) {
	m, err := Parse("t.wgsl", parseSrc)
	if err != nil {
		t.Fatal(err)
	}
	params := []Field{{"n", "u32"}, {"scale", "f32"}, {"v", "vec4<u32>"}}
	want := map[string]*Entry{
		"main": {Name: "main", Bindings: []Binding{
			{0, "a", Read, "array<f32>"}, {1, "b", ReadWrite, "array<atomic<u32>>"},
			{2, "c", Read, "array<f32>"}, {3, "p", Uniform, "Params"}},
			Params: "Params", Fields: params},
		// second uses binding 0 and 1 by other names, and no 2 or 3.
		"second": {Name: "second", Bindings: []Binding{{0, "a2", Read, "array<vec4<f32>>"}, {1, "o", Uniform, "Other"}},
			Params: "Other", Fields: []Field{{"k", "u32"}}},
	}
	if !reflect.DeepEqual(m.Entries, want) {
		for k, e := range m.Entries {
			t.Errorf("%s: %+v", k, *e)
		}
	}
	for name, v := range map[string]int64{"WG": 64, "CH": 240, "R": 0} {
		if got, err := m.Const(name); err != nil || got != v {
			t.Errorf("Const(%s) = %d, %v; want %d", name, got, err, v)
		}
	}
	for _, name := range []string{"NEG", "nope"} {
		if _, err := m.Const(name); err == nil {
			t.Errorf("Const(%s): no error", name)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"@group(0) @binding(1) var<storage> a: array<f32>;", "no @binding(0)"},
		{"@group(1) @binding(0) var<storage> a: array<f32>;", "group 0 only"},
		{"@group(0) @binding(0) var<private> a: f32;", "neither storage nor uniform"},
		{"@group(0) @binding(0) var<storage, write> a: array<f32>;", "access"},
		{`@group(0) @binding(0) var<storage> a: array<f32>;
@group(0) @binding(0) var<storage> b: array<f32>;
@group(0) @binding(1) var<uniform> p: P;
struct P { n: u32 }
@compute @workgroup_size(1) fn main() { let x = p.n; }`, "want one it uses"},
		{`@group(0) @binding(0) var<uniform> p: u32;
@compute @workgroup_size(1) fn main() { let x = p; }`, "not a struct"},
		{"struct P { n: u32 } garbage", "unexpected"},
		{"/* open", "unterminated"},
	} {
		_, err := Parse("t.wgsl", tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.src, err, tc.want)
		}
	}
}
