package shaders

import (
	"fmt"
	"maps"
	"strings"
)

// Features are the optional WGSL capabilities a kernel may use.
type Features struct {
	Subgroups bool
	F16       bool
	// F16Math, with F16, selects f16 arithmetic where a kernel offers it
	// (the F16MATH sections: common.wgsl's GEMM tile).
	F16Math bool
}

// Build returns the complete WGSL of a kernel file: enable directives for
// the features in use, the file with its `//#if NAME`, `//#else` and
// `//#endif` sections resolved, then common.wgsl, resolved likewise. NAME is
// SUBGROUPS, F16 or F16MATH (F16 and F16Math), or a name the kernel file sets with a `//#define NAME`
// line (common.wgsl's optional sections, e.g. GEMV: helpers that read the
// kernel's own bindings); a name common.wgsl tests that the file does not
// define is false there. Lines are kept in place, so compile errors point at
// the file's own lines.
func Build(file string, f Features) (string, error) {
	src, err := Source(file)
	if err != nil {
		return "", err
	}
	common, err := Source("common.wgsl")
	if err != nil {
		return "", err
	}
	flags := map[string]bool{"SUBGROUPS": f.Subgroups, "F16": f.F16, "F16MATH": f.F16 && f.F16Math}
	for _, l := range strings.Split(src, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(l), "//#define "); ok {
			flags[strings.TrimSpace(name)] = true
		}
	}
	body, err := preprocess(file, src, flags)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(common, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(l), "//#if "); ok {
			if _, set := flags[strings.TrimSpace(name)]; !set {
				flags[strings.TrimSpace(name)] = false
			}
		}
	}
	// common.wgsl's sections in use may test F16 or F16MATH too: they need
	// the directive when resolving them with those on and off differs.
	usesF16 := strings.Contains(src, "//#if F16")
	if f.F16 && !usesF16 {
		off := maps.Clone(flags)
		off["F16"], off["F16MATH"] = false, false
		without, err := preprocess("common.wgsl", common, off)
		if err != nil {
			return "", err
		}
		with, err := preprocess("common.wgsl", common, flags)
		if err != nil {
			return "", err
		}
		usesF16 = with != without
	}
	if common, err = preprocess("common.wgsl", common, flags); err != nil {
		return "", err
	}
	var enable string
	if f.Subgroups && strings.Contains(src, "//#if SUBGROUPS") {
		enable += "enable subgroups; "
	}
	if f.F16 && usesF16 {
		enable += "enable f16; "
	}
	return enable + body + "\n" + common, nil
}

func preprocess(file, src string, flags map[string]bool) (string, error) {
	lines := strings.Split(src, "\n")
	type frame struct{ active, parent bool }
	stack := []frame{{true, true}}
	for i, l := range lines {
		t := strings.TrimSpace(l)
		top := stack[len(stack)-1]
		switch {
		case strings.HasPrefix(t, "//#define "):
			lines[i] = ""
		case strings.HasPrefix(t, "//#if "):
			name := strings.TrimSpace(strings.TrimPrefix(t, "//#if "))
			v, ok := flags[name]
			if !ok {
				return "", fmt.Errorf("%s:%d: unknown condition %q", file, i+1, name)
			}
			stack = append(stack, frame{active: top.active && v, parent: top.active})
			lines[i] = ""
		case t == "//#else":
			if len(stack) == 1 {
				return "", fmt.Errorf("%s:%d: //#else without //#if", file, i+1)
			}
			f := &stack[len(stack)-1]
			f.active = f.parent && !f.active
			lines[i] = ""
		case t == "//#endif":
			if len(stack) == 1 {
				return "", fmt.Errorf("%s:%d: //#endif without //#if", file, i+1)
			}
			stack = stack[:len(stack)-1]
			lines[i] = ""
		case !top.active:
			lines[i] = ""
		}
	}
	if len(stack) != 1 {
		return "", fmt.Errorf("%s: //#if without //#endif", file)
	}
	return strings.Join(lines, "\n"), nil
}
