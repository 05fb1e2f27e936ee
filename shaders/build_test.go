package shaders

import (
	"io/fs"
	"strings"
	"testing"
)

// Every kernel builds with every feature set, and common.wgsl's GEMV section
// reaches just the kernels that define GEMV.
func TestBuild(t *testing.T) {
	names, err := fs.Glob(FS, "*.wgsl")
	if err != nil || len(names) == 0 {
		t.Fatalf("no shaders: %v", err)
	}
	for _, name := range names {
		if name == "common.wgsl" {
			continue
		}
		for _, f := range []Features{{}, {Subgroups: true}, {F16: true}, {Subgroups: true, F16: true}, {F16: true, F16Math: true}} {
			out, err := Build(name, f)
			if err != nil {
				t.Fatalf("%s %+v: %v", name, f, err)
			}
			if strings.Contains(out, "//#") {
				t.Errorf("%s %+v: a directive is left", name, f)
			}
			src, _ := Source(name)
			gemv := strings.Contains(src, "//#define GEMV")
			if has := strings.Contains(out, "fn mm_x("); has != gemv {
				t.Errorf("%s %+v: mm_x present %v, GEMV defined %v", name, f, has, gemv)
			}
			// f16 is enabled for the kernel's own F16 sections, and for
			// common.wgsl's GEMM tile when it multiplies in f16.
			tile := strings.Contains(src, "//#define GEMM_TILE")
			wantF16 := f.F16 && (strings.Contains(src, "//#if F16") || tile && f.F16Math)
			if has := strings.Contains(out, "enable f16;"); has != wantF16 {
				t.Errorf("%s %+v: enable f16 %v, want %v", name, f, has, wantF16)
			}
		}
	}
	for _, name := range []string{"matmul_gemv.wgsl", "moe_gemv.wgsl"} {
		if src, _ := Source(name); !strings.Contains(src, "//#define GEMV") {
			t.Errorf("%s does not define GEMV", name)
		}
	}
}
