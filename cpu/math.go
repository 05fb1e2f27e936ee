package cpu

import "math"

func expf(x float32) float32 { return float32(math.Exp(float64(x))) }
