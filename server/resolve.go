package server

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// fileError answers a failure to find or open a file: 404 when the request
// names nothing servable (missing, or refused: see notServable), logging
// why when the cause is not simply a missing file; 503 when the server
// itself failed (out of file descriptors, an I/O error), which is logged.
func (h *handler) fileError(w http.ResponseWriter, r *http.Request, err error) {
	if status := fileErrorStatus(err); status != http.StatusNotFound {
		h.log.Printf("failed %s: %s", sanitize(r.URL.EscapedPath(), 200), sanitizeMsg(err.Error(), 300))
		unavailable(w, err)
		return
	}
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		h.log.Printf("refused %s: %s", sanitize(r.URL.EscapedPath(), 200), sanitizeMsg(err.Error(), 300))
	}
	http.NotFound(w, r)
}

// unavailable answers 503 for a server-side failure, asking the client to
// retry soon when it is a shortage (of file descriptors, memory) that
// passes.
func unavailable(w http.ResponseWriter, err error) {
	if isShortage(err) {
		w.Header().Set("Retry-After", "1")
	}
	http.Error(w, "503 service unavailable", http.StatusServiceUnavailable)
}

// fileErrorStatus maps an error finding or opening a requested file to the
// answer: 404 when the request names nothing servable, 503 for any other
// error, which is the server's fault (such as EMFILE: the process is out of
// file descriptors), not the request's.
func fileErrorStatus(err error) int {
	if notServable(err) {
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}

// notServable reports whether err means the requested name does not lead to
// a file that may be served: it does not exist, a component is no folder,
// symlinks loop or leave the root, it reaches a hidden name, or the name is
// too long.
func notServable(err error) bool {
	for _, target := range []error{fs.ErrNotExist, syscall.ENOTDIR, syscall.ELOOP, syscall.ENAMETOOLONG, errOutside, errHidden} {
		if errors.Is(err, target) {
			return true
		}
	}
	// os.Root's own error for a path that leaves it is unexported; resolve
	// finds such links first, but a link changed in between ends here.
	return strings.HasSuffix(err.Error(), "path escapes from parent")
}

// isShortage reports whether err is the process running short of a
// resource, which clears by itself.
func isShortage(err error) bool {
	for _, target := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.ENOBUFS, syscall.EAGAIN} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// Errors resolve gives for a name it refuses, wrapped in *fs.PathError.
var (
	errOutside = errors.New("symlink leads outside the folder")
	errHidden  = errors.New("symlink leads to a hidden name")
)

// maxSymlinks bounds the symlinks resolve follows, as the kernel does.
const maxSymlinks = 40

// resolve follows the symlinks in name (slash-separated, relative to root)
// and returns the path of what it names, with no symlink left in it. A
// target that is absolute or climbs above the root gives errOutside, one
// with a hidden component (x.txt -> .env, or -> ../.git/config) errHidden:
// the rules for request paths apply to where a link leads too.
func resolve(root *os.Root, name string) (string, error) {
	var done []string
	todo := strings.Split(name, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch {
		case c == "" || c == ".":
			continue
		case c == "..":
			if len(done) == 0 {
				return "", &fs.PathError{Op: "resolve", Path: name, Err: errOutside}
			}
			done = done[:len(done)-1]
			continue
		case strings.HasPrefix(c, "."):
			return "", &fs.PathError{Op: "resolve", Path: name, Err: errHidden}
		}
		p := path.Join(path.Join(done...), c)
		fi, err := root.Lstat(p)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if links++; links > maxSymlinks {
			return "", &fs.PathError{Op: "resolve", Path: name, Err: syscall.ELOOP}
		}
		link, err := root.Readlink(p)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(link) || filepath.VolumeName(link) != "" || strings.HasPrefix(filepath.ToSlash(link), "/") {
			return "", &fs.PathError{Op: "resolve", Path: name, Err: errOutside}
		}
		todo = append(strings.Split(filepath.ToSlash(link), "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}
