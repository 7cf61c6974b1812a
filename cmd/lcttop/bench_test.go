package main

import (
	"reflect"
	"testing"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("1Mi, 16Mi,1000,")
	if err != nil || !reflect.DeepEqual(got, []int{1 << 20, 16 << 20, 1000}) {
		t.Fatalf("parseSizes: %v, %v", got, err)
	}
	if got, err := parseSizes(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"x", "-1", "0", "3000Mi"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) accepted", bad)
		}
	}
	if s := joinSizes([]int{1 << 20, 1000}); s != "1Mi,1000" {
		t.Fatalf("joinSizes: %q", s)
	}
}
