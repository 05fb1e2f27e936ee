package openai

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"wasmllm/internal/testkit/browsertest"
	"wasmllm/internal/testkit/embedgolden"
)

const embedModel = "tiny-bert-cls-q4_0"

func newEmbedEngine(t *testing.T) (*testEngine, *embedgolden.File) {
	t.Helper()
	dir := browsertest.RepoFile("testdata/embed")
	te := newTestEngine(t, EngineConfig{Queue: 2, Embedders: map[string]string{
		embedModel:              filepath.Join(dir, "models", embedModel+".gguf"),
		"tiny-qwen3-embed-q4_0": filepath.Join(dir, "models", "tiny-qwen3-embed-q4_0.gguf"),
	}}, false)
	g, err := embedgolden.Read(filepath.Join(dir, "golden", embedModel+".json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return te, g
}

type embeddingsBody struct {
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object         string `json:"object"`
		Index          int    `json:"index"`
		Embedding      any    `json:"embedding"`
		EncodingFormat string `json:"encoding_format"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func floats(t *testing.T, v any) []float32 {
	t.Helper()
	switch x := v.(type) {
	case []any:
		out := make([]float32, len(x))
		for i, f := range x {
			out[i] = float32(f.(float64))
		}
		return out
	case string:
		b, err := base64.StdEncoding.DecodeString(x)
		if err != nil || len(b)%4 != 0 {
			t.Fatalf("base64 embedding: %v (%d bytes)", err, len(b))
		}
		out := make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return out
	}
	t.Fatalf("embedding of type %T", v)
	return nil
}

// TestEmbeddings: /v1/embeddings in OpenAI's shape, float and base64, a
// batch of strings and of token-id arrays, against llama.cpp's normalised
// vectors; usage counts the tokens with specials.
func TestEmbeddings(t *testing.T) {
	te, g := newEmbedEngine(t)
	texts := []string{g.InputTexts[3], g.InputTexts[4], g.InputTexts[5]}
	tokens := len(g.Inputs[3]) + len(g.Inputs[4]) + len(g.Inputs[5])
	for _, format := range []string{"float", "base64"} {
		var body embeddingsBody
		decode(t, te.post(t, "/v1/embeddings", map[string]any{"model": embedModel, "input": texts, "encoding_format": format}), http.StatusOK, &body)
		if body.Object != "list" || body.Model != embedModel || len(body.Data) != 3 || body.Usage.PromptTokens != tokens || body.Usage.TotalTokens != tokens {
			t.Fatalf("%s: %+v", format, body)
		}
		for i, d := range body.Data {
			if d.Object != "embedding" || d.Index != i {
				t.Errorf("%s: item %d: object %q index %d", format, i, d.Object, d.Index)
			}
			if format == "base64" && d.EncodingFormat != "base64" {
				t.Errorf("base64 item %d: encoding_format %q", i, d.EncodingFormat)
			}
			if e := embedgolden.RelErr(floats(t, d.Embedding), g.EmbeddingsNormalized[3+i]); e > *g.Tolerance {
				t.Errorf("%s: item %d: rel err %.3g", format, i, e)
			}
		}
	}
	// token ids, as given (no specials added), one array and several
	var one embeddingsBody
	decode(t, te.post(t, "/v1/embeddings", map[string]any{"model": embedModel, "input": g.Inputs[0]}), http.StatusOK, &one)
	if len(one.Data) != 1 || one.Usage.PromptTokens != len(g.Inputs[0]) {
		t.Fatalf("one: %+v", one)
	}
	if e := embedgolden.RelErr(floats(t, one.Data[0].Embedding), g.EmbeddingsNormalized[0]); e > *g.Tolerance {
		t.Errorf("token ids: rel err %.3g", e)
	}
	var many embeddingsBody
	decode(t, te.post(t, "/v1/embeddings", map[string]any{"model": embedModel, "input": [][]int32{g.Inputs[1], g.Inputs[2]}}), http.StatusOK, &many)
	for i, d := range many.Data {
		if e := embedgolden.RelErr(floats(t, d.Embedding), g.EmbeddingsNormalized[1+i]); e > *g.Tolerance {
			t.Errorf("token arrays: item %d: rel err %.3g", i, e)
		}
	}
	// dimensions: the first N values, renormalised
	var dims embeddingsBody
	decode(t, te.post(t, "/v1/embeddings", map[string]any{"model": embedModel, "input": texts[0], "dimensions": 16}), http.StatusOK, &dims)
	v := floats(t, dims.Data[0].Embedding)
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if len(v) != 16 || math.Abs(sum-1) > 1e-5 {
		t.Errorf("dimensions 16: %d values, norm² %v", len(v), sum)
	}
	// the Qwen3-Embedding model: last-token pooling, <|endoftext|> appended
	q, err := embedgolden.Read(browsertest.RepoFile("testdata/embed/golden/tiny-qwen3-embed-q4_0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var qb embeddingsBody
	decode(t, te.post(t, "/v1/embeddings", map[string]any{"model": "tiny-qwen3-embed-q4_0", "input": q.InputTexts[1]}), http.StatusOK, &qb)
	if e := embedgolden.RelErr(floats(t, qb.Data[0].Embedding), q.EmbeddingsNormalized[1]); e > *q.Tolerance || qb.Usage.PromptTokens != len(q.Inputs[1]) {
		t.Errorf("qwen3-embed: rel err %.3g, %d tokens", e, qb.Usage.PromptTokens)
	}
}

// TestEmbeddingsErrors: OpenAI's error shapes, each naming the parameter;
// a too-long input is refused unless truncation is asked for.
func TestEmbeddingsErrors(t *testing.T) {
	te, _ := newEmbedEngine(t)
	long := strings.Repeat("the sun ", 200)
	for _, c := range []struct {
		body   map[string]any
		status int
		param  string
		says   string
	}{
		{map[string]any{"model": embedModel}, 400, "input", "required"},
		{map[string]any{"model": embedModel, "input": []string{}}, 400, "input", "empty"},
		{map[string]any{"model": embedModel, "input": []any{"a", 3.5}}, 400, "input", "item 1"},
		{map[string]any{"model": embedModel, "input": "a", "encoding_format": "hex"}, 400, "encoding_format", "hex"},
		{map[string]any{"model": embedModel, "input": "a", "dimensions": 0}, 400, "dimensions", ""},
		{map[string]any{"model": embedModel, "input": "a", "dimensions": 4096}, 400, "dimensions", "4096"},
		{map[string]any{"model": embedModel, "input": []any{"short", long}}, 400, "input", "input 1 has"},
		{map[string]any{"model": embedModel, "input": [][]int{{101, 99999}}}, 400, "input", "outside the vocabulary"},
		{map[string]any{"model": "nope", "input": "a"}, 404, "model", "nope"},
		{map[string]any{"input": "a"}, 400, "model", "required"},
	} {
		var body ErrorBody
		decode(t, te.post(t, "/v1/embeddings", c.body), c.status, &body)
		if body.Error.Param == nil || *body.Error.Param != c.param || !strings.Contains(body.Error.Message, c.says) || body.Error.Code != c.status {
			t.Errorf("%v: %+v", c.body, body.Error)
		}
	}
	var ok embeddingsBody
	decode(t, te.post(t, "/v1/embeddings", map[string]any{"model": embedModel, "input": long, "truncate_prompt_tokens": -1}), http.StatusOK, &ok)
	if ok.Usage.PromptTokens != 128 {
		t.Errorf("truncated: %d tokens, want 128", ok.Usage.PromptTokens)
	}
	many := make([]string, 2049)
	var tooMany ErrorBody
	decode(t, te.post(t, "/v1/embeddings", map[string]any{"model": embedModel, "input": many}), 400, &tooMany)
}

// TestEmbeddingModelsListed: /v1/models lists the embedding models after
// the folders, with max_model_len once loaded; /v1/models/NAME finds one.
func TestEmbeddingModelsListed(t *testing.T) {
	te, _ := newEmbedEngine(t)
	get := func(path string) *http.Response {
		resp, err := http.Get(te.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var list ModelList
	decode(t, get("/v1/models"), http.StatusOK, &list)
	ids := []string{}
	for _, c := range list.Data {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != textModel+","+embedModel+",tiny-qwen3-embed-q4_0" {
		t.Errorf("ids %v", ids)
	}
	var ok embeddingsBody
	decode(t, te.post(t, "/v1/embeddings", map[string]any{"model": embedModel, "input": "a"}), http.StatusOK, &ok)
	var card ModelCard
	decode(t, get("/v1/models/"+embedModel), http.StatusOK, &card)
	if card.ID != embedModel || card.MaxModelLen != 128 {
		t.Errorf("card %+v", card)
	}
}
