package sampler

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// BindFlags registers every parameter on fs under its vLLM name with dashes
// (-top-k, -min-p, -logit-bias, ...), with p's current values as defaults,
// so that parsing fs fills p. List flags take JSON or, for ids, a comma
// list; repeating a list flag appends:
//
//	-temperature 0.7 -top-k 40 -top-p 0.9 -min-p 0.05 -seed 7
//	-bad-words '["a b","c"]' -logit-bias '{"5":-100}' -allowed-token-ids 1,2,3
//	-logprobs 5 -logprobs-mode processed_logprobs -stop '["\n\n"]' -stop END
func (p *Params) BindFlags(fs *flag.FlagSet) {
	fs.Float64Var(&p.Temperature, "temperature", p.Temperature, "sampling temperature in [0, 2]; 0 is greedy")
	fs.Float64Var(&p.TopP, "top-p", p.TopP, "nucleus sampling: smallest set of tokens with this much probability, in (0, 1]")
	fs.IntVar(&p.TopK, "top-k", p.TopK, "sample among the k most likely tokens; 0 or -1 is off")
	fs.Float64Var(&p.MinP, "min-p", p.MinP, "drop tokens below this fraction of the best token's probability, in [0, 1]")
	fs.Func("seed", "random seed (default: a fresh one per run)", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return err
		}
		p.Seed = &n
		return nil
	})
	fs.Float64Var(&p.RepetitionPenalty, "repetition-penalty", p.RepetitionPenalty, "penalise prompt and output tokens: divide positive logits, multiply negative ones (> 0; 1 is off)")
	fs.Float64Var(&p.FrequencyPenalty, "frequency-penalty", p.FrequencyPenalty, "subtract this times each output token's count, in [-2, 2]")
	fs.Float64Var(&p.PresencePenalty, "presence-penalty", p.PresencePenalty, "subtract this from every token already output, in [-2, 2]")
	fs.Func("logit-bias", `JSON object of token id to bias in [-100, 100], e.g. '{"5":-100}'`, func(v string) error {
		var m map[int32]float64
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return err
		}
		if p.LogitBias == nil {
			p.LogitBias = map[int32]float64{}
		}
		for id, b := range m {
			p.LogitBias[id] = b
		}
		return nil
	})
	fs.Func("allowed-token-ids", "only these token ids may be sampled: 1,2,3 or a JSON list", func(v string) error {
		ids, err := parseIDs(v)
		p.AllowedTokenIDs = append(p.AllowedTokenIDs, ids...)
		if p.AllowedTokenIDs == nil {
			p.AllowedTokenIDs = []int32{}
		}
		return err
	})
	fs.Func("bad-words", `words never to generate: a JSON list '["a b","c"]' or one word`, func(v string) error {
		w, err := parseStrings(v)
		p.BadWords = append(p.BadWords, w...)
		return err
	})
	fs.IntVar(&p.MinTokens, "min-tokens", p.MinTokens, "generate at least this many tokens before EOS or a stop condition")
	fs.Func("logprobs", fmt.Sprintf("return the sampled token's logprob and the top n in [0, %d]", MaxLogprobs), func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		p.Logprobs = &n
		return nil
	})
	fs.StringVar(&p.LogprobsMode, "logprobs-mode", p.LogprobsMode, "raw_logprobs (model output) or processed_logprobs (what was sampled from)")
	fs.Func("stop", `stop strings: a JSON list '["\n\n","END"]' or one string`, func(v string) error {
		s, err := parseStrings(v)
		p.Stop = append(p.Stop, s...)
		return err
	})
	fs.Func("stop-token-ids", "token ids that end generation: 1,2 or a JSON list", func(v string) error {
		ids, err := parseIDs(v)
		p.StopTokenIDs = append(p.StopTokenIDs, ids...)
		return err
	})
	fs.BoolVar(&p.IgnoreEOS, "ignore-eos", p.IgnoreEOS, "keep generating after the model's EOS token")
	fs.IntVar(&p.MaxTokens, "max-tokens", p.MaxTokens, "stop after this many tokens (0: until the context is full)")
	fs.BoolVar(&p.IncludeStopStr, "include-stop-str-in-output", p.IncludeStopStr, "show the matched stop string or stop token's text")
}

// parseIDs reads "1,2,3" or "[1,2,3]".
func parseIDs(v string) ([]int32, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") {
		var ids []int32
		err := json.Unmarshal([]byte(v), &ids)
		return ids, err
	}
	var ids []int32
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, err
		}
		ids = append(ids, int32(n))
	}
	return ids, nil
}

// parseStrings reads a JSON list of strings, or takes v as one string.
func parseStrings(v string) ([]string, error) {
	if strings.HasPrefix(strings.TrimSpace(v), "[") {
		var s []string
		err := json.Unmarshal([]byte(v), &s)
		return s, err
	}
	return []string{v}, nil
}
