//go:build js

package gpu

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"wasmllm/engine"
	"wasmllm/gpu/webgpu"
	"wasmllm/internal/testkit/golden"
	"wasmllm/sampler"
)

// Device loss during generation: the engine returns the *DeviceLostError
// (no hang, no panic, no token computed on a lost device), the device and
// the backend refuse every later call with it, and a new Device, Backend
// and model on the same page generate what the first one did before the
// loss.

// lossCase is one way and one moment to lose the device.
type lossCase struct {
	name  string
	model string // golden file name, without .golden
	kill  func(d *webgpu.Device)
	at    int // tokens emitted before the loss; 0: lost while idle, before the request
	// ahead: the step submitted ahead of the loss (pipelined decode) may
	// have completed before the loss takes effect: its token, the golden's,
	// may then be emitted too (one at most).
	ahead bool
}

var lossCases = []lossCase{
	// Device.Close marks the loss at once: no work reaches the device.
	{"Close/decode", "stories260K", (*webgpu.Device).Close, 3, false},
	// device.destroy() from JavaScript: the binding learns of the loss
	// from the lost promise, after the next step has already been sent;
	// in Firefox that step's readback sometimes completes first (a race:
	// 5 or 6 tokens in three runs), and its token is the golden's.
	{"destroy/decode", "tiny-qwen3moe-q4_0", destroyFromJS, 5, true},
	{"destroy/idle", "tiny-llama3-q4_0", destroyFromJS, 0, false},
}

// destroyFromJS destroys the GPUDevice behind the binding's back and
// returns without letting the event loop run, so the lost promise is still
// pending.
func destroyFromJS(d *webgpu.Device) { d.JSValue().Call("destroy") }

// lossModel is a model loaded on its own device.
type lossModel struct {
	d *webgpu.Device
	b *Backend
	e *engine.Engine
}

func loadLossModel(t *testing.T, path string) *lossModel {
	t.Helper()
	d, err := openDevice(webgpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	b, err := NewBackend(d, BackendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.Load(path, b, engine.LoadOptions{Options: engine.Options{Context: 64}})
	if err != nil {
		t.Fatal(err)
	}
	return &lossModel{d: d, b: b, e: e}
}

// lossRequests are a greedy request (argmax readback) and a seeded top-k
// one (candidate readback), both ignoring EOS for a fixed length.
func lossRequests(g *golden.File) map[string]func() *engine.Request {
	greedy := sampler.DefaultParams()
	greedy.Temperature, greedy.MaxTokens, greedy.IgnoreEOS = 0, len(g.Greedy), true
	sampled := sampler.DefaultParams()
	seed := int64(11)
	sampled.Temperature, sampled.TopK, sampled.Seed, sampled.MaxTokens, sampled.IgnoreEOS = 0.9, 20, &seed, 12, true
	return map[string]func() *engine.Request{
		"greedy":  func() *engine.Request { return &engine.Request{Tokens: g.Tokens, Params: greedy} },
		"sampled": func() *engine.Request { return &engine.Request{Tokens: g.Tokens, Params: sampled} },
	}
}

func (m *lossModel) generate(t *testing.T, req *engine.Request) []int32 {
	t.Helper()
	m.e.Reset()
	res, err := m.e.Generate(context.Background(), req, func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return res.Tokens
}

func TestDeviceLostGenerate(t *testing.T) {
	for _, c := range lossCases {
		t.Run(c.name, func(t *testing.T) {
			g := golden.Read(t, filepath.Join(goldenDir, c.model+".golden"))
			path := filepath.Join(goldenDir, g.Model)
			reqs := lossRequests(g)
			m := loadLossModel(t, path)
			want := map[string][]int32{}
			for name, req := range reqs {
				want[name] = m.generate(t, req())
			}
			if !slices.Equal(want["greedy"], g.Greedy) {
				t.Fatalf("greedy ids before the loss %v, golden %v", want["greedy"], g.Greedy)
			}

			// Lose the device after c.at tokens of a greedy request.
			m.e.Reset()
			if c.at == 0 {
				c.kill(m.d)
			}
			var got []int32
			res, err := m.e.Generate(context.Background(), reqs["greedy"](), func(tok engine.Token) error {
				got = append(got, tok.ID)
				if len(got) == c.at {
					c.kill(m.d)
				}
				return nil
			})
			var le *webgpu.DeviceLostError
			if !errors.As(err, &le) {
				t.Fatalf("Generate after the loss: err = %v (%T), want a *DeviceLostError", err, err)
			}
			if le.Reason != "destroyed" || le.Message == "" {
				t.Errorf("loss %+v, want reason destroyed and a message", *le)
			}
			t.Logf("after %d tokens: %v", len(got), err)
			n := c.at
			if c.ahead && len(got) == c.at+1 {
				n = c.at + 1 // the step ahead completed before the loss
			}
			if !slices.Equal(got, want["greedy"][:n]) || !slices.Equal(res.Tokens, got) {
				t.Errorf("tokens emitted %v, returned %v; want the %d before the loss: %v", got, res.Tokens, c.at, want["greedy"][:c.at])
			}
			checkRefused(t, m, path, reqs["greedy"]())

			// A new device, backend and model on the same page.
			m2 := loadLossModel(t, path)
			for name, req := range reqs {
				if got := m2.generate(t, req()); !slices.Equal(got, want[name]) {
					t.Errorf("%s on a new device: %v, before the loss %v", name, got, want[name])
				}
			}
		})
	}
}

// checkRefused checks that a lost device and its backend refuse work with
// the loss and submit nothing more.
func checkRefused(t *testing.T, m *lossModel, path string, req *engine.Request) {
	t.Helper()
	isLost := func(what string, err error) {
		t.Helper()
		var le *webgpu.DeviceLostError
		if !errors.As(err, &le) {
			t.Errorf("%s: err = %v (%T), want a *DeviceLostError", what, err, err)
		}
	}
	isLost("Device.Lost", m.d.Lost())
	isLost("Device.Err", m.d.Err())
	isLost("Device.Sync", m.d.Sync())
	ds, bs := m.d.Stats(), m.b.Stats()

	emitted := 0
	m.e.Reset()
	_, err := m.e.Generate(context.Background(), req, func(engine.Token) error { emitted++; return nil })
	isLost("Generate again", err)
	if emitted != 0 {
		t.Errorf("Generate on a lost device emitted %d tokens", emitted)
	}
	x, gu := m.b.NewF32(2, 3), m.b.NewF32(2, 6)
	m.b.CopyRows(x, gu, 0)
	isLost("ReadF32", m.b.ReadF32(x, make([]float32, 6)))
	isLost("ReadI32", m.b.ReadI32(m.b.NewI32(1), make([]int32, 1)))
	_, err = engine.Load(path, m.b, engine.LoadOptions{Options: engine.Options{Context: 64}})
	isLost("engine.Load", err)
	_, err = m.d.CreateBuffer("after loss", 16, webgpu.UsageStorage)
	isLost("CreateBuffer", err)
	freeModel(m.b, m.e.Model)
	m.b.Free(x)
	m.b.Free(gu)
	m.d.Close()
	m.d.Close()

	if d := m.d.Stats().Sub(ds); d.Submits != 0 || d.Maps != 0 || d.Dispatches != 0 || d.BytesWritten != 0 {
		t.Errorf("work sent to the lost device after it reported the loss: %+v", d)
	}
	if m.b.Stats().Flushes != bs.Flushes {
		t.Errorf("the backend flushed %d programs after the loss", m.b.Stats().Flushes-bs.Flushes)
	}
}
