package golden

// The .golden format (see testdata/README.md). Line 1 is a one-line JSON
// header: every key of the original JSON golden except "logits" and
// "greedy_logits", in its order and with its value as written, then the
// keys of header below. The rest of the file is one raw deflate stream
// (compress/flate) of the rows, logits then greedy_logits, as little-endian
// float32, byte-shuffled: byte 0 of every value, then byte 1, 2 and 3.
// "sha256" is that of the rows' plain little-endian bytes (unshuffled).
// A thinned file keeps only some prompt rows of a long golden: "positions"
// then lists the prompt position of each stored logits row (absent: every
// position, in order); the greedy rows are always kept whole.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"wasmllm/internal/testkit/packed"
)

const (
	formatName  = "wasmllm-golden/1"
	rowEncoding = "float32le-byteshuffle"
	compression = "deflate"
)

// header holds the keys the format adds to the original ones. A row count is
// absent when the JSON had no such key (the rows then decode as nil).
type header struct {
	Format           string `json:"format"`
	Vocab            int    `json:"vocab"` // values per row
	LogitsRows       *int   `json:"logits_rows,omitempty"`
	GreedyLogitsRows *int   `json:"greedy_logits_rows,omitempty"`
	Positions        []int  `json:"positions,omitempty"`
	Encoding         string `json:"encoding"`
	Compression      string `json:"compression"`
	SHA256           string `json:"sha256"`
}

// rowKeys are the JSON keys stored as rows; formatKeys are header's.
var (
	rowKeys    = []string{"logits", "greedy_logits"}
	formatKeys = []string{"format", "vocab", "logits_rows", "greedy_logits_rows", "positions", "encoding", "compression", "sha256"}
)

