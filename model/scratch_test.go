package model

import "testing"

// shapeBackend records the activations it is asked for; scratchFor calls
// nothing else.
type shapeBackend struct {
	Backend
	values []int64
}

type shapeTensor []int

func (s shapeTensor) Shape() []int { return s }

func (b *shapeBackend) NewF32(shape ...int) Tensor { return b.record(shape) }
func (b *shapeBackend) NewI32(shape ...int) Tensor { return b.record(shape) }
func (b *shapeBackend) Free(Tensor)                {}

func (b *shapeBackend) record(shape []int) Tensor {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	b.values = append(b.values, n)
	return shapeTensor(shape)
}

// TestScratchBytes checks ScratchBytes, which the load plan counts before
// anything is downloaded, against the activations scratchFor allocates.
func TestScratchBytes(t *testing.T) {
	dense := Config{Arch: ArchLlama, Layers: 2, Hidden: 64, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 96, Vocab: 300}
	moe := dense
	moe.Arch, moe.FFN, moe.Experts, moe.ExpertsUsed, moe.ExpertFFN = ArchQwen3MoE, 0, 8, 2, 32
	for _, c := range []Config{dense, moe} {
		for _, sh := range []struct {
			T   int
			all bool
		}{{1, false}, {1, true}, {7, false}, {7, true}, {128, false}} {
			b := &shapeBackend{}
			m := &Model{Config: c, b: b, scratch: map[scratchKey]*scratch{}}
			m.scratchFor(sh.T, sh.all)
			// the fused ops' working space beside the model's tensors: the
			// normalised rows and the product before SiluAndMul or the add
			product := 2 * c.FFN
			if c.MoE() {
				product = c.Hidden
			}
			values := append(b.values, int64(sh.T*c.Hidden), int64(sh.T*product))
			var total, largest int64
			for _, v := range values {
				total += 4 * v
				largest = max(largest, 4*v)
			}
			gt, gl := ScratchBytes(&c, sh.T, sh.all)
			if gt != total || gl != largest {
				t.Errorf("MoE %v T=%d all=%v: ScratchBytes %d (largest %d), scratchFor allocates %d (largest %d) with the ops' working space",
					c.MoE(), sh.T, sh.all, gt, gl, total, largest)
			}
		}
	}
}
