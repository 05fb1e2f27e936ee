//go:build js

package main

import (
	"bytes"
	"fmt"
	"syscall/js"

	"wasmllm/api"
)

// A GGUF read by URL may change on the server while it is converted. Every
// Range answer must carry the validators the first one did (web/loader.js
// ggufChanged: ETag, size, Last-Modified); bytes that change under the
// same validators (a server whose ETag is its size and time to the second,
// or none at all) are found by samples: the first bytes of each of
// witnessWindows windows spread over the file are kept as the conversion
// reads them, and read again before its manifest.json is written. A
// difference fails with "integrity" before anything of the two files is
// kept as a conversion; convertGGUF then starts over once.

const (
	witnessWindows = 16
	witnessBytes   = 4 << 10
)

// ggufWitness keeps a GGUF part's samples.
type ggufWitness struct {
	starts  []int64 // window starts
	samples []witnessSample
	taken   []bool // per window
}

type witnessSample struct {
	off  int64
	data []byte
}

func newGGUFWitness(size int64) *ggufWitness {
	w := &ggufWitness{}
	for i := range int64(witnessWindows) {
		at := size * i / witnessWindows
		if n := len(w.starts); n == 0 || at >= w.starts[n-1]+witnessBytes {
			w.starts = append(w.starts, at)
		}
	}
	w.taken = make([]bool, len(w.starts))
	return w
}

// saw records what of the windows p (read at off) covers, for windows not
// sampled yet.
func (w *ggufWitness) saw(p []byte, off int64) {
	end := off + int64(len(p))
	for i, s := range w.starts {
		lo, hi := max(s, off), min(s+witnessBytes, end)
		if w.taken[i] || lo >= hi {
			continue
		}
		w.taken[i] = true
		w.samples = append(w.samples, witnessSample{off: lo, data: bytes.Clone(p[lo-off : hi-off])})
	}
}

// verify reads r's samples again and fails with "integrity" on the first
// that differs.
func (r *jsReaderAt) verify() error {
	for _, s := range r.witness.samples {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		v, err := await(r.loader.Call("ggufRead", r.src, s.off, len(s.data), r.opts))
		if err != nil {
			return err
		}
		got := make([]byte, len(s.data))
		js.CopyBytesToGo(got, v)
		if !bytes.Equal(got, s.data) {
			name := jsString(r.src.Get("name"))
			return &api.Error{Code: api.CodeIntegrity,
				Message: fmt.Sprintf("%s changed on the server while it was read: its bytes at %d differ from those converted, under the same ETag %q", name, s.off, jsString(r.src.Get("etag"))),
				Details: map[string]any{"file": name, "offset": s.off, "url": jsString(r.src.Get("url"))}}
		}
	}
	return nil
}
