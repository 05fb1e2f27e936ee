package toolcall

// bodyScan checks a call block after its header: the arguments object,
// then what may follow it up to the end of the block. It is fed the
// block's text incrementally.
type bodyScan struct {
	f     Format
	phase bodyPhase
	args  *jsonScan
	tail  *jsonScan
	fence int // DeepSeek: backticks of the closing fence seen
}

type bodyPhase uint8

const (
	pArgs  bodyPhase = iota // in the arguments object
	pTail                   // Hermes, Llama: in the call object after the arguments (more members, '}')
	pFence                  // DeepSeek: before and in the closing ```
	pWS                     // only whitespace may follow, up to the block's end marker
	pEnd                    // Llama: the call object is complete; the block ends here
)

// newBodyScan starts after a complete header.
func newBodyScan(f Format, h header) *bodyScan {
	b := &bodyScan{f: f, args: newObjectScan()}
	if h.st == hdrNoArgs {
		b.phase = pWS
		if f.bare() {
			b.phase = pEnd
		}
	}
	return b
}

// feed consumes text until it is used up, a byte is refused, or (Llama)
// the call object is complete. It returns how many bytes it consumed, how
// many of those, from the start, belong to the arguments object, and
// whether all consumed bytes were acceptable (on false, the refused byte
// is at n).
func (b *bodyScan) feed(s string) (n, argN int, ok bool) {
	for ; n < len(s) && b.phase != pEnd; n++ {
		args := b.phase == pArgs
		if !b.step(s[n]) {
			return n, argN, false
		}
		if args {
			argN = n + 1
		}
	}
	return n, argN, true
}

// step consumes one byte and reports whether it was acceptable. After the
// call object of a Llama call (pEnd) no byte is.
func (b *bodyScan) step(c byte) bool {
	switch b.phase {
	case pArgs:
		if !b.args.step(c) {
			return false
		}
		if b.args.done() {
			b.afterArgs()
		}
	case pTail:
		if !b.tail.step(c) {
			return false
		}
		if b.tail.done() {
			b.phase = pWS
			if b.f.bare() {
				b.phase = pEnd
			}
		}
	case pFence:
		switch {
		case c == '`':
			if b.fence++; b.fence == 3 {
				b.phase = pWS
			}
		case b.fence > 0 || !isWS(c):
			return false
		}
	case pWS:
		return isWS(c)
	case pEnd:
		return false
	}
	return true
}

// inString reports whether the next byte is inside a JSON string of the
// arguments or of the call object after them.
func (b *bodyScan) inString() bool {
	switch b.phase {
	case pArgs:
		return b.args.inString()
	case pTail:
		return b.tail.inString()
	}
	return false
}

// lookahead returns a copy of b that can be fed k more bytes without
// changing b.
func (b *bodyScan) lookahead(k int) *bodyScan {
	c := *b
	if b.args != nil {
		c.args = b.args.lookahead(k)
	}
	if b.tail != nil {
		c.tail = b.tail.lookahead(k)
	}
	return &c
}

func (b *bodyScan) afterArgs() {
	if b.f == DeepSeekR1 {
		b.phase = pFence
		return
	}
	b.phase, b.tail = pTail, newMemberTailScan()
}

// accepts reports whether the block may end here.
func (b *bodyScan) accepts() bool { return b.phase == pWS || b.phase == pEnd }

// ended reports whether the block has ended by its own syntax (Llama).
func (b *bodyScan) ended() bool { return b.phase == pEnd }
