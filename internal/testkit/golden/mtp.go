package golden

// The MTP golden (testdata/qwen35/golden/*.mtpgolden): the shared folder's
// tiny-qwen35-mtp-f32.mtp.json, whose rows sit in objects ("main", "mtp",
// "draft".steps) rather than in the .golden format's two arrays. Line 1 is
// the JSON with every row array left out (MTPFile's fields, omitted when
// empty) plus mtpHeader's keys; the rest is the rows, packed as the
// .golden format packs them (internal/testkit/packed), in the order
// main.logits, main.h_nextn, mtp.logits, mtp.h_nextn, then each draft
// step's logits and h_nextn. "sha256" is that of the rows' plain bytes.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"testing"

	"wasmllm/internal/testkit/packed"
)

const mtpFormat = "wasmllm-mtp-golden/1"

// MTPFile is the MTP golden: the trunk's logits and output_norm-ed hidden
// rows over the prompt, the MTP block's over the prompt (row k: token k
// with the trunk's hidden k-1), and a greedy draft chain.
type MTPFile struct {
	Model         string   `json:"model"`
	Reference     string   `json:"reference"`
	Kind          string   `json:"kind"`
	Tolerance     float64  `json:"tolerance"`
	ToleranceNote string   `json:"tolerance_note"`
	Tokens        []int32  `json:"tokens"`
	Main          MTPRows  `json:"main"`
	MTP           MTPRows  `json:"mtp"`
	Draft         MTPDraft `json:"draft"`
	Path          string   `json:"-"`
}

// MTPRows are logits and hidden rows, one per position.
type MTPRows struct {
	Note   string      `json:"note"`
	Logits [][]float32 `json:"logits,omitempty"`
	Hidden [][]float32 `json:"h_nextn,omitempty"`
}

// MTPDraft is the draft chain after the prompt: step 0 feeds IDLast with
// the trunk's last hidden row, step s the step s-1 draft with that step's
// hidden.
type MTPDraft struct {
	Note    string    `json:"note"`
	IDLast  int32     `json:"id_last"`
	Drafted []int32   `json:"drafted"`
	Steps   []MTPStep `json:"steps"`
}

// MTPStep is one draft step: its input token and position, and the MTP
// block's logits and hidden row.
type MTPStep struct {
	Token  int32     `json:"token"`
	Pos    int       `json:"pos"`
	Logits []float32 `json:"logits,omitempty"`
	Hidden []float32 `json:"h_nextn,omitempty"`
}

// mtpHeader is what the format adds to the header line.
type mtpHeader struct {
	Format string `json:"format"`
	Vocab  int    `json:"vocab"`
	Hidden int    `json:"hidden"`
	SHA256 string `json:"sha256"`
}

// rows lists f's row slices in the file's order, each with its length.
func (f *MTPFile) rows() []*[]float32 {
	var r []*[]float32
	for _, set := range []*MTPRows{&f.Main, &f.MTP} {
		for _, rows := range [][][]float32{set.Logits, set.Hidden} {
			for i := range rows {
				r = append(r, &rows[i])
			}
		}
	}
	for i := range f.Draft.Steps {
		r = append(r, &f.Draft.Steps[i].Logits, &f.Draft.Steps[i].Hidden)
	}
	return r
}

// EncodeMTP converts the JSON MTP golden into its compact form.
func EncodeMTP(jsonData []byte) ([]byte, error) {
	var f MTPFile
	if err := json.Unmarshal(jsonData, &f); err != nil {
		return nil, err
	}
	if len(f.Main.Logits) == 0 || len(f.Main.Hidden) == 0 || len(f.Draft.Steps) == 0 {
		return nil, errors.New("not an MTP golden: no main rows or draft steps")
	}
	h := mtpHeader{Format: mtpFormat, Vocab: len(f.Main.Logits[0]), Hidden: len(f.Main.Hidden[0])}
	var plain []byte
	for _, r := range f.rows() {
		for _, v := range *r {
			plain = binary.LittleEndian.AppendUint32(plain, math.Float32bits(v))
		}
	}
	sum := sha256.Sum256(plain)
	h.SHA256 = hex.EncodeToString(sum[:])
	// The header: f without its rows (empty, they are omitted), their
	// counts under "rows".
	shape := f
	shape.Main = MTPRows{Note: f.Main.Note, Logits: emptyRows(len(f.Main.Logits)), Hidden: emptyRows(len(f.Main.Hidden))}
	shape.MTP = MTPRows{Note: f.MTP.Note, Logits: emptyRows(len(f.MTP.Logits)), Hidden: emptyRows(len(f.MTP.Hidden))}
	shape.Draft.Steps = make([]MTPStep, len(f.Draft.Steps))
	for i, s := range f.Draft.Steps {
		shape.Draft.Steps[i] = MTPStep{Token: s.Token, Pos: s.Pos}
	}
	line, err := json.Marshal(struct {
		MTPFile
		Rows map[string]int `json:"rows"`
		mtpHeader
	}{shape, map[string]int{"main": len(f.Main.Logits), "mtp": len(f.MTP.Logits)}, h})
	if err != nil {
		return nil, err
	}
	body, err := packed.Pack(plain)
	if err != nil {
		return nil, err
	}
	return append(append(line, '\n'), body...), nil
}

