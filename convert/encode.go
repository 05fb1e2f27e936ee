package convert

import (
	"context"
	"fmt"
	"math"

	"golang.org/x/sync/errgroup"

	"wasmllm/loader"
)

// chunkElems is about how many elements one worker converts at a time.
const chunkElems = 1 << 20

// blockType is the ggml block type whose math a layout uses.
func blockType(d loader.DType) loader.DType {
	switch d {
	case loader.Q4:
		return loader.Q4_0
	case loader.Q8:
		return loader.Q8_0
	}
	return d
}

// encodeTensor converts t to p.dst in chunks of whole rows, on up to
// workers goroutines, and measures the written values against t's exactly
// dequantised ones. done is called with the source bytes of each finished
// chunk. A non-finite source value, or a finite one that the output type
// cannot hold, is a *TensorError naming file and the element.
func encodeTensor(ctx context.Context, file string, t *loader.Tensor, p plan, workers int, done func(int64)) (*loader.Tensor, tensorStat, error) {
	st := tensorStat{Name: t.Name, Shape: t.Shape, Src: t.DType.String(), Dst: p.dst.String(), Lossless: p.lossless, Note: p.note}
	terr := func(elem int64, err error) error {
		return &TensorError{File: file, Tensor: t.Name, Element: elem, Err: err}
	}
	if err := t.CheckSize(); err != nil {
		return nil, st, terr(-1, err)
	}
	n, cols, rows := t.NumElements(), t.Cols(), t.Rows()
	srcRow, err := t.DType.RowBytes(cols)
	if err != nil {
		return nil, st, terr(-1, err)
	}
	size, err := p.dst.Size(n)
	if err != nil {
		return nil, st, terr(-1, err)
	}
	out := make([]byte, size)
	chunkRows := max(1, chunkElems/max(cols, 1))
	nChunks := (rows + chunkRows - 1) / chunkRows
	stats := make([]chunkStat, nChunks)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, workers))
	for c := 0; c < nChunks; c++ {
		r0, r1 := c*chunkRows, min(rows, (c+1)*chunkRows)
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			s, elem, err := encodeRows(t, p.dst, out, r0, r1, srcRow)
			if err != nil {
				return terr(elem, err)
			}
			stats[c] = s
			if done != nil {
				done(int64((r1 - r0) * srcRow))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, st, err
	}
	st.Elements = int64(n)
	for _, s := range stats {
		st.SumSq += s.sumSq
		st.RefSq += s.refSq
		st.MaxAbs = math.Max(st.MaxAbs, s.maxAbs)
	}
	if p.lossless && (st.SumSq != 0 || st.MaxAbs != 0) {
		return nil, st, terr(-1, fmt.Errorf("internal error: %s -> %s should be lossless but differs (max abs %g)", t.DType, p.dst, st.MaxAbs))
	}
	return &loader.Tensor{Name: t.Name, DType: p.dst, Shape: append([]int(nil), t.Shape...), Data: out}, st, nil
}

type chunkStat struct{ sumSq, refSq, maxAbs float64 }

// encodeRows converts rows [r0, r1) of t into their place in out (a tensor
// of type dst) and compares the values read back from out with the source.
// On error it returns the offending element's index in t.
func encodeRows(t *loader.Tensor, dst loader.DType, out []byte, r0, r1, srcRow int) (chunkStat, int64, error) {
	cols := t.Cols()
	base := int64(r0) * int64(cols)
	src := t.Data[r0*srcRow : r1*srcRow]
	x := make([]float32, (r1-r0)*cols)
	if err := loader.Dequantize(t.DType, src, x); err != nil {
		return chunkStat{}, -1, err
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return chunkStat{}, base + int64(i), fmt.Errorf("%w: non-finite weight %v", loader.ErrCorrupt, v)
		}
	}
	var blocks []byte
	var err error
	bt := blockType(dst)
	switch {
	case t.DType == bt:
		blocks = src
	case t.DType == loader.Q4_0 && bt == loader.Q8_0:
		blocks = q4ToQ8(src)
	default:
		if blocks, err = loader.Quantize(bt, x); err != nil {
			return chunkStat{}, -1, err
		}
	}
	y := make([]float32, len(x))
	if dst == loader.Q4 || dst == loader.Q8 {
		g0, ng := r0*cols/32, len(x)/32
		placePlanar(dst, out, t.NumElements()/32, g0, blocks)
		if err := loader.Dequantize(dst, planarSlice(dst, out, t.NumElements()/32, g0, ng), y); err != nil {
			return chunkStat{}, -1, err
		}
	} else {
		rb, _ := dst.RowBytes(cols)
		region := out[r0*rb : r1*rb]
		copy(region, blocks)
		if err := loader.Dequantize(dst, region, y); err != nil {
			return chunkStat{}, -1, err
		}
	}
	var s chunkStat
	for i := range x {
		a, b := float64(x[i]), float64(y[i])
		if math.IsInf(b, 0) || math.IsNaN(b) {
			return chunkStat{}, base + int64(i), fmt.Errorf("%w: weight %v does not fit %s", loader.ErrTooLarge, x[i], dst)
		}
		d := b - a
		s.sumSq += d * d
		s.refSq += a * a
		s.maxAbs = math.Max(s.maxAbs, math.Abs(d))
	}
	return s, -1, nil
}

// q4ToQ8 rewrites Q4_0 blocks as Q8_0 blocks of the same values: the scale
// d is kept and each nibble q becomes the int8 q-8, so d*(q-8) is unchanged.
func q4ToQ8(src []byte) []byte {
	nb := len(src) / 18
	out := make([]byte, nb*34)
	for b := 0; b < nb; b++ {
		in, o := src[b*18:b*18+18], out[b*34:b*34+34]
		o[0], o[1] = in[0], in[1]
		for j := 0; j < 16; j++ {
			o[2+j] = byte(int8(in[2+j]&0xf) - 8)
			o[2+j+16] = byte(int8(in[2+j]>>4) - 8)
		}
	}
	return out
}

// planarGeometry returns the bytes of quantised values per group of 32 and
// the offset of the scale plane in a planar tensor of groups groups.
func planarGeometry(d loader.DType, groups int) (qPer, scaleOff int) {
	qPer = 16
	if d == loader.Q8 {
		qPer = 32
	}
	return qPer, (groups*qPer + 3) &^ 3
}

// placePlanar scatters ggml blocks (Q4_0 for Q4, Q8_0 for Q8) for groups
// g0, g0+1, ... into their places in the planar tensor out of groups groups.
func placePlanar(d loader.DType, out []byte, groups, g0 int, blocks []byte) {
	qPer, scaleOff := planarGeometry(d, groups)
	bb := 2 + qPer
	for k := 0; k < len(blocks)/bb; k++ {
		blk := blocks[k*bb : (k+1)*bb]
		copy(out[scaleOff+2*(g0+k):], blk[:2])
		copy(out[(g0+k)*qPer:], blk[2:])
	}
}

// planarSlice copies groups [g0, g0+ng) of the planar tensor out into a
// planar tensor of their own.
func planarSlice(d loader.DType, out []byte, groups, g0, ng int) []byte {
	qPer, scaleOff := planarGeometry(d, groups)
	size, _ := d.Size(ng * 32)
	buf := make([]byte, size)
	_, sub := planarGeometry(d, ng)
	copy(buf, out[g0*qPer:(g0+ng)*qPer])
	copy(buf[sub:], out[scaleOff+2*g0:scaleOff+2*(g0+ng)])
	return buf
}
