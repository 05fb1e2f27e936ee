// Command prog is the GOOS=js program the wasmexec tests run.
package main

import (
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
	case "webgpu":
		fmt.Println("navigator.gpu:", js.Global().Get("navigator").Get("gpu").Truthy())
	}
}
