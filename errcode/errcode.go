// Package errcode names the stable error codes that the worker posts to the
// page (the JavaScript API's WasmLLMError.code) and the HTTP server maps to
// statuses, and lets an error carry its own code: a package whose errors
// have one implements Coded (and Detailed, Worded where it needs to) on
// them, so that the mapping, api.Classify, does not import the package.
//
// It imports nothing but the standard library, so that any package may
// depend on it.
package errcode

// The codes.
const (
	BadRequest      = "bad_request"      // a malformed or out-of-range request
	BadModel        = "bad_model"        // a manifest, tensor or tokenizer that does not parse
	ModelTooLarge   = "model_too_large"  // a tensor, the KV cache or the whole model exceeds the device
	QuotaExceeded   = "quota_exceeded"   // the model does not fit the origin's storage quota
	Integrity       = "integrity"        // a shard whose sha256 or size does not match the manifest
	Network         = "network"          // a fetch that failed after its retries
	ContextOverflow = "context_overflow" // a prompt that does not fit the context
	Aborted         = "aborted"          // a load stopped by abort()
	NoChatTemplate  = "no_chat_template" // a chat request for a model without a template
	NoTokenizer     = "no_tokenizer"     // a text request for a model without a tokenizer
	DeviceLost      = "device_lost"      // the GPU device was lost; reload
	RankFailed      = "cpu_rank_failed"  // a rank of the CPU engine (a Web Worker) died or stopped answering; reload
	NoWebGPU        = "no_webgpu"        // backend "webgpu" was asked for but is not available
	NotLoaded       = "not_loaded"       // a request before load or after unload
	Internal        = "internal"         // anything else: a bug, or a backend failure
)

// Coded is an error that carries its code. The mapping takes the first
// Coded error in an error's tree (errors.As order).
type Coded interface {
	error
	// ErrorCode is one of the codes above, or "" for a value of the type
	// that has none (a GPU error other than out-of-memory), which leaves
	// the error to the rest of the mapping.
	ErrorCode() string
}

// Detailed is a Coded error with details for programs
// (WasmLLMError.details).
type Detailed interface {
	ErrorDetails() map[string]any
}

// Worded is a Coded error that words the message for people itself; whole
// is the error it was found in (it, or an error wrapping it). Without it
// the message is whole's text.
type Worded interface {
	ErrorMessage(whole error) string
}

// New returns a sentinel error with a code, to be matched with errors.Is.
func New(code, text string) error { return &sentinel{code: code, text: text} }

type sentinel struct{ code, text string }

func (e *sentinel) Error() string     { return e.text }
func (e *sentinel) ErrorCode() string { return e.code }
