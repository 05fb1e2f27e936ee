package toolcall

import "strings"

// The StreamParser's states outside call blocks: content, and where a
// Llama reply may start a call.

// textMarkers are what stText looks for.
func (p *StreamParser) textMarkers() []string {
	switch p.f {
	case Hermes:
		return []string{hermesOpen}
	case DeepSeekR1:
		return []string{dsCallBegin, dsCallsBegin, dsCallsEnd}
	case Phi4Mini:
		return []string{phiOpen}
	}
	return nil
}

// endMarkers end a call block: the first is part of the block, the others
// are left to stText.
func (p *StreamParser) endMarkers() []string {
	switch p.f {
	case Hermes:
		return []string{hermesClose}
	case DeepSeekR1:
		return []string{dsCallEnd, dsCallsEnd}
	}
	return nil
}

func (p *StreamParser) stepText(final bool) bool {
	markers := p.textMarkers()
	i, m := earliest(p.buf, markers)
	if i < 0 {
		k := 0
		if !final {
			k = partialSuffix(p.buf, markers)
		}
		p.text(p.buf[:len(p.buf)-k])
		p.buf = p.buf[len(p.buf)-k:]
		return false
	}
	p.text(p.buf[:i])
	p.buf = p.buf[i+len(m):]
	switch m {
	case hermesOpen, dsCallBegin:
		p.prefix, p.st = m, stBlock
	case phiOpen:
		p.prefix, p.st = m, stPhiNext
	case dsCallsBegin:
		p.content(p.pending)
		p.pending, p.hold = m, true
	case dsCallsEnd:
		if !p.lastCall || strings.HasPrefix(p.pending, dsCallsBegin) {
			p.content(p.pending + m)
		}
		p.pending, p.hold = "", false
	}
	return true
}

// text is content found in stText, or whitespace to hold (see pending).
func (p *StreamParser) text(s string) {
	if !p.hold {
		p.content(s)
		return
	}
	if trimLeftWS(s) == "" {
		p.pending += s
		return
	}
	p.content(p.pending + s)
	p.pending, p.hold = "", false
}

func (p *StreamParser) stepLlamaStart(final bool) bool {
	j := len(p.buf) - len(trimLeftWS(p.buf))
	p.content(p.buf[:j])
	p.buf = p.buf[j:]
	rest := p.buf
	switch {
	case rest == "":
		return false
	case rest[0] == '{':
		p.prefix, p.st = "", stBlock
		return true
	case strings.HasPrefix(rest, pythonTag):
		k := len(pythonTag) + len(rest[len(pythonTag):]) - len(trimLeftWS(rest[len(pythonTag):]))
		if k == len(rest) && !final {
			return false
		}
		if k < len(rest) && rest[k] == '{' {
			p.prefix, p.buf, p.st = rest[:k], rest[k:], stBlock
			return true
		}
	case strings.HasPrefix(pythonTag, rest) && !final:
		return false
	}
	p.st = stText // plain content from here on
	return true
}

func (p *StreamParser) stepLlamaAfter(final bool) bool {
	j := len(p.buf) - len(trimLeftWS(p.buf))
	p.content(p.buf[:j])
	p.buf = p.buf[j:]
	if p.buf == "" {
		return false
	}
	if p.buf[0] == ';' {
		k := len(p.buf) - len(trimLeftWS(p.buf[1:]))
		if k == len(p.buf) && !final {
			return false
		}
		if k < len(p.buf) && p.buf[k] == '{' {
			p.prefix, p.buf, p.st = p.buf[:k], p.buf[k:], stBlock
			return true
		}
	}
	p.st = stText
	return true
}

// earliest returns the first position in s where one of markers starts,
// and which, or -1.
func earliest(s string, markers []string) (int, string) {
	best, which := -1, ""
	for _, m := range markers {
		if i := strings.Index(s, m); i >= 0 && (best < 0 || i < best) {
			best, which = i, m
		}
	}
	return best, which
}

// partialSuffix returns the length of the longest end of s that is a
// proper prefix of one of markers.
func partialSuffix(s string, markers []string) int {
	best := 0
	for _, m := range markers {
		for k := min(len(s), len(m)-1); k > best; k-- {
			if strings.HasSuffix(s, m[:k]) {
				best = k
				break
			}
		}
	}
	return best
}

// stepPhiNext is Phi-4-mini's list before a call object: whitespace, then
// '{' starts the call's block (prefix holds the list's text so far, which
// a malformed call makes content); anything else makes the list content.
func (p *StreamParser) stepPhiNext(final bool) bool {
	rest := trimLeftWS(p.buf)
	switch {
	case rest == "" && !final:
		return false
	case rest != "" && rest[0] == '{':
		k := len(p.buf) - len(rest)
		p.prefix, p.buf, p.st = p.prefix+p.buf[:k], rest, stBlock
		return true
	}
	p.content(p.pending + p.prefix)
	p.pending, p.prefix, p.hold = "", "", false
	p.st = stText
	return true
}

// stepPhiAfter is Phi-4-mini's list after a call: "," and the next call,
// or "]" ending the list (dropped); anything else is content from here.
func (p *StreamParser) stepPhiAfter(final bool) bool {
	rest := trimLeftWS(p.buf)
	switch {
	case rest == "" && !final:
		return false
	case rest != "" && rest[0] == ',':
		p.prefix, p.buf, p.st = "", rest[1:], stPhiNext
		return true
	case rest != "" && rest[0] == ']':
		p.buf, p.st = rest[1:], stText
		return true
	}
	p.st = stText
	return true
}
