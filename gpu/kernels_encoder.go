package gpu

// The encoder ops' kernels (model.EncoderOps, backend_encoder_js.go).
var (
	kAddBias   = spec[addBiasParams]("add_bias.wgsl", "main")
	kLayerNorm = spec[layerNormParams]("layer_norm.wgsl", "main")
	kRope      = spec[ropeParams]("rope.wgsl", "main")
	kAttendSeq = spec[attendSeqParams]("attend_seq.wgsl", "main")
	kPool      = spec[poolParams]("pool.wgsl", "main")

	// attendSeqMaxD is the largest head AttendSeq takes.
	attendSeqMaxD = shaderConst("attend_seq.wgsl", "MAXD")
	// ropeMaxD is the largest head Rope takes (its workgroup's head).
	ropeMaxD = shaderConst("rope.wgsl", "MAXD")
)

type (
	addBiasParams   struct{ N, Count, Gelu uint32 }
	layerNormParams struct {
		D, Rows, Add uint32
		Eps          float32
	}
	ropeParams struct {
		Row, Half, NeoX, Rot, QHeads, Norm uint32
		Eps                                float32
	}
	attendSeqParams struct {
		Heads, Dh, T    uint32
		Scale           float32
		KVHeads, Radius uint32
		Causal          uint32
	}
	poolParams struct{ D, Seqs, Mode uint32 }
)
