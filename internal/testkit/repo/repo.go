// Package repo finds the repository the tools and tests run in.
package repo

import (
	"errors"
	"os"
	"path/filepath"
)

// Root returns the first folder above the working directory (or the
// working directory) holding go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = up
	}
}
