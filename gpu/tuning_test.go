package gpu

import (
	"math"
	"testing"

	"wasmllm/gpu/webgpu"
	"wasmllm/loader"
)

// The adapters the tuning is chosen for: the two software ones here, as
// they report themselves, and a discrete GPU with WebGPU's default limits.
var (
	swiftShader = newTuning(webgpu.AdapterInfo{Fallback: true},
		webgpu.Features{Subgroups: true, SubgroupMinSize: 4, SubgroupMaxSize: 4},
		webgpu.Limits{MaxComputeWorkgroupStorageSize: 32768, MaxComputeInvocationsPerWorkgroup: 256}, MathAuto)
	llvmpipe = newTuning(webgpu.AdapterInfo{Fallback: true},
		webgpu.Features{ShaderF16: true},
		webgpu.Limits{MaxComputeWorkgroupStorageSize: 16384, MaxComputeInvocationsPerWorkgroup: 256}, MathAuto)
	discrete = newTuning(webgpu.AdapterInfo{},
		webgpu.Features{Subgroups: true, ShaderF16: true, SubgroupMinSize: 32, SubgroupMaxSize: 32},
		webgpu.Limits{MaxComputeWorkgroupStorageSize: 16384, MaxComputeInvocationsPerWorkgroup: 256}, MathAuto)
)

// TestTuningKinds checks each adapter kind's choices: on a CPU adapter one
// subgroup a workgroup (8 threads for the K-quants where the adapter tells
// no subgroup size), 16 rows, long GEMV batches, few decode splits, token
// by token MoE and f32 prefill math; on a GPU wide workgroups within the
// workgroup memory, lanes per key and the f16 GEMM.
func TestTuningKinds(t *testing.T) {
	type choice struct {
		name      string
		got, want any
	}
	for _, c := range []struct {
		kind string
		tu   tuning
		want []choice
	}{
		{"SwiftShader", swiftShader, []choice{
			{"gemvWG", swiftShader.gemvWG(64, 17), 4},
			{"kquantWG", swiftShader.kquantWG(64, 32), 4},
			{"oneSubgroup(4)", swiftShader.oneSubgroup(4), true},
			{"gemvShape q4 T=1", swiftShader.gemvShape(loader.Q4, 1, 2048), gemvShape{wg: 4, r: 16, tb: 1}},
			{"gemvShape q4 T=3", swiftShader.gemvShape(loader.Q4, 3, 2048), gemvShape{wg: 4, r: 4, tb: 3}},
			{"kquantRO T=2", swiftShader.kquantRO(2), 2},
			{"kquantRO T=4", swiftShader.kquantRO(4), 1},
			{"moeGemvShape rows", second(swiftShader.moeGemvShape(loader.Q4, 2048)), moeGemvMaxRows},
			{"gemvMaxT", swiftShader.gemvMaxT(), 64},
			{"prefillChunk", swiftShader.prefillChunk(), 128},
			{"decodeSplits(4096)", swiftShader.decodeSplits(4096), maxDecodeSplitsFallback},
			{"decodeLanes(128)", swiftShader.decodeLanes(128), 1},
			{"moeDecodeMax", swiftShader.moeDecodeMax(), math.MaxInt},
			{"wideLoads", swiftShader.wideLoads, false},
			{"f16math", swiftShader.f16math, false},
		}},
		{"llvmpipe", llvmpipe, []choice{
			{"gemvWG", llvmpipe.gemvWG(64, 17), 4},
			{"kquantWG", llvmpipe.kquantWG(64, 32), 8},
			{"oneSubgroup(8)", llvmpipe.oneSubgroup(8), false},
			{"f16math (shader-f16, software)", llvmpipe.f16math, false},
			{"f16math asked", newTuning(webgpu.AdapterInfo{Fallback: true}, webgpu.Features{ShaderF16: true}, webgpu.Limits{}, MathF16).f16math, true},
		}},
		{"GPU", discrete, []choice{
			{"gemvWG 64 chunks", discrete.gemvWG(64, 9), 64},
			{"gemvWG capped", discrete.gemvWG(4096, 1), 256},
			{"gemvWG in workgroup memory", discrete.gemvWG(4096, 64), 64},
			{"gemvWG invocation limit", newTuning(webgpu.AdapterInfo{}, webgpu.Features{}, webgpu.Limits{MaxComputeWorkgroupStorageSize: 16384, MaxComputeInvocationsPerWorkgroup: 128}, MathAuto).gemvWG(4096, 1), 128},
			{"kquantWG", discrete.kquantWG(4096, 32), kquantMaxWG},
			{"oneSubgroup(64)", discrete.oneSubgroup(64), false},
			{"oneSubgroup(32)", discrete.oneSubgroup(32), true},
			{"gemvShape q8 T=1", discrete.gemvShape(loader.Q8, 1, 2048), gemvShape{wg: 128, r: 8, tb: 1}},
			{"kquantRO T=1", discrete.kquantRO(1), 1},
			{"moeGemvShape rows", second(discrete.moeGemvShape(loader.Q4, 2048)), 8},
			{"gemvMaxT", discrete.gemvMaxT(), 32},
			{"prefillChunk", discrete.prefillChunk(), 512},
			{"decodeSplits(4096)", discrete.decodeSplits(4096), maxDecodeSplits},
			{"decodeSplits(100)", discrete.decodeSplits(100), 2},
			{"decodeLanes(128)", discrete.decodeLanes(128), 8},
			{"moeDecodeMax", discrete.moeDecodeMax(), moeDecodeMaxT},
			{"wideLoads", discrete.wideLoads, true},
			{"f16math", discrete.f16math, true},
			{"f16math f32 asked", newTuning(webgpu.AdapterInfo{}, webgpu.Features{ShaderF16: true}, webgpu.Limits{}, MathF32).f16math, false},
		}},
	} {
		for _, ch := range c.want {
			if ch.got != ch.want {
				t.Errorf("%s: %s = %v, want %v", c.kind, ch.name, ch.got, ch.want)
			}
		}
	}
}

func second(_, b int) int { return b }
