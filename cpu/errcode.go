package cpu

import "wasmllm/errcode"

// A failed rank ends the engine: cpu_rank_failed, reload.

func (e *RankError) ErrorCode() string { return errcode.RankFailed }

func (e *RankError) ErrorDetails() map[string]any {
	return map[string]any{"rank": e.Rank, "op": e.Op, "reason": e.Reason}
}
