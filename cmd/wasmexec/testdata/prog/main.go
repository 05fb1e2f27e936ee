// Command prog is the GOOS=js program the wasmexec tests run.
package main

import (
	"errors"
	"fmt"
	"os"
	"syscall/js"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: prog mode")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "echo": // args, one env var and both streams, then exit code 7
		fmt.Printf("args=%q\n", os.Args[2:])
		fmt.Printf("WASMLLM_TEST=%q HOME=%q\n", os.Getenv("WASMLLM_TEST"), os.Getenv("HOME"))
		fmt.Fprintln(os.Stderr, "on stderr")
		os.Exit(7)
	case "fetch": // fetch each path, print its HTTP status
		for _, path := range os.Args[2:] {
			done := make(chan struct{})
			then := js.FuncOf(func(_ js.Value, a []js.Value) any {
				fmt.Println(path, a[0].Get("status").Int())
				close(done)
				return nil
			})
			js.Global().Call("fetch", path).Call("then", then)
			<-done
			then.Release()
		}
	case "panic":
		panic("boom")
	case "throw": // an exception escapes to the page
		js.Global().Call("eval", "setTimeout(() => { throw new Error('thrown in page') }, 0)")
		select {}
	case "hang":
		select {}
	case "busy":
		for start := time.Now(); ; {
			if time.Since(start) < 0 {
				break
			}
		}
	case "write": // write args[2] to the file args[3], append to it, then try a file not allowed
		if err := os.WriteFile(os.Args[3], []byte(os.Args[2]), 0o644); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		f, err := os.OpenFile(os.Args[3], os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = f.WriteString("+")
			f.Close()
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		st, err := os.Stat(os.Args[3])
		fmt.Println(st.Size(), err)
		err = os.WriteFile(os.Args[3]+".other", nil, 0o644)
		fmt.Println(errors.Is(err, os.ErrPermission), err)
	case "cwd": // the working directory and a relative read
		wd, err := os.Getwd()
		fmt.Println(wd, err)
		b, err := os.ReadFile("testdata/prog/main.go")
		fmt.Println(len(b) > 0, err)
	case "webgpu":
		fmt.Println("navigator.gpu:", js.Global().Get("navigator").Get("gpu").Truthy())
	}
}
