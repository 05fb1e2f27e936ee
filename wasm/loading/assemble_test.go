package loading_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wasmllm/api"
	"wasmllm/cpu"
	"wasmllm/engine"
	"wasmllm/internal/testkit/golden"
	"wasmllm/loader"
	"wasmllm/manifest"
	"wasmllm/model"
	"wasmllm/sampler"
	"wasmllm/source"
	"wasmllm/wasm/loading"
)

// bundled is the committed stories260K folder (cmd/convert's output for
// testdata/models/stories260K.gguf).
const bundled = "../../models/stories260K"

func readManifest(t *testing.T, dir string) *manifest.Manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, manifest.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readShard(t *testing.T, dir string, m *manifest.Manifest, i int) []byte {
	t.Helper()
	shard, err := os.ReadFile(filepath.Join(dir, m.Shards[i].File))
	if err != nil {
		t.Fatal(err)
	}
	return shard
}

// TestResidentUpload: tensors taken by Assembler.Upload leave no bytes in
// the weights, and a model built from them generates the golden story.
func TestResidentUpload(t *testing.T) {
	dir := bundled
	m := readManifest(t, dir)
	b := cpu.New(1)
	resident := map[string]model.Tensor{}
	a := loading.NewAssembler(m, dir)
	var shard []byte
	a.Upload = func(ti *manifest.TensorInfo) (model.Tensor, error) {
		d, _ := ti.Type()
		x, err := b.Upload(&loader.Tensor{Name: ti.Name, DType: d, Shape: ti.Shape, Data: bytes.Clone(shard[ti.Offset : ti.Offset+ti.Bytes])})
		resident[ti.Name] = x
		return x, err
	}
	for i := range m.Shards {
		shard = readShard(t, dir, m, i)
		if err := a.AddShard(i, int64(len(shard)), func(dst []byte, off int64) { copy(dst, shard[off:]) }); err != nil {
			t.Fatal(err)
		}
	}
	w, err := a.Weights()
	if err != nil {
		t.Fatal(err)
	}
	if len(resident) != len(m.Tensors) {
		t.Fatalf("%d of %d tensors resident", len(resident), len(m.Tensors))
	}
	for name := range resident {
		if w.Tensors[name].Data != nil {
			t.Errorf("resident %s kept its bytes in Go", name)
		}
	}
	if _, ok := resident[model.NameRopeFreqs]; ok {
		t.Error("rope_freqs went resident")
	}
	checkStory(t, b, w)
}

