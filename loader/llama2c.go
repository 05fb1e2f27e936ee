package loader

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
)

// Llama2CConfig is the header of a llama2.c checkpoint.
type Llama2CConfig struct {
	Dim       int // embedding width
	HiddenDim int // feed-forward width
	Layers    int
	Heads     int
	KVHeads   int
	Vocab     int
	SeqLen    int // maximum sequence length (sizes the skipped RoPE tables)
	// SharedClassifier is set when the header's vocab_size is positive: the
	// output projection is the token embedding, and the file has no wcls.
	SharedClassifier bool
}

// HeadDim is Dim / Heads.
func (c Llama2CConfig) HeadDim() int { return c.Dim / c.Heads }

// Llama2C is a parsed llama2.c checkpoint (the legacy float32 format run.c
// reads). Tensors carry GGUF names and row-major shapes, their Data
// referencing the file's bytes; Q and K are as llama2.c stores them, in the
// interleaved-pairs RoPE layout.
type Llama2C struct {
	File    string
	Config  Llama2CConfig
	Tensors []*Tensor
}

// ReadLlama2C reads and parses a llama2.c .bin checkpoint.
func ReadLlama2C(path string) (*Llama2C, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseLlama2C(path, data)
}

var llama2cHeader = [7]string{"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"}

