package convert

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/loader"
)

// convertFails runs a conversion that must fail and checks that nothing is
// left in the output's parent folder but what was there before.
func convertFails(t *testing.T, o Options) error {
	t.Helper()
	parent := filepath.Dir(o.Out)
	before, _ := os.ReadDir(parent)
	if o.Quant == "" {
		o.Quant = quantKeep
	}
	_, err := Convert(context.Background(), o)
	if err == nil {
		t.Fatalf("convert %s: no error", o.In)
	}
	after, _ := os.ReadDir(parent)
	if len(after) != len(before) {
		var names []string
		for _, e := range after {
			names = append(names, e.Name())
		}
		t.Errorf("convert left %v in %s", names, parent)
	}
	t.Logf("%v", err)
	return err
}

// rewriteGGUF writes src again with tensor name's element elem set to v.
func rewriteGGUF(t *testing.T, src, name string, elem int, v float32, keepMeta func(string) bool) string {
	t.Helper()
	g, err := loader.ReadGGUF(src)
	if err != nil {
		t.Fatal(err)
	}
	var meta []loader.MetaKV
	for _, kv := range g.MetaKVs() {
		if keepMeta == nil || keepMeta(kv.Key) {
			meta = append(meta, kv)
		}
	}
	var ts []*loader.Tensor
	for i := range g.Tensors {
		x := g.TensorAt(i)
		x.Data = append([]byte(nil), x.Data...)
		if x.Name == name {
			binary.LittleEndian.PutUint32(x.Data[4*elem:], math.Float32bits(v))
		}
		ts = append(ts, x)
	}
	var buf bytes.Buffer
	if err := loader.WriteGGUF(&buf, g.Version, meta, ts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "edited.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBadInput(t *testing.T) {
	f32Model := filepath.Join(testdata, "models", "tiny-llama3-f32.gguf")
	out := func() string { return filepath.Join(t.TempDir(), "out") }

	t.Run("truncated", func(t *testing.T) {
		data, err := os.ReadFile(f32Model)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "cut.gguf")
		os.WriteFile(path, data[:len(data)/2], 0o644)
		err = convertFails(t, Options{In: path, Out: out()})
		var fe *loader.FormatError
		if !errors.As(err, &fe) || fe.File != path || fe.Offset < 0 {
			t.Errorf("want a FormatError naming %s and an offset, got %#v", path, err)
		}
	})

	t.Run("truncated safetensors", func(t *testing.T) {
		dir := copyHF(t, "tiny-qwen3")
		file := filepath.Join(dir, "model.safetensors")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(file, data[:len(data)/2], 0o644)
		err = convertFails(t, Options{In: dir, Out: out()})
		var fe *loader.FormatError
		if !errors.As(err, &fe) || fe.File != file || fe.Offset < 0 || !errors.Is(err, loader.ErrTruncated) {
			t.Errorf("want a FormatError naming %s and an offset, got %#v", file, err)
		}
	})

	// A file cut short after it was opened fails when a tensor is loaded,
	// after shards have been written; the error names the first byte
	// missing.
	t.Run("cut while converting", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(testdata, "models", "tiny-qwen3moe-dq8.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		gguf := filepath.Join(t.TempDir(), "m.gguf")
		os.WriteFile(gguf, data, 0o644)
		hf := copyHF(t, "tiny-qwen3moe")
		for _, c := range []struct{ in, file string }{{gguf, gguf}, {hf, filepath.Join(hf, "model.safetensors")}} {
			st, err := os.Stat(c.file)
			if err != nil {
				t.Fatal(err)
			}
			cut := st.Size() / 2
			err = convertFails(t, Options{In: c.in, Out: out(), Writing: func() {
				if err := os.Truncate(c.file, cut); err != nil {
					t.Fatal(err)
				}
			}})
			var te *TensorError
			var fe *loader.FormatError
			if !errors.As(err, &te) || te.File != c.in || !errors.As(err, &fe) || fe.File != c.file || fe.Offset < cut || !errors.Is(err, loader.ErrTruncated) {
				t.Errorf("want a TensorError for %s holding a FormatError naming %s and an offset past %d, got %#v", c.in, c.file, cut, err)
			}
		}
	})

	// NaN eps used to fail at the very end, writing manifest.json, with
	// "json: unsupported value: NaN" and no file or field.
	t.Run("NaN eps", func(t *testing.T) {
		g, err := loader.ReadGGUF(f32Model)
		if err != nil {
			t.Fatal(err)
		}
		meta := g.MetaKVs()
		for i := range meta {
			if meta[i].Key == "llama.attention.layer_norm_rms_epsilon" {
				meta[i].Value = float32(math.NaN())
			}
		}
		var ts []*loader.Tensor
		for i := range g.Tensors {
			ts = append(ts, g.TensorAt(i))
		}
		var buf bytes.Buffer
		if err := loader.WriteGGUF(&buf, g.Version, meta, ts); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "nan-eps.gguf")
		os.WriteFile(path, buf.Bytes(), 0o644)
		err = convertFails(t, Options{In: path, Out: out()})
		var fe *loader.FormatError
		if !errors.As(err, &fe) || fe.File != path || fe.Field != "metadata llama.attention.layer_norm_rms_epsilon" {
			t.Errorf("want a FormatError naming %s and the eps key, got %v", path, err)
		}
	})

	t.Run("NaN weight", func(t *testing.T) {
		path := rewriteGGUF(t, f32Model, "blk.1.ffn_down.weight", 1000, float32(math.NaN()), nil)
		err := convertFails(t, Options{In: path, Out: out()})
		var te *TensorError
		if !errors.As(err, &te) || te.File != path || te.Tensor != "blk.1.ffn_down.weight" || te.Element != 1000 || !errors.Is(err, loader.ErrCorrupt) {
			t.Errorf("want a TensorError naming the file, blk.1.ffn_down.weight and element 1000, got %v", err)
		}
	})

	t.Run("merged tensor element", func(t *testing.T) {
		// blk.0.attn_k.weight (32x128) follows attn_q (128x128) in attn_qkv.
		path := rewriteGGUF(t, f32Model, "blk.0.attn_k.weight", 5, float32(math.Inf(1)), nil)
		err := convertFails(t, Options{In: path, Out: out(), Quant: quantQ4})
		var te *TensorError
		if !errors.As(err, &te) || te.Tensor != "blk.0.attn_qkv.weight" || te.Element != 128*128+5 {
			t.Errorf("want blk.0.attn_qkv.weight element %d, got %v", 128*128+5, err)
		}
	})

	t.Run("F16 overflow", func(t *testing.T) {
		path := rewriteGGUF(t, f32Model, "blk.2.attn_output.weight", 77, 1e6, nil)
		err := convertFails(t, Options{In: path, Out: out(), Quant: quantF16})
		var te *TensorError
		if !errors.As(err, &te) || te.Tensor != "blk.2.attn_output.weight" || te.Element != 77 || !errors.Is(err, loader.ErrTooLarge) {
			t.Errorf("want blk.2.attn_output.weight element 77 too large, got %v", err)
		}
	})

	t.Run("GGUF without tokenizer", func(t *testing.T) {
		path := rewriteGGUF(t, f32Model, "", 0, 0, func(k string) bool { return !strings.HasPrefix(k, "tokenizer.") })
		err := convertFails(t, Options{In: path, Out: out()})
		if !strings.Contains(err.Error(), "-tokenizer") {
			t.Errorf("error does not suggest -tokenizer: %v", err)
		}
		// With a tokenizer from elsewhere it converts.
		convertTo(t, path, quantKeep, func(o *Options) { o.Tokenizer = filepath.Join(testdata, "hf", "tiny-llama3") })
	})

	t.Run("llama2c without tokenizer", func(t *testing.T) {
		data, _ := os.ReadFile(filepath.Join(testdata, "models", "stories260K.bin"))
		path := filepath.Join(t.TempDir(), "stories260K.bin")
		os.WriteFile(path, data, 0o644)
		err := convertFails(t, Options{In: path, Out: out()})
		if !strings.Contains(err.Error(), "-tokenizer") {
			t.Errorf("error does not suggest -tokenizer: %v", err)
		}
		convertTo(t, path, quantKeep, func(o *Options) { o.Tokenizer = filepath.Join(testdata, "models", "tok512.bin") })
	})

	t.Run("output is a folder of other files", func(t *testing.T) {
		dir := out()
		os.MkdirAll(dir, 0o755)
		keep := filepath.Join(dir, "notes.txt")
		os.WriteFile(keep, []byte("mine"), 0o644)
		convertFails(t, Options{In: f32Model, Out: dir})
		if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
			t.Errorf("the folder's file was touched: %q %v", b, err)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		o := Options{In: f32Model, Out: out(), Quant: quantQ4}
		if _, err := Convert(ctx, o); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(o.Out)); len(entries) != 0 {
			t.Errorf("cancelled conversion left %d entries", len(entries))
		}
	})

	t.Run("unsupported K-quant input type", func(t *testing.T) {
		d := &loader.Tensor{Name: "blk.0.attn_output.weight", DType: loader.Q8_K, Shape: []int{1, 256}, Data: make([]byte, 292)}
		if _, err := planTensor(quantKeep, nil, d, nil); !errors.Is(err, loader.ErrUnsupported) {
			t.Errorf("Q8_K: got %v, want ErrUnsupported", err)
		}
	})
}

// copyHF copies testdata/hf/<name> into a temporary folder, its tensors in
// one model.safetensors.
func copyHF(t *testing.T, name string) string {
	t.Helper()
	return rewriteHF(t, filepath.Join(testdata, "hf", name), nil, func(x *loader.Tensor) []*loader.Tensor { return []*loader.Tensor{x} })
}
