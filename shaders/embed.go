package shaders

import (
	"embed"
	"fmt"
	"io/fs"
)

// FS holds every .wgsl file of this directory.
//
//go:embed *.wgsl
var FS embed.FS

// Source returns the WGSL source of a file such as "embed.wgsl".
func Source(name string) (string, error) {
	b, err := fs.ReadFile(FS, name)
	if err != nil {
		return "", fmt.Errorf("shaders: %w", err)
	}
	return string(b), nil
}

// Path is the repository path of a shader file, for error messages:
// Path("embed.wgsl") == "shaders/embed.wgsl".
func Path(name string) string { return "shaders/" + name }