// DecodeJSON decodes a golden in the original JSON form, exactly as Read
// did before the .golden format: encoding/json into File.
func DecodeJSON(b []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// rawField is one top-level key of a JSON object and its compacted value.
type rawField struct {
	Key   string
	Value []byte
}

// objectFields lists the top-level keys of a JSON object in order.
func objectFields(b []byte) ([]rawField, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	var out []rawField
	seen := map[string]bool{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		if seen[key] {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil, fmt.Errorf("key %q: %v", key, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return nil, err
		}
		out = append(out, rawField{key, c.Bytes()})
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return out, nil
}

// Encode converts a JSON golden into the .golden format. every > 1 thins
// the prompt rows: it keeps the logits of positions every-1, 2*every-1, …
// and of the last position (the long goldens' rows differ little from one
// position to the next; every greedy row is kept).
func Encode(jsonData []byte, every int) ([]byte, error) {
	fields, err := objectFields(jsonData)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(fields, func(f rawField) bool { return f.Key == "logits" }) {
		return nil, errors.New(`no "logits": not a golden file`)
	}
	f, err := DecodeJSON(jsonData)
	if err != nil {
		return nil, err
	}
	h := header{Format: formatName, Encoding: rowEncoding, Compression: compression}
	if every > 1 && len(f.Logits) > 0 {
		var kept [][]float32
		for p := range f.Logits {
			if (p+1)%every == 0 || p == len(f.Logits)-1 {
				h.Positions = append(h.Positions, p)
				kept = append(kept, f.Logits[p])
			}
		}
		f.Logits = kept
	}
	if f.Logits != nil {
		h.LogitsRows = new(len(f.Logits))
	}
	if f.GreedyLogits != nil {
		h.GreedyLogitsRows = new(len(f.GreedyLogits))
	}
	rows := append(slices.Clip(f.Logits), f.GreedyLogits...)
	if len(rows) > 0 {
		h.Vocab = len(rows[0])
	}
	plain := make([]byte, 0, 4*h.Vocab*len(rows))
	for i, r := range rows {
		if len(r) != h.Vocab {
			return nil, fmt.Errorf("row %d has %d values, row 0 has %d", i, len(r), h.Vocab)
		}
		for _, v := range r {
			plain = binary.LittleEndian.AppendUint32(plain, math.Float32bits(v))
		}
	}
	sum := sha256.Sum256(plain)
	h.SHA256 = hex.EncodeToString(sum[:])

	var out bytes.Buffer
	out.WriteByte('{')
	for _, fl := range fields {
		if slices.Contains(rowKeys, fl.Key) {
			continue
		}
		if slices.Contains(formatKeys, fl.Key) {
			return nil, fmt.Errorf("key %q is reserved for the .golden header", fl.Key)
		}
		k, _ := json.Marshal(fl.Key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(fl.Value)
		out.WriteByte(',')
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	out.Write(hb[1:]) // header's keys, with its closing brace
	out.WriteByte('\n')

	body, err := packed.Pack(plain)
	if err != nil {
		return nil, err
	}
	out.Write(body)
	return out.Bytes(), nil
}

// Decode parses a .golden file.
func Decode(data []byte) (*File, error) {
	line, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil, errors.New("no header line")
	}
	fields, err := objectFields(line)
	if err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	for _, fl := range fields {
		if slices.Contains(rowKeys, fl.Key) {
			return nil, fmt.Errorf("header: key %q belongs in the rows", fl.Key)
		}
	}
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	if h.Format != formatName || h.Encoding != rowEncoding || h.Compression != compression {
		return nil, fmt.Errorf("header: format %q, encoding %q, compression %q; this reader knows %q, %q, %q",
			h.Format, h.Encoding, h.Compression, formatName, rowEncoding, compression)
	}
	var f File
	if err := json.Unmarshal(line, &f); err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	if err := checkPositions(h, len(f.Tokens)); err != nil {
		return nil, err
	}
	nl, ng := 0, 0
	if h.LogitsRows != nil {
		nl = *h.LogitsRows
	}
	if h.GreedyLogitsRows != nil {
		ng = *h.GreedyLogitsRows
	}
	const maxValues = 1 << 28
	if h.Vocab < 0 || nl < 0 || ng < 0 || (h.Vocab > 0 && (nl+ng) > maxValues/h.Vocab) {
		return nil, fmt.Errorf("header: bad shape: vocab %d, logits_rows %d, greedy_logits_rows %d", h.Vocab, nl, ng)
	}
	want := 4 * h.Vocab * (nl + ng)

	plain, err := packed.Unpack(body, want)
	if err != nil {
		return nil, fmt.Errorf("rows: the header's %d+%d rows of %d values need %d bytes: %v", nl, ng, h.Vocab, want, err)
	}
	if sum := sha256.Sum256(plain); hex.EncodeToString(sum[:]) != h.SHA256 {
		return nil, fmt.Errorf("rows: sha256 %x, header says %s: the file is corrupt", sum, h.SHA256)
	}

	vals := make([]float32, len(plain)/4)
	for i := range vals {
		vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(plain[4*i:]))
	}
	take := func(n int) [][]float32 {
		rows := make([][]float32, n)
		for i := range rows {
			rows[i], vals = vals[:h.Vocab:h.Vocab], vals[h.Vocab:]
		}
		return rows
	}
	if h.LogitsRows != nil {
		f.Logits = take(nl)
	}
	if h.GreedyLogitsRows != nil {
		f.GreedyLogits = take(ng)
	}
	return &f, nil
}

// checkPositions: a thinned file's positions are increasing prompt
// positions, one per logits row.
func checkPositions(h header, tokens int) error {
	if h.Positions == nil {
		return nil
	}
	if h.LogitsRows == nil || len(h.Positions) != *h.LogitsRows {
		return fmt.Errorf("header: %d positions for logits_rows %v", len(h.Positions), h.LogitsRows)
	}
	for i, p := range h.Positions {
		if p < 0 || p >= tokens || (i > 0 && p <= h.Positions[i-1]) {
			return fmt.Errorf("header: positions[%d] = %d: want increasing positions below %d", i, p, tokens)
		}
	}
	return nil
}

// Verify checks that golden (a .golden file) holds exactly jsonData (its
// JSON original): every header field with the JSON's value as written,
// every File field equal, and every row value with the same float32 bits
// (for a thinned file, the JSON's rows at its positions).
func Verify(jsonData, golden []byte) error {
	want, err := DecodeJSON(jsonData)
	if err != nil {
		return fmt.Errorf("JSON: %v", err)
	}
	got, err := Decode(golden)
	if err != nil {
		return err
	}
	wf, err := objectFields(jsonData)
	if err != nil {
		return fmt.Errorf("JSON: %v", err)
	}
	line, _, _ := bytes.Cut(golden, []byte("\n"))
	gf, err := objectFields(line)
	if err != nil {
		return fmt.Errorf("header: %v", err)
	}
	wf = slices.DeleteFunc(wf, func(f rawField) bool { return slices.Contains(rowKeys, f.Key) })
	gf = slices.DeleteFunc(gf, func(f rawField) bool { return slices.Contains(formatKeys, f.Key) })
	if !slices.EqualFunc(wf, gf, func(a, b rawField) bool { return a.Key == b.Key && bytes.Equal(a.Value, b.Value) }) {
		return fmt.Errorf("header fields differ from the JSON's:\n  header %s\n  JSON   %s", fieldList(gf), fieldList(wf))
	}
	switch {
	case got.Model != want.Model || got.Kind != want.Kind:
		return fmt.Errorf("model %q kind %q, JSON has %q %q", got.Model, got.Kind, want.Model, want.Kind)
	case math.Float64bits(got.Tolerance) != math.Float64bits(want.Tolerance):
		return fmt.Errorf("tolerance %v, JSON has %v", got.Tolerance, want.Tolerance)
	case !sameInts(got.Tokens, want.Tokens):
		return fmt.Errorf("tokens %v, JSON has %v", got.Tokens, want.Tokens)
	case !sameInts(got.Greedy, want.Greedy):
		return fmt.Errorf("greedy %v, JSON has %v", got.Greedy, want.Greedy)
	}
	wantLogits := want.Logits
	if got.Positions != nil {
		wantLogits = make([][]float32, len(got.Positions))
		for i, p := range got.Positions {
			if p >= len(want.Logits) {
				return fmt.Errorf("positions[%d] = %d: the JSON has %d logits rows", i, p, len(want.Logits))
			}
			wantLogits[i] = want.Logits[p]
		}
	}
	if err := sameRows("logits", got.Logits, wantLogits); err != nil {
		return err
	}
	return sameRows("greedy_logits", got.GreedyLogits, want.GreedyLogits)
}

func fieldList(fs []rawField) string {
	var b bytes.Buffer
	for _, f := range fs {
		fmt.Fprintf(&b, "%s=%s ", f.Key, f.Value)
	}
	return b.String()
}

func sameInts(a, b []int32) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

func sameRows(name string, got, want [][]float32) error {
	if (got == nil) != (want == nil) || len(got) != len(want) {
		return fmt.Errorf("%s: %d rows (nil %v), JSON has %d (nil %v)", name, len(got), got == nil, len(want), want == nil)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			return fmt.Errorf("%s[%d]: %d values, JSON has %d", name, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if g, w := math.Float32bits(got[i][j]), math.Float32bits(want[i][j]); g != w {
				return fmt.Errorf("%s[%d][%d]: bits %08x, JSON has %08x", name, i, j, g, w)
			}
		}
	}
	return nil
}
