package engine

import "wasmllm/model"

// A model with Gated DeltaNet layers (Qwen3.5) keeps recurrent states
// beside its KV cache (a *model.HybridCache), and a state cannot be cut
// back to an earlier position as keys and values are. So a prompt reuses
// what the state holds only where it is exact:
//   - the live state, when every cached token is a prefix of the prompt
//     (a chat's next turn that extends the last reply);
//   - else the checkpoint: the state saved before the previous prompt's
//     last token, when that prompt's tokens up to there are a prefix
//     (a next turn whose template re-renders the history, a regenerated
//     reply);
//   - else it starts over from zero.
// Model.Forward refuses any other position (*model.StateError), so a
// mistake here is an error, never wrong text. A decode step submitted
// ahead of its input's readback (pipeline.go) saves the states first, and
// one run past a stop restores them, so the state holds the cached tokens
// and no more.

// checkpoint is a recurrent state saved at a prompt's last token.
type checkpoint struct {
	state *model.HybridCache
	ids   []int32 // the tokens it holds
}

// recurrentStart readies e's recurrent state for prompt, whose first
// common tokens the cache holds, and returns where the prefill starts.
func (e *Engine) recurrentStart(prompt []int32, common int) int {
	m, h := e.Model, e.cache.(*model.HybridCache)
	if common == len(e.cached) && h.Len() == common && common < len(prompt) {
		return common
	}
	if c := e.ckpt; c != nil && len(c.ids) < len(prompt) && hasPrefix(prompt, c.ids) && len(c.ids) <= commonPrefix(e.cached, prompt) {
		m.RestoreState(h, c.state)
		return len(c.ids)
	}
	m.ResetState(h)
	return 0
}

// saveCheckpoint keeps the state, which holds prompt[:n], as the checkpoint.
func (e *Engine) saveCheckpoint(prompt []int32, n int) {
	if e.ckpt == nil {
		e.ckpt = &checkpoint{state: e.Model.NewCheckpoint()}
	}
	e.Model.SaveState(e.ckpt.state, e.cache.(*model.HybridCache))
	e.ckpt.ids = append(e.ckpt.ids[:0], prompt[:n]...)
}

func hasPrefix(s, prefix []int32) bool {
	return len(prefix) <= len(s) && commonPrefix(s, prefix) == len(prefix)
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
