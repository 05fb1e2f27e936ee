package convert

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// tensorStat is one tensor's conversion and the error of its written values
// against the source's exactly dequantised ones.
type tensorStat struct {
	Name     string  `json:"name"`
	Shape    []int   `json:"shape"`
	Src      string  `json:"from"`
	Dst      string  `json:"to"`
	Lossless bool    `json:"lossless"`
	Note     string  `json:"note,omitempty"`
	Elements int64   `json:"elements"`
	InBytes  int64   `json:"in_bytes"`
	OutBytes int64   `json:"out_bytes"`
	SumSq    float64 `json:"-"` // Σ (written - source)²
	RefSq    float64 `json:"-"` // Σ source²
	MaxAbs   float64 `json:"max_abs_err"`
	RMS      float64 `json:"rms_err"`
	RelRMS   float64 `json:"rel_rms_err"` // RMS error / RMS of the source values
}

// finish fills in RMS and RelRMS from the sums.
func (s *tensorStat) finish() {
	if s.Elements > 0 {
		s.RMS = math.Sqrt(s.SumSq / float64(s.Elements))
	}
	if s.RefSq > 0 {
		s.RelRMS = math.Sqrt(s.SumSq / s.RefSq)
	}
}

// Report is what a conversion did, tensor by tensor and over the model.
type Report struct {
	Input   string       `json:"input"`
	Output  string       `json:"output"`
	Quant   string       `json:"quant"`
	Tensors []tensorStat `json:"tensors"`
	Total   tensorStat   `json:"total"` // over every tensor
	Shards  int          `json:"shards"`
	Files   []string     `json:"files"` // tokenizer files beside the shards
}

func (r *Report) add(s tensorStat) {
	s.finish()
	r.Tensors = append(r.Tensors, s)
	t := &r.Total
	t.Elements += s.Elements
	t.InBytes += s.InBytes
	t.OutBytes += s.OutBytes
	t.SumSq += s.SumSq
	t.RefSq += s.RefSq
	t.MaxAbs = math.Max(t.MaxAbs, s.MaxAbs)
	t.finish()
}

// print writes the per-tensor table and the model summary.
func (r *Report) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "tensor\tshape\tfrom\tto\trms err\tmax abs err\trel rms\t")
	for _, s := range r.Tensors {
		to := s.Dst
		if s.Note != "" {
			to += "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Name, shapeString(s.Shape), s.Src, to, num(s.RMS), num(s.MaxAbs), num(s.RelRMS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Tensors {
		if s.Note != "" {
			fmt.Fprintf(w, "* %s: %s\n", s.Name, s.Note)
		}
	}
	t := r.Total
	_, err := fmt.Fprintf(w, "%s -> %s (-quant %s): %d tensors, %d weights, %s -> %s in %d shards; error over the model: rms %s, max abs %s, relative rms %s\n",
		r.Input, r.Output, r.Quant, len(r.Tensors), t.Elements, mib(t.InBytes), mib(t.OutBytes), r.Shards, num(t.RMS), num(t.MaxAbs), num(t.RelRMS))
	return err
}

func num(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'e', 2, 64)
}

func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, "x")
}

// TensorError reports a tensor that cannot be converted: the input file,
// the canonical tensor name, and the element (row-major index into the
// tensor) where conversion failed, or -1.
type TensorError struct {
	File    string
	Tensor  string
	Element int64
	Err     error
}

func (e *TensorError) Error() string {
	if e.Element >= 0 {
		return fmt.Sprintf("%s: tensor %s, element %d: %v", e.File, e.Tensor, e.Element, e.Err)
	}
	return fmt.Sprintf("%s: tensor %s: %v", e.File, e.Tensor, e.Err)
}

func (e *TensorError) Unwrap() error { return e.Err }
