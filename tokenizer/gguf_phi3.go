package tokenizer

import (
	"strings"

	"wasmllm/loader"
)

// phi3RStrip applies llama.cpp's rule for Phi-3 vocabularies to a GGUF's
// added tokens: when general.name, lower-cased, contains "phi-3" or
// "phi3", every special and user-defined token swallows the whitespace on
// its right (LLAMA_TOKEN_ATTR_RSTRIP; Hugging Face's Phi-3 tokenizer.json
// marks its chat tokens rstrip too), except <unk>, <s> and <|endoftext|>.
// The GGUF holds no such attribute: llama.cpp keys it on the name, and so
// does this. (Phi-4-mini's name has no "phi3": its tokens keep the
// whitespace.)
func phi3RStrip(g *loader.GGUF, added []addedToken) {
	name, _ := g.Meta["general.name"].(string)
	name = strings.ToLower(name)
	if !strings.Contains(name, "phi-3") && !strings.Contains(name, "phi3") {
		return
	}
	for i := range added {
		switch added[i].text {
		case "<unk>", "<s>", "<|endoftext|>":
		default:
			added[i].rstrip = true
		}
	}
}
