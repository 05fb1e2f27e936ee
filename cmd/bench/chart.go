package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// chartColors are one per model; ours is a solid line, the peer's dashed.
var chartColors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"}

// writeChart draws decode tok/s against context length (the prompt's
// tokens) for wasmllm on WebGPU and for wllama, log-log, as SVG.
func (r *Report) writeChart(w io.Writer) error {
	const W, H, left, right, top, bottom = 900, 560, 70, 270, 40, 50
	type series struct {
		label, color string
		dashed       bool
		pts          []Point
	}
	var ss []series
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, m := range r.Models {
		c := chartColors[i%len(chartColors)]
		for _, e := range m.Engines {
			if (e.Engine != engineGPU && e.Engine != enginePeer) || len(e.Decode) == 0 {
				continue
			}
			ss = append(ss, series{label: m.Name + " " + e.Engine, color: c, dashed: e.Engine == enginePeer, pts: e.Decode})
			for _, p := range e.Decode {
				lo, hi = math.Min(lo, p.TokS), math.Max(hi, p.TokS)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">Decode tok/s against context length: wasmllm (WebGPU, solid) and wllama %s (dashed)</text>`+"\n", left, peerVersion)
	if len(ss) == 0 {
		b.WriteString(`<text x="70" y="100">no decode runs</text></svg>` + "\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	xs := r.Prompts
	xlo, xhi := math.Log2(float64(xs[0])), math.Log2(float64(xs[len(xs)-1]))
	if xhi <= xlo {
		xhi = xlo + 1
	}
	pw, ph := float64(W-left-right), float64(H-top-bottom)
	px := func(x float64) float64 { return left + (math.Log2(x)-xlo)/(xhi-xlo)*pw }
	py := func(y float64) float64 { return top + ph - (math.Log10(y)-ylo)/(yhi-ylo)*ph }
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`+"\n", left, top, pw, ph)
	for e := ylo; e <= yhi; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n",
			left, left+pw, y, y, left-6, y+4, math.Pow(10, e))
	}
	for _, x := range xs {
		X := px(float64(x))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.0f" stroke="#ddd"/><text x="%.1f" y="%.0f" text-anchor="middle">%d</text>`+"\n",
			X, X, top, top+ph, X, top+ph+18, x)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">context (prompt tokens before the decode)</text>`+"\n", left+pw/2, H-10)
	fmt.Fprintf(&b, `<text transform="translate(18 %.0f) rotate(-90)" text-anchor="middle">decode tok/s (log)</text>`+"\n", top+ph/2)
	for i, s := range ss {
		var pts []string
		for _, p := range s.pts {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(p.Len)), py(p.TokS)))
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.color, dash)
		for _, p := range pts {
			x, y, _ := strings.Cut(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, s.color)
		}
		ly := top + 8 + 16*i
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
			W-right+12, W-right+40, ly, ly, s.color, dash, W-right+46, ly+4, html.EscapeString(s.label))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
