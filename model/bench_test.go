package model_test

import (
	"testing"

	"wasmllm/cpu"
	"wasmllm/model"
)

// BenchmarkDecodeCPU measures single-token decode on the cpu backend: one
// op is one token at a growing position (the cache restarts every 256).
func BenchmarkDecodeCPU(b *testing.B) {
	for _, name := range []string{"stories260K", "tiny-llama3-q4_0", "tiny-qwen3-q8_0", "tiny-qwen3moe-q8_0", "tiny-qwen3moe-q4_0"} {
		b.Run(name, func(b *testing.B) {
			w := loadWeights(&testing.T{}, "../testdata/models/"+name+".gguf")
			m, err := model.Build(cpu.New(0), w)
			if err != nil {
				b.Fatal(err)
			}
			cache, err := m.NewCache(256)
			if err != nil {
				b.Fatal(err)
			}
			ids := []int32{1}
			row := make([]float32, m.Config.Vocab)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				logits, err := m.Forward(cache, ids, i%256, false)
				if err != nil {
					b.Fatal(err)
				}
				m.Backend().ReadF32(logits, row)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
