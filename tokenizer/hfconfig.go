package tokenizer

import (
	"encoding/json"
	"errors"
	"path/filepath"
)

// hfConfig is the part of tokenizer_config.json this package reads.
type hfConfig struct {
	BOSToken     json.RawMessage `json:"bos_token"`
	EOSToken     json.RawMessage `json:"eos_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
	CleanUp      *bool           `json:"clean_up_tokenization_spaces"`
}

// tokenString reads a special-token entry of tokenizer_config.json: a
// string, an AddedToken object with "content", or null.
func tokenString(raw json.RawMessage) (string, bool, error) {
	if isNull(raw) {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", false, errors.New("neither a string nor an object with content")
	}
	return *obj.Content, true, nil
}

func (t *Tokenizer) hfConfig(file string, data []byte) error {
	var c hfConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return jsonErr(file, err)
	}
	bos, ok, err := tokenString(c.BOSToken)
	if err != nil {
		return formatErr(file, "bos_token", err)
	}
	if ok {
		t.bosToken, t.hasBOSToken = bos, true
		if id, found := t.TokenID(bos); found {
			t.bos = id
		}
	}
	eos, ok, err := tokenString(c.EOSToken)
	if err != nil {
		return formatErr(file, "eos_token", err)
	}
	if ok {
		t.eosToken, t.hasEOSToken = eos, true
		if id, found := t.TokenID(eos); found {
			t.eos = append(t.eos, id)
		}
	}
	// transformers defaults clean_up_tokenization_spaces to false since
	// v4.45; older configs spell it out.
	t.cleanUp = c.CleanUp != nil && *c.CleanUp
	tmpl, err := chatTemplateField(c.ChatTemplate)
	if err != nil {
		return formatErr(file, "chat_template", err)
	}
	t.chatTemplate = tmpl
	if tmpl != "" {
		t.chatTemplateFrom = filepath.Base(file) + " chat_template"
	}
	return nil
}

// chatTemplateField reads chat_template: a string, or a list of
// {"name", "template"} of which "default" is used.
func chatTemplateField(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", errors.New("neither a string nor a list of named templates")
	}
	for _, e := range list {
		if e.Name == "default" {
			return e.Template, nil
		}
	}
	if len(list) > 0 {
		return list[0].Template, nil
	}
	return "", nil
}

// addGenerationEOS adds generation_config.json's eos_token_id (a number or
// a list) to the end-of-generation ids.
func (t *Tokenizer) addGenerationEOS(file string, data []byte) error {
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return jsonErr(file, err)
	}
	if isNull(g.EOS) {
		return nil
	}
	var ids []int64
	var one int64
	if err := json.Unmarshal(g.EOS, &one); err == nil {
		ids = []int64{one}
	} else if err := json.Unmarshal(g.EOS, &ids); err != nil {
		return formatErr(file, "eos_token_id", errors.New("neither a number nor a list of numbers"))
	}
	for _, id := range ids {
		if id < 0 || id >= int64(len(t.texts)) {
			return formatErrf(file, "eos_token_id", "id %d out of range", id)
		}
		t.eos = append(t.eos, int32(id))
	}
	t.eos = t.withEOGTokens(t.eos)
	return nil
}

// eogNames are token texts that end generation in the models llama.cpp
// knows; like llama.cpp, any special token with one of these texts is an
// end-of-generation id.
var eogNames = []string{
	"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
	"<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "<|return|>",
	"<|call|>", "<end_of_utterance>",
	"<eos>", "<turn|>", // Gemma's: its generation_config's eos_token_id is [<eos>, <end_of_turn>]
}

// withEOGTokens returns eos (primary first, deduplicated) followed by every
// special token named in eogNames.
func (t *Tokenizer) withEOGTokens(eos []int32) []int32 {
	out := make([]int32, 0, len(eos)+4)
	seen := map[int32]bool{}
	add := func(id int32) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, id := range eos {
		add(id)
	}
	for _, name := range eogNames {
		for _, tok := range t.addedTokens() {
			if tok.text == name && tok.special {
				add(tok.id)
			}
		}
	}
	return out
}
