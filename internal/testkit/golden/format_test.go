package golden

import (
	"bytes"
	"compress/flate"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/internal/testkit/shareddata"
)

const sample = `{"model":"../models/m.gguf","reference":"llama.cpp x","kind":"exact","tolerance":0.0005,` +
	`"tokens":[1, 2,3],"greedy":[4,5],"logits":[[1.5,-0,3e-7],[-2.25,1e30,7]],"weights":"w <&>",` +
	`"tolerance_note":"max |got-want|","greedy_logits":[[0.1,0.2,0.3]]}`

func TestRoundTrip(t *testing.T) {
	for _, js := range []string{
		sample,
		// no greedy_logits (long and story files), null tolerance (native files)
		`{"model":"m","kind":"quantized-native","tolerance":null,"tokens":[1],"greedy":[2],"logits":[[1,2],[3,4]],"tolerance_note":"n"}`,
		`{"model":"m","logits":[],"greedy_logits":[]}`,
	} {
		enc, err := Encode([]byte(js), 0)
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		if err := Verify([]byte(js), enc); err != nil {
			t.Errorf("%s: %v", js, err)
		}
	}
	enc, err := Encode([]byte(sample), 0)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(enc, []byte("\n"))
	want := `{"model":"../models/m.gguf","reference":"llama.cpp x","kind":"exact","tolerance":0.0005,"tokens":[1,2,3],` +
		`"greedy":[4,5],"weights":"w <&>","tolerance_note":"max |got-want|","format":"wasmllm-golden/1","vocab":3,` +
		`"logits_rows":2,"greedy_logits_rows":1,"encoding":"float32le-byteshuffle","compression":"deflate","sha256":"`
	if !strings.HasPrefix(string(line), want) {
		t.Errorf("header\n%s\nwant prefix\n%s", line, want)
	}
	f, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if math.Float32bits(f.Logits[0][1]) != 0x80000000 || f.Logits[1][1] != 1e30 || len(f.GreedyLogits) != 1 {
		t.Errorf("decoded %v %v", f.Logits, f.GreedyLogits)
	}
	// Rows must not share capacity: appending to one cannot change the next.
	_ = append(f.Logits[0], 99)
	if f.Logits[1][0] != -2.25 {
		t.Errorf("rows alias: %v", f.Logits)
	}
}

// TestThinned: a thinned file keeps the logits of every every-th position
// and the last one, with their positions, and every greedy row; Verify
// compares them with the JSON's rows at those positions; positions that do
// not fit the header fail to decode.
func TestThinned(t *testing.T) {
	js := `{"model":"m","kind":"exact","tolerance":0.0005,"tokens":[1,2,3,4,5,6,7],"greedy":[8],` +
		`"logits":[[0,0],[1,1],[2,2],[3,3],[4,4],[5,5],[6,6]],"greedy_logits":[[9,9]]}`
	enc, err := Encode([]byte(js), 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify([]byte(js), enc); err != nil {
		t.Fatal(err)
	}
	f, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 5, 6}; !slices.Equal(f.Positions, want) || len(f.Logits) != 3 || len(f.GreedyLogits) != 1 {
		t.Fatalf("positions %v, %d rows, %d greedy rows; want %v, 3, 1", f.Positions, len(f.Logits), len(f.GreedyLogits), want)
	}
	for r, row := range f.Logits {
		if row[0] != float32(f.Position(r)) {
			t.Errorf("row %d (position %d) holds %v", r, f.Position(r), row)
		}
	}
	if err := Verify([]byte(strings.Replace(js, "[5,5]", "[5,5.5]", 1)), enc); err == nil || !strings.Contains(err.Error(), "logits[1][1]") {
		t.Errorf("a changed kept row: %v", err)
	}
	if err := Verify([]byte(strings.Replace(js, "[4,4]", "[4,4.5]", 1)), enc); err != nil {
		t.Errorf("a changed dropped row: %v", err)
	}
	for _, bad := range []string{`"positions":[2,5,9]`, `"positions":[5,2,6]`, `"positions":[2,5]`} {
		if _, err := Decode(bytes.Replace(enc, []byte(`"positions":[2,5,6]`), []byte(bad), 1)); err == nil || !strings.Contains(err.Error(), "positions") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

func TestEncodeRejects(t *testing.T) {
	for _, js := range []string{
		`{"note":"x","tensors":[]}`,                // dequant-rows.json: not a golden
		`{"logits":[[1,2],[3]]}`,                   // ragged rows
		`{"logits":[[1]],"sha256":"x"}`,            // reserved key
		`{"logits":[[1]],"model":"a","model":"b"}`, // duplicate key
		`{"logits":[[1e39]]}`,                      // not a float32
		`{"logits":[[1]]} {}`,                      // trailing data
	} {
		if _, err := Encode([]byte(js), 0); err == nil {
			t.Errorf("%s: no error", js)
		}
	}
}

// TestDecodeCorrupt: a damaged file fails with a message that says what is
// wrong.
func TestDecodeCorrupt(t *testing.T) {
	enc, err := Encode([]byte(sample), 0)
	if err != nil {
		t.Fatal(err)
	}
	line, body, _ := bytes.Cut(enc, []byte("\n"))
	rows, err := inflate(body)
	if err != nil {
		t.Fatal(err)
	}
	flip := bytes.Clone(rows)
	flip[5] ^= 1
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"sha", join(line, deflate(t, flip)), "sha256"},
		{"rows", join(bytes.Replace(line, []byte(`"logits_rows":2`), []byte(`"logits_rows":3`), 1), body), "need"},
		{"short", join(line, deflate(t, rows[:len(rows)-4])), "need"},
		{"trailing", append(bytes.Clone(enc), 0), "after the deflate stream"},
		{"truncated", enc[:len(enc)-3], "deflate"},
		{"format", bytes.Replace(enc, []byte("wasmllm-golden/1"), []byte("wasmllm-golden/2"), 1), "format"},
		{"no header", []byte("{}"), "header"},
	} {
		_, err := Decode(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one about %q", c.name, err, c.want)
		}
	}
	if err := Verify([]byte(strings.Replace(sample, "1.5", "1.5000001", 1)), enc); err == nil || !strings.Contains(err.Error(), "logits[0][0]") {
		t.Errorf("changed value: %v", err)
	}
	if err := Verify([]byte(strings.Replace(sample, "llama.cpp x", "llama.cpp y", 1)), enc); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("changed reference: %v", err)
	}
}

