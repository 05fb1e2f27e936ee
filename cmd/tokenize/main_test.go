package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// runLines runs the command on input and returns its output lines.
func runLines(t *testing.T, args []string, input string) ([]string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	rc := run(args, strings.NewReader(input), &out, &errOut)
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), rc
}

// TestGoldenThroughCLI pipes every Qwen3 golden string through the command,
// with and without -special, then decodes the ids back.
func TestGoldenThroughCLI(t *testing.T) {
	f, err := os.Open("../../testdata/tokenizer/qwen3.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	type golden struct {
		Text           string  `json:"text"`
		IDs            []int32 `json:"ids"`
		IDsWithSpecial []int32 `json:"ids_with_special"`
		DecodedRaw     string  `json:"decoded_raw"`
	}
	var gs []golden
	var in, decIn strings.Builder
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g golden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
		b, _ := json.Marshal(map[string]string{"text": g.Text})
		in.Write(append(b, '\n'))
		b, _ = json.Marshal(map[string][]int32{"ids": g.IDs})
		decIn.Write(append(b, '\n'))
	}
	dir := "../../testdata/tokenizer/qwen3"
	for _, special := range []bool{false, true} {
		args := []string{"-tokenizer", dir}
		if special {
			args = append(args, "-special")
		}
		lines, rc := runLines(t, args, in.String())
		if rc != 0 || len(lines) != len(gs) {
			t.Fatalf("rc %d, %d lines for %d inputs", rc, len(lines), len(gs))
		}
		for i, l := range lines {
			want := gs[i].IDs
			if special {
				want = gs[i].IDsWithSpecial
			}
			wb, _ := json.Marshal(map[string][]int32{"ids": want})
			if l != string(wb) {
				t.Errorf("line %d (special=%v): text %q\n got  %s\n want %s", i+1, special, gs[i].Text, l, wb)
			}
		}
	}
	lines, rc := runLines(t, []string{"-tokenizer", dir, "-decode"}, decIn.String())
	if rc != 0 {
		t.Fatalf("decode rc %d", rc)
	}
	for i, l := range lines {
		var got struct{ Text string }
		if err := json.Unmarshal([]byte(l), &got); err != nil || got.Text != gs[i].DecodedRaw {
			t.Errorf("decode line %d: %s, want %q (%v)", i+1, l, gs[i].DecodedRaw, err)
		}
	}
}

func TestChatThroughCLI(t *testing.T) {
	data, err := os.ReadFile("../../testdata/tokenizer/qwen3.chat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c struct {
			Messages json.RawMessage `json:"messages"`
			Kwargs   json.RawMessage `json:"kwargs"`
			Rendered string          `json:"rendered"`
			IDs      []int32         `json:"ids"`
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]json.RawMessage{"messages": c.Messages, "kwargs": c.Kwargs})
		in.Write(append(b, '\n'))
		var w bytes.Buffer
		enc := json.NewEncoder(&w)
		enc.SetEscapeHTML(false)
		enc.Encode(struct {
			Rendered string  `json:"rendered"`
			IDs      []int32 `json:"ids"`
		}{c.Rendered, c.IDs})
		want = append(want, strings.TrimSuffix(w.String(), "\n"))
	}
	lines, rc := runLines(t, []string{"-tokenizer", "../../testdata/tokenizer/qwen3/tokenizer.json", "-chat"}, in.String())
	if rc != 0 || len(lines) != len(want) {
		t.Fatalf("rc %d, %d lines for %d inputs", rc, len(lines), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("chat line %d:\n got  %s\n want %s", i+1, lines[i], want[i])
		}
	}
}

// TestBadLines checks that each bad line yields an error naming its line
// number, that the others are still processed, and that the status is 1.
func TestBadLines(t *testing.T) {
	in := "{\"text\":\"a\"}\nnot json\n{\"ids\":[1]}\n\n{\"text\":\"b\"}\n"
	lines, rc := runLines(t, []string{"-tokenizer", "../../testdata/models/tiny-qwen3-f32.gguf"}, in)
	if rc != 1 || len(lines) != 5 {
		t.Fatalf("rc %d, lines %q", rc, lines)
	}
	for i, prefix := range []string{`{"ids":[`, `{"error":"line 2: `, `{"error":"line 3: `, `{"error":"line 4: `, `{"ids":[`} {
		if !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d = %s, want prefix %s", i+1, lines[i], prefix)
		}
	}
	lines, rc = runLines(t, []string{"-tokenizer", "../../testdata/models/tok512.bin", "-chat"}, `{"messages":[{"role":"user","content":"hi"}]}`+"\n")
	if rc != 1 || !strings.Contains(lines[0], "no chat template") {
		t.Errorf("chat without template: rc %d, %s", rc, lines[0])
	}
	if _, rc := runLines(t, []string{"-tokenizer", "../../testdata/models/nonexistent.gguf"}, ""); rc != 1 {
		t.Errorf("missing file: rc %d", rc)
	}
}
