package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// chartEngines are the chart's bars for each model, in order, with their
// colours and legend labels.
var chartEngines = []struct{ engine, color, label string }{
	{engineGPU, "#1f77b4", "wasmllm WebGPU, Chromium"},
	{engineFirefox, "#17becf", "wasmllm WebGPU, Firefox"},
	{engineCPU, "#2ca02c", "wasmllm CPU (wasm, ranks in Web Workers)"},
	{engineCPU1, "#98df8a", "wasmllm CPU (wasm, 1 rank)"},
	{engineNative, "#7f7f7f", "wasmllm CPU (native Go)"},
	{enginePeer, "#ff7f0e", "wllama " + peerVersion},
	{engineLlamaCpp, "#d62728", "llama.cpp natively (" + llamaCppPackage + " " + llamaCppVersion + ")"},
}

// chartLen is the prompt length the chart shows decode at: the headline
// when some engine measured it, else the longest length measured.
func (r *Report) chartLen() int {
	best := 0
	for _, m := range r.Models {
		for _, e := range m.Engines {
			if at(e.Decode, r.Headline) > 0 {
				return r.Headline
			}
			for _, p := range e.Decode {
				best = max(best, p.Len)
			}
		}
	}
	return best
}

// writeChart draws decode tok/s per model, one bar per engine and browser,
// on a log scale, as SVG: what a reader takes in at a glance.
func (r *Report) writeChart(w io.Writer) error {
	const W, left, right, top, barH, gap, legendH = 900, 190, 70, 60, 13, 12, 24
	l := r.chartLen()
	type bar struct {
		color string
		v     float64
	}
	type group struct {
		name string
		bars []bar
	}
	var gs []group
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, m := range r.Models {
		g := group{name: m.Name}
		for _, ce := range chartEngines {
			if e := m.engine(ce.engine); e != nil {
				if v := at(e.Decode, l); v > 0 {
					g.bars = append(g.bars, bar{ce.color, v})
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if len(g.bars) > 0 {
			gs = append(gs, g)
		}
	}
	H := top + legendH + 40
	for _, g := range gs {
		H += len(g.bars)*barH + gap
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="10" y="22" font-size="15">Decode tok/s after a %d-token prompt, per model and engine (log scale; longer is faster)</text>`+"\n", l)
	x := 10
	for _, ce := range chartEngines {
		fmt.Fprintf(&b, `<rect x="%d" y="34" width="12" height="12" fill="%s"/><text x="%d" y="45">%s</text>`+"\n", x, ce.color, x+16, html.EscapeString(ce.label))
		x += 22 + 7*len(ce.label)
	}
	if len(gs) == 0 {
		b.WriteString(`<text x="10" y="90">no decode runs</text></svg>` + "\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	elo, ehi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if ehi <= elo {
		ehi = elo + 1
	}
	pw := float64(W - left - right)
	px := func(v float64) float64 { return left + (math.Log10(v)-elo)/(ehi-elo)*pw }
	y0, y1 := top+legendH, H-40
	for e := elo; e <= ehi; e++ {
		X := px(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n",
			X, X, y0-6, y1, X, y1+16, math.Pow(10, e))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">decode tok/s (log)</text>`+"\n", left+pw/2, H-6)
	y := y0
	for _, g := range gs {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+len(g.bars)*barH/2+4, html.EscapeString(g.name))
		for _, br := range g.bars {
			w := px(br.v) - left
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/><text x="%.1f" y="%d" font-size="10">%s</text>`+"\n",
				left, y, math.Max(w, 1), barH-2, br.color, left+math.Max(w, 1)+3, y+barH-4, num(br.v))
			y += barH
		}
		y += gap
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
