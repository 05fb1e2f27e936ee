package main

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// statJSON is a file's metadata with the field names of Node's fs.Stats,
// which Go's syscall/fs_js.go reads.
type statJSON struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Mode    uint32 `json:"mode"` // Unix st_mode: type bits and permissions
	Nlink   uint64 `json:"nlink"`
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	Rdev    uint64 `json:"rdev"`
	Size    int64  `json:"size"`
	Blksize int64  `json:"blksize"`
	Blocks  int64  `json:"blocks"`
	AtimeMs int64  `json:"atimeMs"`
	MtimeMs int64  `json:"mtimeMs"`
	CtimeMs int64  `json:"ctimeMs"`
}

// entryJSON is one directory entry with its metadata.
type entryJSON struct {
	Name string   `json:"name"`
	Stat statJSON `json:"stat"`
}

// fsInfoJSON answers /fsinfo/ and /write/: an errno name (Code) when the
// request failed, else the path's metadata and, for a listed directory, its
// entries.
type fsInfoJSON struct {
	Code    string      `json:"code,omitempty"`
	Stat    *statJSON   `json:"stat,omitempty"`
	Entries []entryJSON `json:"entries,omitempty"`
	N       int64       `json:"n,omitempty"` // bytes written
}

// Stat's mode type bits (the same on every Unix).
const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
	modeChr  = 0o020000
	modeFIFO = 0o010000
	modeSock = 0o140000
)

// unixMode maps a FileMode to st_mode bits, for systems without Stat_t.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	switch {
	case m.IsDir():
		u |= modeDir
	case m&fs.ModeSymlink != 0:
		u |= modeLink
	case m&fs.ModeCharDevice != 0:
		u |= modeChr
	case m&fs.ModeNamedPipe != 0:
		u |= modeFIFO
	case m&fs.ModeSocket != 0:
		u |= modeSock
	default:
		u |= modeFile
	}
	return u
}

// errnoName names err for the page as one of the errno codes Go's
// syscall/tables_js.go knows (an unknown one would panic there).
func errnoName(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "ENOENT"
	case errors.Is(err, syscall.ENOTDIR):
		return "ENOTDIR"
	case errors.Is(err, syscall.EISDIR):
		return "EISDIR"
	case errors.Is(err, fs.ErrExist):
		return "EEXIST"
	case errors.Is(err, syscall.ELOOP):
		return "ELOOP"
	case errors.Is(err, syscall.ENOSPC):
		return "ENOSPC"
	case errors.Is(err, fs.ErrPermission):
		return "EACCES"
	}
	if strings.Contains(err.Error(), "path escapes from parent") {
		// os.Root refuses a path or symbolic link that leaves the root.
		return "EACCES"
	}
	return "EIO"
}

func writeInfo(w http.ResponseWriter, status int, v fsInfoJSON) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeErrno(w http.ResponseWriter, err error) {
	code := errnoName(err)
	status := http.StatusInternalServerError
	switch code {
	case "ENOENT", "ENOTDIR":
		status = http.StatusNotFound
	case "EACCES":
		status = http.StatusForbidden
	}
	writeInfo(w, status, fsInfoJSON{Code: code})
}

