package browsertest

import (
	"os"
	"path/filepath"
	"sync"
)

var (
	rootOnce sync.Once
	root     string
)

// RepoRoot returns the repository root: the first folder above the working
// directory holding go.mod. It panics when there is none.
func RepoRoot() string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			panic(err)
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				return
			}
			up := filepath.Dir(dir)
			if up == dir {
				panic("browsertest: no go.mod above the working directory")
			}
			dir = up
		}
	})
	return root
}

// RepoFile returns the absolute path of a slash-separated path relative to
// the repository root.
func RepoFile(rel string) string { return filepath.Join(RepoRoot(), filepath.FromSlash(rel)) }
