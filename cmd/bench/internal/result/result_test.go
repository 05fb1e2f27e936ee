package result

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFastest(t *testing.T) {
	rows := []Kernel{
		{Name: "a", Ms: 3, Rate: 1},
		{Name: "b", Ms: 5, Rate: 2},
		{Name: "a", Ms: 2, Rate: 1.5},
		{Name: "b", Ms: 6, Rate: 1.6},
		{Name: "c", Ms: 1},
	}
	want := []Kernel{{Name: "a", Ms: 2, Rate: 1.5}, {Name: "b", Ms: 5, Rate: 2}, {Name: "c", Ms: 1}}
	if d := cmp.Diff(want, Fastest(rows)); d != "" {
		t.Errorf("Fastest (-want +got):\n%s", d)
	}
}
