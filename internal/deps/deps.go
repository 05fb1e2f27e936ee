//go:build deps

// Package deps pins the modules the project uses, so that parallel work never
// races on go.mod. It is never built.
package deps

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/coder/websocket"
	_ "github.com/dlclark/regexp2"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/x448/float16"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/text/unicode/norm"
)
