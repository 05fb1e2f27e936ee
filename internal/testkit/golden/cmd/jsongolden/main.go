// Command jsongolden converts JSON golden files (llama.cpp's logits, see
// testdata/README.md) into the .golden format that internal/testkit/golden reads,
// and checks each result bit for bit against its JSON.
//
//	go run ./internal/testkit/golden/cmd/jsongolden -o testdata/golden testdata/golden/*.json
//
// -every N thins the prompt rows (golden.Encode): the long goldens of the
// quantised models keep every 32nd position's logits.
//
// An MTP golden (NAME.mtp.json: trunk and MTP rows and a draft chain)
// becomes DIR/NAME.mtpgolden in its own compact form (golden.EncodeMTP).
//
// NAME.json becomes DIR/NAME.golden. Each file is read back from disk with
// the package's reader and compared with the JSON as golden.Read decoded
// it: every header field, every float32 bit pattern. Any error stops it with
// exit status 1, before the next file.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"wasmllm/internal/testkit/golden"
)

func main() {
	out := flag.String("o", "", "output folder (default: beside each JSON file)")
	every := flag.Int("every", 0, "keep only every N-th prompt row's logits, and the last (0: all)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: jsongolden [-o DIR] [-every N] FILE.json...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var in, outBytes int
	for _, p := range flag.Args() {
		n, m, err := convert(p, *out, *every)
		if err != nil {
			fmt.Fprintf(os.Stderr, "jsongolden: %s: %v\n", p, err)
			os.Exit(1)
		}
		in, outBytes = in+n, outBytes+m
	}
	fmt.Printf("%d files: %d bytes of JSON -> %d bytes\n", flag.NArg(), in, outBytes)
}

func convert(path, dir string, every int) (int, int, error) {
	if !strings.HasSuffix(path, ".json") {
		return 0, 0, fmt.Errorf("not a .json file")
	}
	js, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	encode, verify := func(b []byte) ([]byte, error) { return golden.Encode(b, every) }, golden.Verify
	if strings.HasSuffix(path, ".mtp.json") {
		encode, verify = golden.EncodeMTP, golden.VerifyMTP
	}
	enc, err := encode(js)
	if err != nil {
		return 0, 0, err
	}
	if dir == "" {
		dir = filepath.Dir(path)
	}
	dst := filepath.Join(dir, strings.TrimSuffix(filepath.Base(path), ".json")+".golden")
	if strings.HasSuffix(path, ".mtp.json") {
		dst = filepath.Join(dir, strings.TrimSuffix(filepath.Base(path), ".mtp.json")+".mtpgolden")
	}
	if err := os.WriteFile(dst, enc, 0o644); err != nil {
		return 0, 0, err
	}
	back, err := os.ReadFile(dst)
	if err != nil {
		return 0, 0, err
	}
	if err := verify(js, back); err != nil {
		return 0, 0, fmt.Errorf("%s does not match: %v", dst, err)
	}
	fmt.Printf("%s -> %s: %d -> %d bytes, identical\n", path, dst, len(js), len(back))
	return len(js), len(back), nil
}
