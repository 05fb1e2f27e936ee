package main

import (
	"io/fs"
	"syscall"
)

// newStatJSON reports st as Node's fs.Stats would on this system.
func newStatJSON(_ string, st fs.FileInfo) *statJSON {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return portableStat(st)
	}
	ms := func(t syscall.Timespec) int64 { return t.Sec*1000 + t.Nsec/1e6 }
	return &statJSON{
		Dev: sys.Dev, Ino: sys.Ino, Mode: sys.Mode, Nlink: uint64(sys.Nlink),
		UID: sys.Uid, GID: sys.Gid, Rdev: sys.Rdev, Size: sys.Size,
		Blksize: int64(sys.Blksize), Blocks: sys.Blocks,
		AtimeMs: ms(sys.Atim), MtimeMs: ms(sys.Mtim), CtimeMs: ms(sys.Ctim),
	}
}
