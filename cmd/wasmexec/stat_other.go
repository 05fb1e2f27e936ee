//go:build !linux

package main

import (
	"hash/fnv"
	"io/fs"
)

// newStatJSON reports st from its portable fields. The inode number is a hash
// of the path, so that os.SameFile still tells files apart.
func newStatJSON(name string, st fs.FileInfo) *statJSON {
	s := portableStat(st)
	h := fnv.New64a()
	h.Write([]byte(name))
	s.Ino = h.Sum64() >> 11 // exact in a float64
	return s
}