func emptyRows(n int) [][]float32 { return make([][]float32, 0, n) }

// DecodeMTP parses the compact MTP golden.
func DecodeMTP(data []byte) (*MTPFile, error) {
	line, body, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil, errors.New("no header line")
	}
	var hdr struct {
		MTPFile
		Rows map[string]int `json:"rows"`
		mtpHeader
	}
	if err := json.Unmarshal(line, &hdr); err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	if hdr.Format != mtpFormat {
		return nil, fmt.Errorf("header: format %q, this reader knows %q", hdr.Format, mtpFormat)
	}
	f := hdr.MTPFile
	nMain, nMTP, V, D := hdr.Rows["main"], hdr.Rows["mtp"], hdr.Vocab, hdr.Hidden
	if nMain <= 0 || nMTP <= 0 || V <= 0 || D <= 0 || len(f.Draft.Steps) == 0 || (nMain+nMTP+len(f.Draft.Steps))*(V+D) > 1<<24 {
		return nil, fmt.Errorf("header: bad shape: rows %v, vocab %d, hidden %d, %d steps", hdr.Rows, V, D, len(f.Draft.Steps))
	}
	mk := func(n, w int) [][]float32 {
		r := make([][]float32, n)
		for i := range r {
			r[i] = make([]float32, w)
		}
		return r
	}
	f.Main.Logits, f.Main.Hidden = mk(nMain, V), mk(nMain, D)
	f.MTP.Logits, f.MTP.Hidden = mk(nMTP, V), mk(nMTP, D)
	for i := range f.Draft.Steps {
		f.Draft.Steps[i].Logits, f.Draft.Steps[i].Hidden = make([]float32, V), make([]float32, D)
	}
	want := 0
	for _, r := range f.rows() {
		want += 4 * len(*r)
	}
	plain, err := packed.Unpack(body, want)
	if err != nil {
		return nil, fmt.Errorf("rows: %v", err)
	}
	if sum := sha256.Sum256(plain); hex.EncodeToString(sum[:]) != hdr.SHA256 {
		return nil, fmt.Errorf("rows: sha256 %x, header says %s: the file is corrupt", sum, hdr.SHA256)
	}
	for _, r := range f.rows() {
		for i := range *r {
			(*r)[i] = math.Float32frombits(binary.LittleEndian.Uint32(plain))
			plain = plain[4:]
		}
	}
	return &f, nil
}

// VerifyMTP checks that the compact file decodes to what the JSON decodes
// to, every field and every float32 bit pattern.
func VerifyMTP(jsonData, compact []byte) error {
	var want MTPFile
	if err := json.Unmarshal(jsonData, &want); err != nil {
		return err
	}
	got, err := DecodeMTP(compact)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(*got, want) {
		return errors.New("the compact file decodes to other values than the JSON")
	}
	return nil
}

// ReadMTP reads a compact MTP golden (or the JSON original, by its .json
// extension), failing t on error.
func ReadMTP(t testing.TB, path string) *MTPFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f *MTPFile
	if bytes.HasSuffix([]byte(path), []byte(".json")) {
		f = new(MTPFile)
		err = json.Unmarshal(b, f)
	} else {
		f, err = DecodeMTP(b)
	}
	if err != nil {
		t.Fatalf("MTP golden %s: %v", path, err)
	}
	f.Path = path
	return f
}
