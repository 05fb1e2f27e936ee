//go:build js

package gpu

import (
	"encoding/binary"
	"fmt"

	"wasmllm/gpu/webgpu"
	"wasmllm/model"
)

var _ model.AsyncReader = (*Backend)(nil)

// StartReadI32 implements model.AsyncReader: it submits the pending
// commands with a copy of x and returns without waiting, so the next step
// can be recorded and submitted behind it.
func (b *Backend) StartReadI32(x model.Tensor) (model.PendingI32, error) {
	t := tt(x)
	n := 4 * t.numel()
	prog, upload, err := b.takeProgram()
	if err != nil {
		return nil, err
	}
	r, err := b.d.RunReadAsync(prog, upload, t.buf, 0, n)
	b.upload = b.upload[:0]
	b.writes = false
	if err != nil {
		return nil, err
	}
	return &pendingI32{r: r, raw: make([]byte, n)}, nil
}

type pendingI32 struct {
	r   *webgpu.PendingRead
	raw []byte
}

func (p *pendingI32) Wait(dst []int32) error {
	if 4*len(dst) != len(p.raw) {
		return fmt.Errorf("gpu: Wait for %d values into %d", len(p.raw)/4, len(dst))
	}
	if err := p.r.Wait(p.raw); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = int32(binary.LittleEndian.Uint32(p.raw[4*i:]))
	}
	return nil
}
