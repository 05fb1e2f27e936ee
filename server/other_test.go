//go:build !unix

package server

import "errors"

func mkfifo(string) error { return errors.New("no fifos") }
