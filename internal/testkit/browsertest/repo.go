package browsertest

import (
	"path/filepath"
	"sync"

	"wasmllm/internal/testkit/repo"
)

var (
	rootOnce sync.Once
	root     string
)

// RepoRoot returns the repository root (repo.Root). It panics when there
// is none.
func RepoRoot() string {
	rootOnce.Do(func() {
		var err error
		if root, err = repo.Root(); err != nil {
			panic("browsertest: " + err.Error())
		}
	})
	return root
}

// RepoFile returns the absolute path of a slash-separated path relative to
// the repository root.
func RepoFile(rel string) string { return filepath.Join(RepoRoot(), filepath.FromSlash(rel)) }
