package loader

import (
	"errors"
	"fmt"
)

// FormatError reports malformed model input: the file, the field being read
// and the byte offset where it went wrong.
type FormatError struct {
	File   string // path or name of the input
	Field  string // what was being read, such as "tensor blk.0.attn_q.weight shape"
	Offset int64  // byte offset into File, or -1 when not applicable
	Err    error
}

func (e *FormatError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("%s: %s at byte %d: %v", e.File, e.Field, e.Offset, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.File, e.Field, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Sentinel causes wrapped by FormatError.
var (
	ErrTruncated   = errors.New("unexpected end of data")
	ErrBadMagic    = errors.New("bad magic")
	ErrUnsupported = errors.New("unsupported")
	ErrCorrupt     = errors.New("corrupt value")
	ErrTooLarge    = errors.New("count or size out of range")
	ErrNotFound    = errors.New("not found")
	// ErrChecksum marks a file whose sha256 does not match the manifest's.
	ErrChecksum = errors.New("checksum mismatch")
)
