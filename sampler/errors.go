package sampler

import (
	"errors"
	"fmt"

	"wasmllm/errcode"
)

// ParamError reports a sampling parameter outside its domain. Param is the
// snake_case name used in JSON and, with dashes, on the command line.
type ParamError struct {
	Param  string // such as "top_p" or "logit_bias"
	Value  any    // the offending value (an element for lists and maps)
	Reason string // what the value must satisfy
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("sampler: invalid %s %v: %s", e.Param, e.Value, e.Reason)
}

// LogitError reports a logit that cannot be sampled from: NaN or +Inf in the
// model's output, or a +Inf or NaN produced by a logits processor.
type LogitError struct {
	Index int     // token id (position in the row) or candidate index
	Value float32 // the offending value
	Stage string  // "model", "candidates" or the processor step that produced it
}

func (e *LogitError) Error() string {
	return fmt.Sprintf("sampler: logit %d is %v (%s)", e.Index, e.Value, e.Stage)
}

// ErrorCode implements errcode.Coded: a value a processor step produced
// (the request's penalties, logit_bias, its own processors) is the
// request's fault, bad_request; one the model produced is left to the rest
// of the mapping ("").
func (e *LogitError) ErrorCode() string {
	if e.Stage == "model" || e.Stage == "candidates" {
		return ""
	}
	return errcode.BadRequest
}

// RowError reports a logits row or candidate set of the wrong shape.
type RowError struct {
	What      string // "logits", "candidate ids", ...
	Got, Want int
}

func (e *RowError) Error() string {
	return fmt.Sprintf("sampler: %s has length %d, want %d", e.What, e.Got, e.Want)
}

var (
	// ErrNeedsFullRow is returned by SampleCandidates when the candidate
	// set cannot give the full row's result: a processor needs logits
	// outside the set, or a penalty pushed the set's best below its bound.
	// The caller reads the full row and calls Sample instead; the sampler's
	// state (history, RNG) is unchanged.
	ErrNeedsFullRow = errors.New("sampler: the full logits row is needed")
	// ErrAllMasked is returned when every token's logit is -Inf after the
	// processors (for example allowed_token_ids all banned by bad_words).
	ErrAllMasked = errors.New("sampler: every token is masked")
)
