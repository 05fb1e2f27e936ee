package firefox

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/coder/websocket"
)

// bidi is a WebDriver BiDi connection: commands with ids, their replies,
// and events delivered in arrival order to one handler.
type bidi struct {
	conn    *websocket.Conn
	onEvent func(method string, params map[string]any)

	mu      sync.Mutex
	next    int
	waiting map[int]chan reply
	err     error // set once the connection is gone
	done    chan struct{}
}

type reply struct {
	result map[string]any
	err    error
}

// message is any BiDi message: a command's success or error, or an event.
type message struct {
	Type    string         `json:"type"`
	ID      *int           `json:"id"`
	Result  map[string]any `json:"result"`
	Error   string         `json:"error"`
	Message string         `json:"message"`
	Method  string         `json:"method"`
	Params  map[string]any `json:"params"`
}

func dialBiDi(ctx context.Context, url string, onEvent func(string, map[string]any)) (*bidi, error) {
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 30) // evaluation results can be large
	b := &bidi{conn: conn, onEvent: onEvent, waiting: map[int]chan reply{}, done: make(chan struct{})}
	go b.read()
	return b, nil
}

func (b *bidi) read() {
	defer close(b.done)
	for {
		_, data, err := b.conn.Read(context.Background())
		if err != nil {
			b.fail(fmt.Errorf("BiDi connection: %w", err))
			return
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil {
			b.fail(fmt.Errorf("BiDi message %.200q: %w", data, err))
			return
		}
		if m.Type == "event" {
			if b.onEvent != nil {
				b.onEvent(m.Method, m.Params)
			}
			continue
		}
		if m.ID == nil {
			continue
		}
		b.mu.Lock()
		ch := b.waiting[*m.ID]
		delete(b.waiting, *m.ID)
		b.mu.Unlock()
		if ch == nil {
			continue
		}
		if m.Type == "error" {
			ch <- reply{err: fmt.Errorf("%s: %s", m.Error, m.Message)}
		} else {
			ch <- reply{result: m.Result}
		}
	}
}

func (b *bidi) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
	}
	for id, ch := range b.waiting {
		ch <- reply{err: b.err}
		delete(b.waiting, id)
	}
}

// call sends a command and waits for its reply.
func (b *bidi) call(ctx context.Context, method string, params map[string]any) (map[string]any, error) {
	ch := make(chan reply, 1)
	b.mu.Lock()
	if b.err != nil {
		b.mu.Unlock()
		return nil, b.err
	}
	b.next++
	id := b.next
	b.waiting[id] = ch
	b.mu.Unlock()
	data, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := b.conn.Write(ctx, websocket.MessageText, data); err != nil {
		b.forget(id)
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w", method, r.err)
		}
		return r.result, nil
	case <-ctx.Done():
		b.forget(id)
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (b *bidi) forget(id int) {
	b.mu.Lock()
	delete(b.waiting, id)
	b.mu.Unlock()
}

func (b *bidi) close() {
	b.conn.Close(websocket.StatusNormalClosure, "")
}
