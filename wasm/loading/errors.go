package loading

import "fmt"

// The errors of this package are typed and carry their codes
// (errcode.Coded, in errcode.go), which api.Classify reports: ModelError
// bad_model, OptionError bad_request, ShardSizeError integrity and
// TooLargeError model_too_large. A checksum mismatch is a
// *loader.FormatError wrapping manifest.ErrChecksum (integrity), and
// anything else is a bug (internal).

// ModelError is a model folder that cannot be loaded: a manifest, tensor
// or tokenizer that does not parse or check.
type ModelError struct {
	Msg string
	Err error // the cause, if any
}

func (e *ModelError) Error() string { return e.Msg }

func (e *ModelError) Unwrap() error { return e.Err }

func modelErrorf(format string, args ...any) *ModelError {
	return &ModelError{Msg: fmt.Sprintf(format, args...)}
}

// OptionError is a load option out of range: the context length or the KV
// cache's type.
type OptionError struct {
	Msg string
}

func (e *OptionError) Error() string { return e.Msg }

// ShardSizeError is a shard whose length is not the manifest's.
type ShardSizeError struct {
	File        string
	Bytes, Want int64
}

func (e *ShardSizeError) Error() string {
	return fmt.Sprintf("shard %s: %d bytes, the manifest says %d", e.File, e.Bytes, e.Want)
}

// TooLargeError reports a model part that does not fit the backend, and by
// how much.
type TooLargeError struct {
	What  string // such as `tensor "output.weight"` or "KV cache"
	Limit string // the WebGPU limit, or "wasm heap"
	Need  int64  // bytes
	Have  int64  // bytes
	Hint  string // what to do about it, if anything
}

func (e *TooLargeError) Error() string {
	s := fmt.Sprintf("%s needs %s but %s is %s: %s too large", e.What, bytesText(e.Need), e.Limit, bytesText(e.Have), bytesText(e.Need-e.Have))
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// bytesText formats a byte count for people: "1.5 GiB (1610612736 bytes)".
func bytesText(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1024 && n > -1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v := float64(n)
	u := ""
	for _, x := range units {
		v /= 1024
		u = x
		if v < 1024 && v > -1024 {
			break
		}
	}
	return fmt.Sprintf("%.1f %s (%d bytes)", v, u, n)
}
