package grammar

// Matcher follows one text through a grammar, byte by byte. A Matcher is
// not safe for concurrent use; many matchers may share one Grammar.
type Matcher struct {
	t     *tables
	state int32
	// started: a byte has been read (for SentencePiece's dropped leading
	// space, see Vocab).
	started bool
	// ended: EOS was accepted.
	ended bool
	// err: a step needed a state past the tables' bounds (see Err).
	err error
}

// NewMatcher returns a matcher at the start of the grammar.
func (g *Grammar) NewMatcher() *Matcher {
	t := g.current()
	if t.init == failState {
		return &Matcher{t: t, state: deadState, err: t.err}
	}
	return &Matcher{t: t, state: t.init}
}

// retireFailed retires the matcher's tables once they have stopped it
// (run after t.mu is released).
func (m *Matcher) retireFailed() {
	if m.err != nil {
		m.t.retire()
	}
}

// Err is the *LimitError that stopped the matcher, or nil: a step needed
// a state past the bounds on the grammar's tables. A stopped matcher
// allows no token (Mask and MaskWithin give none) and accepts none
// (AcceptToken returns the error).
func (m *Matcher) Err() error { return m.err }

// Clone returns an independent copy of m.
func (m *Matcher) Clone() *Matcher { c := *m; return &c }

// acceptBytes moves over b, or leaves the state alone and returns false
// when the grammar cannot read it.
func (m *Matcher) acceptBytes(b []byte) bool {
	if m.err != nil {
		return false
	}
	t := m.t
	t.mu.Lock()
	s := m.state
	for _, c := range b {
		if s = t.step(s, c); s == deadState || s == failState {
			break
		}
	}
	if s == failState {
		m.err = t.err
	}
	t.mu.Unlock()
	if s == failState {
		t.retire()
	}
	if s == deadState || s == failState || m.ended {
		return false
	}
	m.state = s
	if len(b) > 0 {
		m.started = true
	}
	return true
}

// AcceptString moves over s's bytes; it returns false and changes nothing
// when s cannot continue the text.
func (m *Matcher) AcceptString(s string) bool { return m.acceptBytes([]byte(s)) }

// AcceptBytes is AcceptString for bytes.
func (m *Matcher) AcceptBytes(b []byte) bool { return m.acceptBytes(b) }

// CanEnd reports whether the text so far is a whole sentence of the grammar.
func (m *Matcher) CanEnd() bool {
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	return m.t.states[m.state].end
}

// Done reports whether nothing can follow: the grammar has ended (or EOS
// was accepted).
func (m *Matcher) Done() bool {
	if m.ended {
		return true
	}
	m.t.mu.Lock()
	defer m.t.mu.Unlock()
	return len(m.t.states[m.state].tops) == 0
}

// NextBytes reports which bytes may come next.
func (m *Matcher) NextBytes() [256]bool {
	var out [256]bool
	if m.ended {
		return out
	}
	t := m.t
	t.mu.Lock()
	set := t.states[m.state].read
	t.mu.Unlock()
	for c := range 256 {
		out[c] = set.has(byte(c))
	}
	return out
}
