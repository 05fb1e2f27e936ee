//go:build !js

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "probe runs in the browser: cmd/bench builds it with GOOS=js GOARCH=wasm and loads it in its page")
	os.Exit(2)
}
