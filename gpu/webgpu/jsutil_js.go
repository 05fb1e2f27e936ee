//go:build js

package webgpu

import (
	"fmt"
	"syscall/js"
	"wasmllm/internal/jsutil"
)

// try runs f and turns a JavaScript exception (a js.Error panic) into an error.
func try(op string, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			jerr, ok := r.(js.Error)
			if !ok {
				panic(r)
			}
			err = &GPUError{Kind: "exception", Label: op, Message: jsutil.ErrorText(jerr.Value)}
		}
	}()
	f()
	return nil
}

// jsNum reads a numeric property, 0 when absent.
func jsNum(v js.Value, name string) float64 {
	if x := v.Get(name); x.Type() == js.TypeNumber {
		return x.Float()
	}
	return 0
}

func jsStr(v js.Value, name string) string {
	if x := v.Get(name); x.Type() == js.TypeString {
		return x.String()
	}
	return ""
}

func jsSetHas(set js.Value, name string) bool {
	return set.Truthy() && set.Call("has", name).Bool()
}

func errorf(op, label, format string, args ...any) error {
	return &UsageError{Op: op, Label: label, Msg: fmt.Sprintf(format, args...)}
}
