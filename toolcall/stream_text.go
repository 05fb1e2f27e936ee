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
