// Command tokenize encodes, decodes and renders chats with a model's
// tokenizer, reading JSON lines on stdin and writing one JSON line per input.
//
//	go run ./cmd/tokenize -tokenizer PATH [-special] [-decode | -chat]
//
// PATH is a tokenizer.json, a folder holding one, a GGUF file or a llama2.c
// tokenizer.bin. Input lines are {"text": "..."} (output {"ids": [...]}),
// with -decode {"ids": [...]} (output {"text": "..."}), with -chat
// {"messages": [...], "kwargs": {...}} (output {"rendered": "...", "ids":
// [...]}). -special adds the model's default special tokens (BOS) as Hugging
// Face's add_special_tokens=true does. A bad line yields {"error": "line N:
// ..."} and the rest are still processed; the exit status is then 1.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"wasmllm/source"
	"wasmllm/tokenizer"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("tokenizer", "", "tokenizer.json, a folder holding one, a GGUF file or a llama2.c tokenizer.bin")
	special := fs.Bool("special", false, "add the model's default special tokens (BOS)")
	decode := fs.Bool("decode", false, `read {"ids": [...]} and write {"text": "..."}`)
	chat := fs.Bool("chat", false, `read {"messages": [...], "kwargs": {...}} and write {"rendered": "...", "ids": [...]}`)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *path == "" || fs.NArg() > 0 || (*decode && *chat) {
		fmt.Fprintln(stderr, "usage: tokenize -tokenizer PATH [-special] [-decode | -chat] < lines.jsonl")
		return 2
	}
	tk, err := load(*path)
	if err != nil {
		fmt.Fprintln(stderr, "tokenize:", err)
		return 1
	}
	handle := func(line []byte) (any, error) { return encodeLine(tk, line, *special) }
	switch {
	case *decode:
		handle = func(line []byte) (any, error) { return decodeLine(tk, line) }
	case *chat:
		handle = func(line []byte) (any, error) { return chatLine(tk, line, *special) }
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	in := bufio.NewReader(stdin)
	status := 0
	for n := 1; ; n++ {
		line, err := in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				fmt.Fprintln(stderr, "tokenize: reading input:", err)
				return 1
			}
			break
		}
		res, herr := handle(bytes.TrimRight(line, "\r\n"))
		if herr != nil {
			status = 1
			res = map[string]string{"error": fmt.Sprintf("line %d: %v", n, herr)}
		}
		if err := enc.Encode(res); err != nil {
			fmt.Fprintln(stderr, "tokenize: writing output:", err)
			return 1
		}
	}
	return status
}

// load opens a tokenizer.json (or its folder), a GGUF file's vocabulary,
// or a llama2.c tokenizer.bin.
func load(path string) (*tokenizer.Tokenizer, error) {
	t, err := source.OpenTokenizer(path, 0)
	if err != nil {
		return nil, err
	}
	return t.Tok, nil
}

// strict decodes one JSON object into v, rejecting unknown fields.
func strict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

func encodeLine(tk *tokenizer.Tokenizer, line []byte, special bool) (any, error) {
	var in struct {
		Text *string `json:"text"`
	}
	if err := strict(line, &in); err != nil {
		return nil, err
	}
	if in.Text == nil {
		return nil, errors.New(`missing "text"`)
	}
	ids, err := tk.Encode(*in.Text, special)
	if err != nil {
		return nil, err
	}
	return idsOut{IDs: nonNil(ids)}, nil
}

func decodeLine(tk *tokenizer.Tokenizer, line []byte) (any, error) {
	var in struct {
		IDs *[]int32 `json:"ids"`
	}
	if err := strict(line, &in); err != nil {
		return nil, err
	}
	if in.IDs == nil {
		return nil, errors.New(`missing "ids"`)
	}
	for i, id := range *in.IDs {
		if id < 0 || int(id) >= tk.VocabSize() {
			return nil, fmt.Errorf("ids[%d] = %d is outside the vocabulary of %d", i, id, tk.VocabSize())
		}
	}
	return struct {
		Text string `json:"text"`
	}{tk.Decode(*in.IDs)}, nil
}

func chatLine(tk *tokenizer.Tokenizer, line []byte, special bool) (any, error) {
	var in struct {
		Messages *[]tokenizer.Message       `json:"messages"`
		Kwargs   map[string]json.RawMessage `json:"kwargs"`
	}
	if err := strict(line, &in); err != nil {
		return nil, err
	}
	if in.Messages == nil {
		return nil, errors.New(`missing "messages"`)
	}
	kw := make(map[string]any, len(in.Kwargs))
	for k, v := range in.Kwargs {
		kw[k] = v
	}
	rendered, err := tk.RenderChat(*in.Messages, tokenizer.ChatOptions{Kwargs: kw})
	if err != nil {
		return nil, err
	}
	ids, err := tk.Encode(rendered, special)
	if err != nil {
		return nil, err
	}
	return struct {
		Rendered string  `json:"rendered"`
		IDs      []int32 `json:"ids"`
	}{rendered, nonNil(ids)}, nil
}

type idsOut struct {
	IDs []int32 `json:"ids"`
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}
