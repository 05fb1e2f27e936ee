package openai

import (
	"encoding/json"
	"errors"
	"net/http"
)

// errGone is what emit returns once the client has left: the engine stops.
var errGone = errors.New("openai: the client has gone")

// streamOut writes a streamed response as Server-Sent Events, the way
// OpenAI and vLLM do: one "data: {chunk}" event per chunk, flushed as it
// is made, then "data: [DONE]". The chunks are api.Runner's: the first is
// made with the first token (so that a request the engine rejects gets an
// HTTP error status, not a stream), each choice ends with a chunk holding
// its finish_reason, and with stream_options.include_usage a last chunk
// with no choices holds the usage.
type streamOut struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	cancel func() // stops the generation when the client is gone

	started bool // the header is sent
	gone    bool // a write failed
	sum     summary
}

func (s *streamOut) emit(v any) error {
	if s.gone {
		return errGone
	}
	s.sum.add(v)
	ev, err := event(v)
	if err != nil {
		return err
	}
	return s.write(ev)
}

// event is one Server-Sent Event carrying v as JSON.
func event(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(append([]byte("data: "), data...), "\n\n"...), nil
}

// write sends the header first if it is not yet sent, then ev, and
// flushes.
func (s *streamOut) write(ev []byte) error {
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no") // a proxy in front must not buffer either
		s.w.WriteHeader(http.StatusOK)
	}
	if _, err := s.w.Write(ev); err != nil {
		return s.lost()
	}
	if err := s.rc.Flush(); err != nil {
		return s.lost()
	}
	return nil
}

func (s *streamOut) lost() error {
	s.gone = true
	s.cancel()
	return errGone
}

// done ends the stream.
func (s *streamOut) done() { s.write([]byte("data: [DONE]\n\n")) }

// fail ends a started stream with an error event, as vLLM does; the
// OpenAI clients raise it as an APIError.
func (s *streamOut) fail(e *Error) {
	ev, _ := event(e.Body())
	s.write(append(ev, "data: [DONE]\n\n"...))
}

// isGone reports whether s is a stream whose client has gone.
func (s *streamOut) isGone() bool { return s != nil && s.gone }