// ParseLlama2C parses a legacy llama2.c checkpoint: seven int32 (dim,
// hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative
// vocab_size means the file ends with its own classifier wcls), then float32
// token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
// the freq_cis_real and freq_cis_imag tables (skipped), and wcls.
func ParseLlama2C(file string, data []byte) (*Llama2C, error) {
	fail := func(field string, off int64, err error) error {
		return &FormatError{File: file, Field: field, Offset: off, Err: err}
	}
	if len(data) >= 4 && binary.LittleEndian.Uint32(data) == 0x616b3432 { // "ak42": llama2.c's versioned export
		return nil, fail("magic", 0, fmt.Errorf("%w: versioned llama2.c export (magic ak42); only the legacy float32 format is read", ErrUnsupported))
	}
	if len(data) < 28 {
		i := len(data) / 4
		return nil, fail(llama2cHeader[i], int64(4*i), fmt.Errorf("%w: %d bytes, the header needs 28", ErrTruncated, len(data)))
	}
	var h [7]int64
	for i := range h {
		h[i] = int64(int32(binary.LittleEndian.Uint32(data[4*i:])))
	}
	c := Llama2CConfig{Dim: int(h[0]), HiddenDim: int(h[1]), Layers: int(h[2]), Heads: int(h[3]), KVHeads: int(h[4]), Vocab: int(h[5]), SeqLen: int(h[6])}
	c.SharedClassifier = c.Vocab > 0
	if c.Vocab < 0 {
		c.Vocab = -c.Vocab
	}
	for i, v := range []int{c.Dim, c.HiddenDim, c.Layers, c.Heads, c.KVHeads, c.Vocab, c.SeqLen} {
		if v <= 0 {
			return nil, fail(llama2cHeader[i], int64(4*i), fmt.Errorf("%w: %d", ErrCorrupt, h[i]))
		}
	}
	switch {
	case c.Dim%c.Heads != 0 || c.HeadDim()%2 != 0:
		return nil, fail("n_heads", 12, fmt.Errorf("%w: dim %d is not n_heads %d times an even head size", ErrCorrupt, c.Dim, c.Heads))
	case c.KVHeads > c.Heads || c.Heads%c.KVHeads != 0:
		return nil, fail("n_kv_heads", 16, fmt.Errorf("%w: n_heads %d is not a multiple of n_kv_heads %d", ErrCorrupt, c.Heads, c.KVHeads))
	}
	m := &Llama2C{File: file, Config: c}
	kvDim := c.KVHeads * c.HeadDim()
	off := uint64(28)
	// take slices the next n float32 values, n being a product of header
	// values, checked for overflow and against the file size.
	take := func(field string, dims ...int) ([]byte, error) {
		n := uint64(1)
		for _, d := range dims {
			hi, lo := bits.Mul64(n, uint64(d))
			if hi != 0 || lo > math.MaxInt64/4 {
				return nil, fail(field, int64(off), fmt.Errorf("%w: %v float32 values", ErrTooLarge, dims))
			}
			n = lo
		}
		if n*4 > uint64(len(data))-off {
			return nil, fail(field, int64(off), fmt.Errorf("%w: %d bytes needed, %d left", ErrTruncated, n*4, uint64(len(data))-off))
		}
		b := data[off : off+n*4 : off+n*4]
		off += n * 4
		return b, nil
	}
	type part struct {
		field, name string // name is a GGUF name, per layer when it has %d
		rows, cols  int
	}
	perLayer := func(p part) error {
		b, err := take(p.field, c.Layers, p.rows, p.cols)
		if err != nil {
			return err
		}
		size := p.rows * p.cols * 4
		for l := 0; l < c.Layers; l++ {
			shape := []int{p.rows, p.cols}
			if p.rows == 1 {
				shape = []int{p.cols}
			}
			m.Tensors = append(m.Tensors, &Tensor{Name: fmt.Sprintf(p.name, l), DType: F32, Shape: shape, Data: b[l*size : (l+1)*size : (l+1)*size]})
		}
		return nil
	}
	emb, err := take("token_embedding", c.Vocab, c.Dim)
	if err != nil {
		return nil, err
	}
	m.Tensors = append(m.Tensors, &Tensor{Name: "token_embd.weight", DType: F32, Shape: []int{c.Vocab, c.Dim}, Data: emb})
	for _, p := range []part{
		{"rms_att_weight", "blk.%d.attn_norm.weight", 1, c.Dim},
		{"wq", "blk.%d.attn_q.weight", c.Dim, c.Dim},
		{"wk", "blk.%d.attn_k.weight", kvDim, c.Dim},
		{"wv", "blk.%d.attn_v.weight", kvDim, c.Dim},
		{"wo", "blk.%d.attn_output.weight", c.Dim, c.Dim},
		{"rms_ffn_weight", "blk.%d.ffn_norm.weight", 1, c.Dim},
		{"w1", "blk.%d.ffn_gate.weight", c.HiddenDim, c.Dim},
		{"w2", "blk.%d.ffn_down.weight", c.Dim, c.HiddenDim},
		{"w3", "blk.%d.ffn_up.weight", c.HiddenDim, c.Dim},
	} {
		if err := perLayer(p); err != nil {
			return nil, err
		}
	}
	norm, err := take("rms_final_weight", c.Dim)
	if err != nil {
		return nil, err
	}
	m.Tensors = append(m.Tensors, &Tensor{Name: "output_norm.weight", DType: F32, Shape: []int{c.Dim}, Data: norm})
	for _, f := range []string{"freq_cis_real", "freq_cis_imag"} {
		if _, err := take(f, c.SeqLen, c.HeadDim()/2); err != nil {
			return nil, err
		}
	}
	if !c.SharedClassifier {
		wcls, err := take("wcls", c.Vocab, c.Dim)
		if err != nil {
			return nil, err
		}
		m.Tensors = append(m.Tensors, &Tensor{Name: "output.weight", DType: F32, Shape: []int{c.Vocab, c.Dim}, Data: wcls})
	}
	if off != uint64(len(data)) {
		return nil, fail("end of file", int64(off), fmt.Errorf("%w: %d bytes after the last tensor", ErrCorrupt, uint64(len(data))-off))
	}
	return m, nil
}

// Tensor returns a copy of the named tensor's header, its Data referencing
// the file's bytes.
func (m *Llama2C) Tensor(name string) (*Tensor, error) {
	for _, t := range m.Tensors {
		if t.Name == name {
			c := *t
			c.Shape = append([]int(nil), t.Shape...)
			return &c, nil
		}
	}
	return nil, &FormatError{File: m.File, Field: "tensor " + name, Offset: -1, Err: ErrNotFound}
}
