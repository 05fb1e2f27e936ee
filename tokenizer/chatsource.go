package tokenizer

import "strings"

// normalizeTemplate prepares template source for the engine: CRLF becomes
// LF, one trailing newline is dropped (Jinja2's keep_trailing_newline=False),
// and the '-' of a tag that directly follows another tag is removed. There
// is no text between the two for it to trim, so this changes nothing in
// Jinja2, but ardanlabs/jinja v1.12.0 would strip the whitespace before the
// preceding {{ }} instead.
func normalizeTemplate(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.TrimSuffix(src, "\n")
	return dropAdjacentTrim(src)
}

// dropAdjacentTrim removes the left-trim marker of every tag that starts
// exactly where the previous tag ended. It skips string literals inside
// tags and the body of {% raw %} blocks.
func dropAdjacentTrim(src string) string {
	var b strings.Builder
	prevEnd := -1
	i := 0
	for i < len(src) {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			break
		}
		p := i + j
		kind := src[p+1]
		if kind != '{' && kind != '%' && kind != '#' {
			b.WriteString(src[i : p+1])
			i = p + 1
			continue
		}
		end := tagEnd(src, p, kind)
		if end < 0 {
			break
		}
		tag := src[p:end]
		if p == prevEnd && len(tag) > 2 && tag[2] == '-' {
			tag = tag[:2] + tag[3:]
		}
		raw := kind == '%' && isRawTag(tag)
		// Jinja2 does not apply trim_blocks to the newline after {% raw %};
		// ardanlabs/jinja does, unless told not to by '+'.
		if n := len(tag); raw && tag[n-3] != '-' && tag[n-3] != '+' {
			tag = tag[:n-2] + "+%}"
		}
		b.WriteString(src[i:p])
		b.WriteString(tag)
		i, prevEnd = end, end
		if raw {
			k := rawBlockEnd(src, end)
			b.WriteString(src[end:k])
			i, prevEnd = k, -1
		}
	}
	b.WriteString(src[i:])
	return b.String()
}

// tagEnd returns the offset just past the tag opened at src[p] ("{{", "{%"
// or "{#"), or -1 if it is not closed.
func tagEnd(src string, p int, kind byte) int {
	closeCh := kind
	if kind == '{' {
		closeCh = '}'
	}
	var quote byte
	for k := p + 2; k+1 < len(src); k++ {
		c := src[k]
		switch {
		case quote != 0:
			if c == '\\' {
				k++
			} else if c == quote {
				quote = 0
			}
		case kind != '#' && (c == '\'' || c == '"'):
			quote = c
		case c == closeCh && src[k+1] == '}':
			return k + 2
		}
	}
	return -1
}

func isRawTag(tag string) bool {
	inner := strings.Trim(tag[2:len(tag)-2], "-+ \t\n")
	return inner == "raw"
}

// rawBlockEnd returns the offset of the {% endraw %} tag that closes a raw
// block whose body starts at i, or len(src).
func rawBlockEnd(src string, i int) int {
	for {
		j := strings.Index(src[i:], "{%")
		if j < 0 {
			return len(src)
		}
		p := i + j
		e := tagEnd(src, p, '%')
		if e < 0 {
			return len(src) // no closed tag is left
		}
		if strings.Trim(src[p+2:e-2], "-+ \t\n") == "endraw" {
			return p
		}
		i = p + 2
	}
}
