package chromium

import (
	"io"
	"testing"
)

func TestTailBuffer(t *testing.T) {
	b := &TailBuffer{Max: 4}
	io.WriteString(b, "abc")
	io.WriteString(b, "defg")
	if b.String() != "defg" {
		t.Errorf("tail = %q", b.String())
	}
}

func TestExtraFlags(t *testing.T) {
	if n := len(ExtraFlags([]string{"--a", "b=1", "--c=x=y"})); n != 3 {
		t.Errorf("%d options", n)
	}
}
