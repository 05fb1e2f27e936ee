package tokenizer

import "unicode/utf8"

// GPT-2's byte-level alphabet: every byte maps to a printable rune, so that
// token strings in byte-level vocabularies never contain raw control bytes
// or spaces (a space is 'Ġ', U+0120).
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
	// byteToChar[b] is byteToRune[b] as a UTF-8 string.
	byteToChar [256]string
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
		byteToChar[b] = string(byteToRune[b])
	}
}

// byteLevelDecode maps a byte-level token string back to raw bytes. Like
// Hugging Face's ByteLevel decoder, a token with any rune outside the
// alphabet is returned as its own UTF-8 bytes.
func byteLevelDecode(tok string) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return []byte(tok)
		}
		out = append(out, b)
	}
	return out
}

// byteLevelRaw is byteLevelDecode that reports whether every rune was in
// the alphabet.
func byteLevelRaw(tok string) ([]byte, bool) {
	out := make([]byte, 0, len(tok))
	for i := 0; i < len(tok); {
		r, w := utf8.DecodeRuneInString(tok[i:])
		b, ok := runeToByte[r]
		if !ok || (r == utf8.RuneError && w == 1) {
			return nil, false
		}
		out = append(out, b)
		i += w
	}
	return out, true
}

// byteLevelEncode maps raw bytes to their byte-level string.
func byteLevelEncode(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = append(buf, byteToChar[s[i]]...)
	}
	return string(buf)
}
