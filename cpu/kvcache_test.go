package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"wasmllm/loader"
	"wasmllm/model"
)

// TestKVCacheQ8Store: a q8 cache keeps what StoreKV says of a row (its
// dequantised values equal StoreKV's bit for bit), in 1.125 bytes a value
// for heads of 128, and a zero row stays zero.
func TestKVCacheQ8Store(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 1))
	b := New(1)
	for _, Dh := range []int{8, 32, 80, 128} {
		const Hk, S = 3, 5
		cc, err := b.NewKVCacheOf(model.KVQ8, 1, S, Hk, Dh)
		if err != nil {
			t.Fatal(err)
		}
		c := cc.(*KVCache)
		k, v := make([]float32, Hk*Dh), make([]float32, Hk*Dh)
		for i := range k {
			k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())*100
		}
		c.store(0, 2, k, v)
		StoreKV(k, model.KVQ8, Dh)
		StoreKV(v, model.KVQ8, Dh)
		block := model.KVQ8Block(Dh)
		got := make([]float32, Hk*Dh)
		for _, x := range []struct {
			q    []int8
			d    []float32
			want []float32
		}{{c.K8[0], c.KS[0], k}, {c.V8[0], c.VS[0], v}} {
			w, nb := Hk*Dh, Hk*Dh/block
			DequantizeKVQ8(got, x.q[2*w:3*w], x.d[2*nb:3*nb], block)
			for i := range got {
				if got[i] != x.want[i] {
					t.Fatalf("Dh=%d value %d: got %v want %v", Dh, i, got[i], x.want[i])
				}
			}
			DequantizeKVQ8(got, x.q[0:w], x.d[0:nb], block)
			for i := range got {
				if got[i] != 0 {
					t.Fatalf("Dh=%d: an unwritten row holds %v", Dh, got[i])
				}
			}
		}
		if n := len(c.K8[0]) + 4*len(c.KS[0]); int64(n) != S*model.KVRowBytes(model.KVQ8, Hk, Dh) {
			t.Errorf("Dh=%d: %d bytes of keys, want %d", Dh, n, S*model.KVRowBytes(model.KVQ8, Hk, Dh))
		}
	}
}

// BenchmarkAttendKV is one decode token's attention (32 query heads, 8 KV
// heads of 128: Llama-3.1-8B's layer) over 4096 cached positions, per
// cache type.
func BenchmarkAttendKV(bm *testing.B) {
	const H, Hk, Dh, S = 32, 8, 128, 4096
	r := rand.New(rand.NewPCG(1, 2))
	for _, dt := range []loader.DType{loader.F32, loader.F16, model.KVQ8} {
		bm.Run(fmt.Sprint(model.KVDTypeName(dt)), func(bm *testing.B) {
			b := New(0)
			cache, err := b.NewKVCacheOf(dt, 1, S, Hk, Dh)
			if err != nil {
				bm.Fatal(err)
			}
			c := cache.(*KVCache)
			row := make([]float32, 2*Hk*Dh)
			for p := range S {
				for i := range row {
					row[i] = float32(r.NormFloat64())
				}
				c.store(0, p, row[:Hk*Dh], row[Hk*Dh:])
			}
			qkv := b.NewF32(1, (H+2*Hk)*Dh)
			q := make([]float32, (H+2*Hk)*Dh)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			b.WriteF32(qkv, q)
			pos := b.NewI32(1)
			b.WriteI32(pos, []int32{S - 1})
			out := b.NewF32(1, H*Dh)
			bm.ResetTimer()
			for range bm.N {
				b.Attend(out, qkv, pos, cache, 0, 0, false)
			}
		})
	}
}
