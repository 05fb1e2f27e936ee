package manifest

import (
	"fmt"
	"strings"
)

// ManifestFile is the manifest's file name inside a model folder.
const ManifestFile = "manifest.json"

// nameHashDigits is how many hex digits of the sha256 a Writer puts in a
// shard name; IsHashedName accepts 16 to 64.
const nameHashDigits = 16

// ShardName returns the file name of shard index i with the given lowercase
// hex sha256: "shard-00007-<first 16 hex digits>.bin".
func ShardName(i int, sha256hex string) string {
	return fmt.Sprintf("shard-%05d-%s.bin", i, sha256hex[:nameHashDigits])
}

// IsHashedName reports whether name is a content-hashed shard name: a plain
// file name of letters, digits, '.', '_' and '-', not starting with '.', and
// ending in "-<16 to 64 lowercase hex digits>.bin". Such files never change
// under their name and may be cached forever.
func IsHashedName(name string) bool {
	_, ok := NameHash(name)
	return ok
}

// NameHash returns the hex digits embedded in a content-hashed shard name.
func NameHash(name string) (string, bool) {
	if !safeFileName(name) {
		return "", false
	}
	stem, ok := strings.CutSuffix(name, ".bin")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(stem, '-')
	if i <= 0 {
		return "", false
	}
	h := stem[i+1:]
	if len(h) < 16 || len(h) > 64 || !isLowerHex(h) {
		return "", false
	}
	return h, true
}

// safeFileName reports whether name is a single path element made of
// [A-Za-z0-9._-], not starting with '.', at most 255 bytes.
func safeFileName(name string) bool {
	if name == "" || len(name) > 255 || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}
