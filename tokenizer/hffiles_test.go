package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFromHFFiles: the files of a folder, read by ReadHFDir and built by
// FromHFFiles, make the tokenizer FromHFDir makes, with
// generation_config.json's EOS ids and chat_template.jinja's template; a
// template in tokenizer_config.json wins over the file. Errors name the
// files under dir.
func TestFromHFFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"tokenizer.json":         string(hfJSON(`"a b"`, `{"type":"ByteLevel"}`)),
		"tokenizer_config.json":  `{"eos_token":"ab"}`,
		"generation_config.json": `{"eos_token_id":[2,1]}`,
		"chat_template.jinja":    "{{ messages }}",
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := ReadHFDir(filepath.Join(dir, "tokenizer.json"))
	if err != nil || len(data) != len(HFFiles) {
		t.Fatalf("ReadHFDir: %d files, %v", len(data), err)
	}
	got, err := FromHFFiles("", data)
	if err != nil {
		t.Fatal(err)
	}
	want, err := FromHFDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.EOS(), []int32{2, 1}) || !slices.Equal(want.EOS(), got.EOS()) {
		t.Errorf("EOS %v, FromHFDir %v, want [2 1]", got.EOS(), want.EOS())
	}
	if got.ChatTemplate() != "{{ messages }}" || got.chatTemplateFrom != "chat_template.jinja" || want.ChatTemplate() != got.ChatTemplate() {
		t.Errorf("template %q from %q", got.ChatTemplate(), got.chatTemplateFrom)
	}
	data["tokenizer_config.json"] = []byte(`{"chat_template":"x"}`)
	if tk, err := FromHFFiles("", data); err != nil || tk.ChatTemplate() != "x" {
		t.Errorf("config template: %q, %v", tk.ChatTemplate(), err)
	}
	data["generation_config.json"] = []byte(`{"eos_token_id":7}`)
	_, err = FromHFFiles(dir, data)
	wantFormatError(t, "eos id out of range", err, "eos_token_id", nil)
	if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "generation_config.json")) {
		t.Errorf("error %v does not name the file in %s", err, dir)
	}
	delete(data, "tokenizer.json")
	if _, err := FromHFFiles("", data); err == nil {
		t.Error("no tokenizer.json: no error")
	}
}