func join(line, body []byte) []byte { return append(append(bytes.Clone(line), '\n'), body...) }

func deflate(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func inflate(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(flate.NewReader(bytes.NewReader(b)))
	return buf.Bytes(), err
}

// goldenDirs are the repository's golden folders and where their JSON
// originals lie in the shared data.
var goldenDirs = []struct{ repo, shared string }{
	{"../../../testdata/golden", "testdata/golden"},
	{"../../../testdata/k/golden", "testdata-k/golden"},
	{"../../../testdata/qwen2/golden", "testdata-qwen2/golden"},
}

// TestAllFilesDecode reads every .golden of the repository.
func TestAllFilesDecode(t *testing.T) {
	for _, d := range goldenDirs {
		paths, _ := filepath.Glob(filepath.Join(d.repo, "*.golden"))
		if len(paths) == 0 && d.repo == goldenDirs[0].repo {
			t.Fatalf("no .golden files in %s", d.repo)
		}
		for _, p := range paths {
			if f := Read(t, p); len(f.Logits) == 0 || len(f.Greedy) == 0 {
				t.Errorf("%s: %d logits rows, %d greedy ids", p, len(f.Logits), len(f.Greedy))
			}
		}
	}
}

// TestMatchesSharedJSON compares every .golden of the repository bit for bit
// with its JSON original in the shared data (internal/testkit/shareddata: the
// repository's ../shared, or $WASMLLM_SHARED; testdata/golden,
// testdata-k/golden and testdata-qwen2/golden there). It runs in make
// test-extended and skips when that folder is absent, as in a fresh clone.
func TestMatchesSharedJSON(t *testing.T) {
	for _, d := range goldenDirs {
		t.Run(d.shared, func(t *testing.T) {
			dir := shareddata.Dir(t, d.shared)
			paths, _ := filepath.Glob(filepath.Join(d.repo, "*.golden"))
			if len(paths) == 0 {
				t.Fatalf("no .golden files in %s", d.repo)
			}
			same := 0
			for _, p := range paths {
				base := strings.TrimSuffix(filepath.Base(p), ".golden")
				js := filepath.Join(dir, base+".json")
				jb, err := os.ReadFile(js)
				if errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s has no JSON original %s", p, js)
					continue
				} else if err != nil {
					t.Fatal(err)
				}
				gb, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := Verify(jb, gb); err != nil {
					t.Errorf("%s against %s: %v", p, js, err)
				} else {
					same++
				}
			}
			t.Logf("%d of %d .golden files identical to their JSON in %s", same, len(paths), dir)
		})
	}
}

// TestMTPFile decodes the vendored MTP golden, refuses it with a byte of
// its rows changed, and (with the shared data) matches its JSON bit for
// bit.
func TestMTPFile(t *testing.T) {
	const p = "../../../testdata/qwen35/golden/tiny-qwen35-mtp-f32.mtpgolden"
	f := ReadMTP(t, p)
	if len(f.Main.Logits) != 12 || len(f.MTP.Hidden) != 12 || len(f.Draft.Steps) != 4 || len(f.Draft.Steps[3].Logits) != 512 || f.Draft.IDLast != 397 {
		t.Fatalf("%d main rows, %d MTP hidden rows, %d steps, id_last %d", len(f.Main.Logits), len(f.MTP.Hidden), len(f.Draft.Steps), f.Draft.IDLast)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(b)
	bad[len(bad)-100] ^= 1
	if _, err := DecodeMTP(bad); err == nil {
		t.Error("a corrupt row byte decoded")
	}
	if _, err := DecodeMTP(bytes.Replace(b, []byte(mtpFormat), []byte("wasmllm-mtp-golden/9"), 1)); err == nil {
		t.Error("an unknown format decoded")
	}
	js, err := os.ReadFile(filepath.Join(shareddata.Dir(t, "testdata-qwen35"), "golden", "tiny-qwen35-mtp-f32.mtp.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyMTP(js, b); err != nil {
		t.Error(err)
	}
}