// checkStory builds stories260K from w on b and checks that it tells the
// golden story.
func checkStory(t *testing.T, b model.Backend, w *model.Weights) {
	t.Helper()
	mdl, err := model.Build(b, w)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(mdl, nil, engine.Options{Context: 256})
	if err != nil {
		t.Fatal(err)
	}
	p := sampler.DefaultParams()
	p.Temperature, p.MaxTokens = 0, 64
	res, err := e.Generate(context.Background(), &engine.Request{Tokens: []int32{1, 403, 407, 261, 378}, Params: p}, func(engine.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := golden.Read(t, "../../testdata/golden/stories260K.story.golden").Greedy
	if len(res.Tokens) < len(want) || !slices.Equal(res.Tokens[:len(want)], want) {
		t.Fatalf("tokens %v\nwant %v", res.Tokens, want)
	}
}

// TestBuildTokenizerChecksum: tokenizer bytes that do not match the
// manifest's sha256 are refused with code integrity, naming the file.
func TestBuildTokenizerChecksum(t *testing.T) {
	m := readManifest(t, bundled)
	tok, err := os.ReadFile(filepath.Join(bundled, "tokenizer.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loading.BuildTokenizer(m, map[string][]byte{"tokenizer.gguf": tok}); err != nil {
		t.Fatalf("the real file: %v", err)
	}
	tok[100] ^= 1
	_, err = loading.BuildTokenizer(m, map[string][]byte{"tokenizer.gguf": tok})
	if e := api.Classify(err); e.Code != api.CodeIntegrity || !strings.Contains(e.Message, "tokenizer.gguf") {
		t.Errorf("got %v (%s), want integrity naming tokenizer.gguf", err, e.Code)
	}
}

// TestBuildTokenizerNative: the worker's tokenizer, built from the fetched
// files, is the one the native engine loads from the folder.
func TestBuildTokenizerNative(t *testing.T) {
	m := readManifest(t, bundled)
	spec, err := loading.TokenizerFiles(m)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, n := range spec.Names() {
		if files[n], err = os.ReadFile(filepath.Join(bundled, n)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := loading.BuildTokenizer(m, files)
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := source.Load(bundled, "")
	if err != nil {
		t.Fatal(err)
	}
	text := "Once upon a time, there was a cat."
	g, err1 := got.Encode(text, true)
	w, err2 := want.Encode(text, true)
	if err1 != nil || err2 != nil || !slices.Equal(g, w) || got.VocabSize() != want.VocabSize() ||
		got.BOS() != want.BOS() || !slices.Equal(got.EOS(), want.EOS()) || got.ChatTemplate() != want.ChatTemplate() {
		t.Errorf("worker tokenizer encodes %v (%v), native %v (%v)", g, err1, w, err2)
	}
}

// TestLoadingErrorCodes: each error of the worker's loading gets the code
// (and details) the page is told.
func TestLoadingErrorCodes(t *testing.T) {
	m := readManifest(t, bundled)
	shard := readShard(t, bundled, m, 0)
	read := func(dst []byte, off int64) { copy(dst, shard[off:]) }
	check := func(what string, err error, want string) *api.Error {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error, want %s", what, want)
			return &api.Error{}
		}
		e := api.Classify(err)
		if e.Code != want {
			t.Errorf("%s: %v is %s, want %s", what, err, e.Code, want)
		}
		return e
	}

	a := loading.NewAssembler(m, bundled)
	e := check("short shard", a.AddShard(0, int64(len(shard))-1, read), api.CodeIntegrity)
	if e.Details["shard"] != m.Shards[0].File || !strings.Contains(e.Message, m.Shards[0].File) {
		t.Errorf("short shard: %q, details %v", e.Message, e.Details)
	}
	check("shard index", a.AddShard(len(m.Shards), 0, read), api.CodeInternal)
	_, err := a.Weights()
	check("weights before the shards", err, api.CodeInternal)

	bad := *m
	bad.Config.Vocab++ // the embeddings no longer match
	a = loading.NewAssembler(&bad, bundled)
	if err := a.AddShard(0, int64(len(shard)), read); err != nil {
		t.Fatal(err)
	}
	_, err = a.Weights()
	check("a tensor of the wrong shape", err, api.CodeBadModel)

	tok, err := os.ReadFile(filepath.Join(bundled, "tokenizer.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = loading.BuildTokenizer(m, map[string][]byte{})
	check("a tokenizer file not fetched", err, api.CodeInternal)
	small := *m
	small.Config.Vocab = 100
	_, err = loading.BuildTokenizer(&small, map[string][]byte{"tokenizer.gguf": tok})
	if e := check("more tokens than the model", err, api.CodeBadModel); e.Message != "tokenizer: 512 tokens, the model has 100" {
		t.Errorf("more tokens than the model: %q", e.Message)
	}
	spec := *m
	spec.Tokenizer = []byte(`{"format":"sentencepiece","file":"t.model","sha256":{}}`)
	_, err = loading.BuildTokenizer(&spec, nil)
	check("an unknown tokenizer format", err, api.CodeBadModel)
	_, err = loading.TokenizerFiles(&spec)
	check("an unknown tokenizer format", err, api.CodeBadModel)
}

// TestAssembleParts: the bundled model rewritten in shards of 4 KiB (its
// larger tensors in parts over several), its shards delivered last to
// first, assembles into the same bytes: the tensors in parts that Upload
// takes come from the Stager whole, the others land in Go, no staging is
// left behind, and the model generates the golden story.
func TestAssembleParts(t *testing.T) {
	src, err := manifest.Open(bundled)
	if err != nil {
		t.Fatal(err)
	}
	orig := src.Manifest()
	dir := filepath.Join(t.TempDir(), "parts")
	w, err := manifest.NewWriter(dir, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, ti := range orig.Tensors {
		x, err := src.Tensor(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		want[ti.Name] = x.Data
		if err := w.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	m := &manifest.Manifest{Name: orig.Name, Arch: orig.Arch, Config: orig.Config, Tokenizer: orig.Tokenizer}
	if err := w.Close(m); err != nil {
		t.Fatal(err)
	}
	inParts := 0
	for _, ti := range m.Tensors {
		if len(ti.Parts) > 1 {
			inParts++
		}
	}
	if inParts < 2 || m.FormatVersion != manifest.FormatVersionParts {
		t.Fatalf("%d tensors in parts, format version %d", inParts, m.FormatVersion)
	}

	b := cpu.New(1)
	a := loading.NewAssembler(m, dir)
	stager := loading.MemStager{}
	a.Stager = stager
	uploaded := map[string][]byte{}
	var shard []byte
	a.Upload = func(ti *manifest.TensorInfo) (model.Tensor, error) {
		if len(ti.Parts) == 0 || ti.Name == model.NameEmbed {
			return nil, nil // into Go
		}
		data := bytes.Clone(stager[ti.Name])
		if int64(len(data)) != ti.Bytes {
			t.Fatalf("Upload of %s with %d staged bytes, want %d", ti.Name, len(data), ti.Bytes)
		}
		uploaded[ti.Name] = data
		d, _ := ti.Type()
		return b.Upload(&loader.Tensor{Name: ti.Name, DType: d, Shape: ti.Shape, Data: data})
	}
	for i := len(m.Shards) - 1; i >= 0; i-- {
		shard = readShard(t, dir, m, i)
		if err := a.AddShard(i, int64(len(shard)), func(dst []byte, off int64) { copy(dst, shard[off:]) }); err != nil {
			t.Fatal(err)
		}
	}
	wts, err := a.Weights()
	if err != nil {
		t.Fatal(err)
	}
	if len(stager) != 0 || len(uploaded) == 0 {
		t.Fatalf("%d tensors left staged, %d uploaded", len(stager), len(uploaded))
	}
	for name, data := range want {
		got := wts.Tensors[name].Data
		if up, ok := uploaded[name]; ok {
			got = up
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("tensor %s: %d bytes differ from the original's %d", name, len(got), len(data))
		}
	}
	checkStory(t, b, wts)
}
