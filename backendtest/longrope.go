package backendtest

import (
	"fmt"
	"testing"

	"wasmllm/cpu"
	"wasmllm/model"
)

// testLongRoPE runs LongRoPE's rotation (Phi-3.5-mini, Phi-4-mini): NEOX
// over the first rope dims of each head (partial rotary, the rest passing
// through), each frequency divided by its factor (short ones near 1, long
// ones up to 12), cos and sin multiplied by the attention factor; then
// Attend reads the keys RoPEKV wrote.
func testLongRoPE(t *testing.T, b model.Backend, o Options) {
	tol := o.AttentionTol
	if tol == 0 {
		tol = 1e-4
	}
	r := rng(37)
	cases := [][6]int{ // H, Hk, Dh, rope dim, prior, T
		{4, 2, 32, 24, 0, 12}, {4, 2, 32, 24, 300, 1}, {4, 4, 32, 32, 20, 3}, {24, 8, 128, 96, 40, 1}, {32, 32, 96, 96, 7, 2},
	}
	for _, c := range cases {
		H, Hk, Dh, dim, prior, T := c[0], c[1], c[2], c[3], c[4], c[5]
		for _, long := range []bool{false, true} {
			inv := model.RopeSpec{Theta: 10000, Dim: dim, NeoX: true}.InvFreq()
			for i := range inv {
				f := 1 + 0.3*float32(i)/float32(len(inv)) + 0.05*r.Float32()
				if long {
					f = 1.5 + 10*float32(i)/float32(len(inv)) + 0.5*r.Float32()
				}
				inv[i] /= f
			}
			k := newKVRef(t, b, H, Hk, Dh, prior+T+2, &model.RoPE{Dim: dim, NeoX: true, InvFreq: inv, Scale: 1.19024})
			what := fmt.Sprintf("H=%d Hk=%d Dh=%d rope dim %d at %d T=%d long=%v", H, Hk, Dh, dim, prior, T, long)
			if prior > 0 {
				k.ropeKV(t, r, positions(0, prior))
			}
			pos := positions(prior, T)
			x, xv := k.ropeKV(t, r, pos)
			compare(t, "RoPEKV qkv "+what, read(t, b, x, T*k.width()), xv, 1e-5)
			out := b.NewF32(T, H*Dh)
			b.Attend(out, x, ids(t, b, pos), k.cache, 1, 0, false)
			want := make([]float32, T*H*Dh)
			cpu.Attend(want, xv, pos, k.kc, k.vc, T, H, Hk, Dh, 0, false)
			compare(t, "Attend "+what, read(t, b, out, T*H*Dh), want, tol)
		}
	}
}
