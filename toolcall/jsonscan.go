package toolcall

import "slices"

// jsonScan checks JSON text one byte at a time, so that a call's arguments
// can be streamed while they are known to be a valid prefix. It accepts
// RFC 8259 JSON: no control characters in strings, escapes and numbers
// checked. It does not check UTF-8, which the model's decoder provides.
type jsonScan struct {
	stack []byte // open containers: '{' or '['
	st    scanState
	key   bool   // the string being read is an object key
	hex   int    // hex digits still expected in a \uXXXX escape
	lit   string // the rest of true, false or null
}

type scanState uint8

const (
	sValue      scanState = iota // a value is expected
	sFirstItem                   // after '[': a value or ']'
	sFirstKey                    // after '{': a key or '}'
	sKey                         // after ',' in an object: a key
	sColon                       // after a key
	sAfterValue                  // after a value in a container: ',' or the close
	sString                      // inside a string
	sEscape                      // after '\' in a string
	sLiteral                     // inside true, false or null
	sMinus                       // after '-'
	sZero                        // after a leading 0
	sInt                         // in the integer digits
	sDot                         // after '.'
	sFrac                        // in the fraction digits
	sExp                         // after 'e'
	sExpSign                     // after 'e+' or 'e-'
	sExpDig                      // in the exponent digits
	sDone                        // the top-level value is complete
	sError
)

// newObjectScan expects one JSON object, after optional whitespace.
func newObjectScan() *jsonScan { return &jsonScan{st: sValue} }

// newMemberTailScan continues an object just after one of its member
// values: it accepts more members and then the closing brace.
func newMemberTailScan() *jsonScan {
	return &jsonScan{stack: []byte{'{'}, st: sAfterValue}
}

// done reports whether the top-level value is complete.
func (s *jsonScan) done() bool { return s.st == sDone }

// inString reports whether the next byte is inside a string (a key or a
// value).
func (s *jsonScan) inString() bool { return s.st == sString || s.st == sEscape }

// lookahead returns a copy of s that can read k more bytes without
// changing s. It copies only the top k+1 open containers: k bytes can
// close at most k of them, so the copy's stack never runs out where s's
// would not.
func (s *jsonScan) lookahead(k int) *jsonScan {
	c := *s
	c.stack = slices.Clone(s.stack[max(0, len(s.stack)-k-1):])
	return &c
}

// step consumes one byte and reports whether the text read so far is
// still a prefix of a valid value. Once the value is done no further byte
// is accepted. The first value must be an object (see newObjectScan).
func (s *jsonScan) step(c byte) bool {
	switch s.st {
	case sString:
		switch {
		case s.hex > 0:
			if !isHex(c) {
				return s.fail()
			}
			s.hex--
		case c == '"':
			if s.key {
				s.key, s.st = false, sColon
			} else {
				s.endValue()
			}
		case c == '\\':
			s.st = sEscape
		case c < 0x20:
			return s.fail()
		}
		return true
	case sEscape:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			s.hex = 4
		default:
			return s.fail()
		}
		s.st = sString
		return true
	case sLiteral:
		if c != s.lit[0] {
			return s.fail()
		}
		if s.lit = s.lit[1:]; s.lit == "" {
			s.endValue()
		}
		return true
	case sMinus:
		switch {
		case c == '0':
			s.st = sZero
		case isDigit(c):
			s.st = sInt
		default:
			return s.fail()
		}
		return true
	case sZero, sInt, sFrac, sExpDig:
		switch {
		case isDigit(c) && s.st != sZero:
			return true
		case c == '.' && (s.st == sZero || s.st == sInt):
			s.st = sDot
			return true
		case (c == 'e' || c == 'E') && s.st != sExpDig:
			s.st = sExp
			return true
		}
		s.endValue() // the number ended; c belongs to what follows
		return s.step(c)
	case sDot, sExp, sExpSign:
		switch {
		case isDigit(c) && s.st == sDot:
			s.st = sFrac
		case isDigit(c):
			s.st = sExpDig
		case s.st == sExp && (c == '+' || c == '-'):
			s.st = sExpSign
		default:
			return s.fail()
		}
		return true
	case sDone, sError:
		return s.fail()
	}
	if isWS(c) {
		return true
	}
	switch s.st {
	case sFirstItem:
		if c == ']' {
			return s.close(c)
		}
		return s.startValue(c)
	case sValue:
		if len(s.stack) == 0 && c != '{' {
			return s.fail()
		}
		return s.startValue(c)
	case sFirstKey, sKey:
		if c == '}' && s.st == sFirstKey {
			return s.close(c)
		}
		if c != '"' {
			return s.fail()
		}
		s.st, s.key = sString, true
	case sColon:
		if c != ':' {
			return s.fail()
		}
		s.st = sValue
	case sAfterValue:
		switch top := s.stack[len(s.stack)-1]; {
		case c == ',' && top == '{':
			s.st = sKey
		case c == ',':
			s.st = sValue
		case c == '}' || c == ']':
			return s.close(c)
		default:
			return s.fail()
		}
	}
	return true
}

func (s *jsonScan) startValue(c byte) bool {
	switch {
	case c == '{':
		s.stack, s.st = append(s.stack, '{'), sFirstKey
	case c == '[':
		s.stack, s.st = append(s.stack, '['), sFirstItem
	case c == '"':
		s.st = sString
	case c == '-':
		s.st = sMinus
	case c == '0':
		s.st = sZero
	case isDigit(c):
		s.st = sInt
	case c == 't':
		s.st, s.lit = sLiteral, "rue"
	case c == 'f':
		s.st, s.lit = sLiteral, "alse"
	case c == 'n':
		s.st, s.lit = sLiteral, "ull"
	default:
		return s.fail()
	}
	return true
}

// close pops the container that c (']' or '}') closes.
func (s *jsonScan) close(c byte) bool {
	open := byte('{')
	if c == ']' {
		open = '['
	}
	if len(s.stack) == 0 || s.stack[len(s.stack)-1] != open {
		return s.fail()
	}
	s.stack = s.stack[:len(s.stack)-1]
	s.endValue()
	return true
}

// endValue moves on after a complete value.
func (s *jsonScan) endValue() {
	if len(s.stack) == 0 {
		s.st = sDone
	} else {
		s.st = sAfterValue
	}
}

func (s *jsonScan) fail() bool {
	s.st = sError
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// isWS reports JSON whitespace, which is also the whitespace trimmed from
// content.
func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