// serveInfo answers GET /fsinfo/<name>: the metadata of a path below the
// repository root (symbolic links inside the root followed; ones that leave
// it refused), and with ?list=1 a directory's entries. Entries that cannot be
// stat'ed (dangling or escaping links) are left out, as os.ReadDir skips a
// file that disappears between readdir and lstat.
func (s *server) serveInfo(w http.ResponseWriter, r *http.Request, name string) {
	if s.root == nil {
		writeInfo(w, http.StatusNotFound, fsInfoJSON{Code: "ENOENT"})
		return
	}
	name = strings.TrimSuffix(name, "/")
	if name == "" {
		name = "."
	}
	if !fs.ValidPath(name) {
		writeInfo(w, http.StatusNotFound, fsInfoJSON{Code: "ENOENT"})
		return
	}
	st, err := s.root.Stat(filepath.FromSlash(name))
	if err != nil {
		writeErrno(w, err)
		return
	}
	info := fsInfoJSON{Stat: newStatJSON(name, st)}
	if st.IsDir() && r.URL.Query().Get("list") == "1" {
		d, err := s.root.Open(filepath.FromSlash(name))
		if err != nil {
			writeErrno(w, err)
			return
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			writeErrno(w, err)
			return
		}
		info.Entries = make([]entryJSON, 0, len(names))
		for _, n := range names {
			p := path.Join(name, n)
			est, err := s.root.Stat(filepath.FromSlash(p))
			if err != nil {
				continue
			}
			info.Entries = append(info.Entries, entryJSON{Name: n, Stat: *newStatJSON(p, est)})
		}
	}
	writeInfo(w, http.StatusOK, info)
}

// maxWrite bounds one POST /write/ body.
const maxWrite = 64 << 20

// serveWrite answers POST /write/<i>?op=...: the program writes the i-th file
// the caller allowed with -allow-write, and no other.
//
//	op=open&create=1&trunc=1&excl=1   create or truncate (flags optional)
//	op=write&off=N (or &append=1)     write the body at offset N, or append
//	op=stat                           the file's metadata
func (s *server) serveWrite(w http.ResponseWriter, r *http.Request, idx string) {
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || i >= len(s.writable) {
		writeInfo(w, http.StatusForbidden, fsInfoJSON{Code: "EROFS"})
		return
	}
	name := s.writable[i]
	q := r.URL.Query()
	switch q.Get("op") {
	case "open":
		flags := os.O_WRONLY
		if q.Get("create") == "1" {
			flags |= os.O_CREATE
		}
		if q.Get("trunc") == "1" {
			flags |= os.O_TRUNC
		}
		if q.Get("excl") == "1" {
			flags |= os.O_EXCL
		}
		f, err := os.OpenFile(name, flags, 0o644)
		if err != nil {
			writeErrno(w, err)
			return
		}
		f.Close()
		writeInfo(w, http.StatusOK, fsInfoJSON{})
	case "write":
		flags := os.O_WRONLY
		appendMode := q.Get("append") == "1"
		if appendMode {
			flags |= os.O_APPEND
		}
		off, err := strconv.ParseInt(q.Get("off"), 10, 64)
		if !appendMode && (err != nil || off < 0) {
			writeInfo(w, http.StatusBadRequest, fsInfoJSON{Code: "EINVAL"})
			return
		}
		f, err := os.OpenFile(name, flags, 0)
		if err != nil {
			writeErrno(w, err)
			return
		}
		defer f.Close()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWrite))
		if err != nil {
			writeInfo(w, http.StatusRequestEntityTooLarge, fsInfoJSON{Code: "EFBIG"})
			return
		}
		var n int
		if appendMode {
			n, err = f.Write(body)
		} else {
			n, err = f.WriteAt(body, off)
		}
		if err != nil {
			writeErrno(w, err)
			return
		}
		writeInfo(w, http.StatusOK, fsInfoJSON{N: int64(n)})
	case "stat":
		st, err := os.Stat(name)
		if err != nil {
			writeErrno(w, err)
			return
		}
		writeInfo(w, http.StatusOK, fsInfoJSON{Stat: newStatJSON(name, st)})
	default:
		writeInfo(w, http.StatusBadRequest, fsInfoJSON{Code: "EINVAL"})
	}
}

// portableStat fills what fs.FileInfo offers.
func portableStat(st fs.FileInfo) *statJSON {
	mt := st.ModTime().UnixMilli()
	return &statJSON{
		Mode: unixMode(st.Mode()), Nlink: 1, Size: st.Size(), Blksize: 4096,
		Blocks: (st.Size() + 511) / 512, AtimeMs: mt, MtimeMs: mt, CtimeMs: mt,
	}
}
