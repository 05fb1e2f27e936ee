// Package sampler is vLLM's sampling pipeline in plain Go: logits
// processors, penalties, temperature, min_p, top_k, top_p, seeded sampling,
// logprobs, and the stop conditions the engine applies.
//
// Per token, over one row of V logits (float32), in vLLM's order:
//
//  1. Logprobs in raw_logprobs mode are the log-softmax of the row as the
//     model produced it.
//  2. allowed_token_ids (everything else is -Inf), bad_words (the last
//     token of a word is banned when the output ends with the rest of it),
//     logit_bias, min_tokens (stop and EOS ids banned until N tokens are
//     out), custom LogitsProcessors, then repetition_penalty (prompt and
//     output: a positive logit is divided, any other multiplied),
//     frequency_penalty and presence_penalty (output only).
//  3. temperature 0 takes the argmax, ties to the lowest id.
//  4. Otherwise: divide by the temperature, apply min_p (relative to the
//     best token's probability), then top_k and top_p jointly (top_p over
//     the top_k's renormalised probabilities), and draw one uniform number
//     from the request's SplitMix64 stream. processed_logprobs are the
//     log-softmax of what the token was drawn from.
//
// The order is stated once, step by step, in the pipeline function
// (pipeline.go), which every path runs. The row is a logitRow with one
// method per step: dense (the whole row, edited in place, for custom
// processors) or sparse (the few ids the built-in processors touch, edited
// alone; its universe is the row, the allowed ids, or SampleCandidates'
// candidates). The draw is a dist with one method per truncation: a short
// list (narrow.go) or the whole row (wide.go).
//
// Semantics follow vLLM's SamplingParams (validation ranges included: a
// positive temperature below 0.01 is raised to 0.01 as vLLM does), with
// these deliberate differences: top_k keeps exactly k tokens, ties to the
// lowest id (vLLM keeps every token tied with the k-th, which a GPU top-k
// cannot reproduce); logit_bias outside [-100, 100] is an error (vLLM
// clamps); a row with NaN or +Inf logits is an error; the draw walks the
// cumulative probabilities (best first for top_k lists, id order over the
// whole vocabulary) instead of torch's exponential race, so seeds match
// this package on every platform but not torch.
//
// Cost: no full-vocabulary sort, ever. The built-in processors touch a
// few ids each, so they are applied to those ids only and merged after one
// fused pass over the row, which keeps the k best entries with a
// threshold test and, only when a full log-softmax is needed (raw
// logprobs, greedy processed logprobs), sums exponentials. With top_k (or
// allowed_token_ids) everything after that pass works on the short list,
// in float64. Without top_k the draw needs one exponential per vocabulary
// entry (weights exp(x/T - max/T) with a float32-accurate exponential,
// summed per block of 1024); top_p then finds the nucleus among the 256
// best tokens, or else sorts only the tokens above the depth a histogram
// of the weights points to.
//
// Candidates: when CandidateCount is positive, SampleCandidates takes the
// row's best logits (the GPU's top-k) instead of the full row and returns
// the same result bit for bit; it returns ErrNeedsFullRow otherwise.
//
// Determinism: sampling decisions use only float32/float64 arithmetic with
// explicit rounding and this package's own exponentials, so a seed gives
// the same tokens natively and under GOOS=js. Logprob values use math.Log
// and may differ in the last float32 bit between platforms.
package sampler
