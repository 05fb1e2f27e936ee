package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/convert"
	"wasmllm/manifest"
	"wasmllm/source"
)

const testdata = "../../testdata"

// TestCLI runs the command on an MoE model in 1 MiB shards with a JSON
// report, then loads the folder.
func TestCLI(t *testing.T) {
	tmp := t.TempDir()
	out, rep := filepath.Join(tmp, "moe"), filepath.Join(tmp, "report.json")
	var stdout, stderr bytes.Buffer
	in := filepath.Join(testdata, "models", "tiny-qwen3moe-q8_0.gguf")
	err := run(context.Background(), []string{"-o", out, "-shard-mb", "1", "-report", rep, "-progress", "-quant", "q8", in}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "blk.1.ffn_gate_up_exps.weight") || !strings.Contains(stdout.String(), "error over the model: rms 0, max abs 0") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "100%") {
		t.Errorf("no finished progress bar on stderr: %q", stderr.String())
	}
	var r convert.Report
	data, err := os.ReadFile(rep)
	if err != nil || json.Unmarshal(data, &r) != nil || len(r.Tensors) != 21 || r.Total.Elements == 0 {
		t.Fatalf("report %s: %v", data, err)
	}
	m, err := manifest.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) < 2 || m.Quant != "q8" || m.Name != "moe" {
		t.Errorf("%d shards, quant %q, name %q", len(m.Shards), m.Quant, m.Name)
	}
	for _, s := range m.Shards {
		if s.Bytes > 1<<20 {
			t.Errorf("shard %s has %d bytes", s.File, s.Bytes)
		}
	}
	// The folder loads, tokenizer included (package convert's tests check
	// what conversions compute against the goldens).
	w, tok, err := source.Load(out, "")
	if err != nil || tok == nil || len(w.Tensors) != 21 {
		t.Fatalf("loading %s: %v (tokenizer %v)", out, err, tok != nil)
	}
}

func TestUsage(t *testing.T) {
	in := filepath.Join(testdata, "models", "stories260K.gguf")
	out := filepath.Join(t.TempDir(), "x")
	for _, args := range [][]string{
		{in},
		{"-o", out},
		{"-o", out, in, in},
		{"-o", out, "-quant", "q5", in},
		{"-o", out, "-shard-mb", "0", in},
		{"-o", out, "-shard-mb", "0.001", in}, // under 4 KiB
		{"-o", out, "-shard-mb", "NaN", in},
		{"-o", out, "-nope", in},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); !errors.Is(err, errUsage) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("usage errors created %s", out)
	}
}
