package trainer

import (
	"strings"
	"testing"
)

func TestStoredValues(t *testing.T) {
	vals := map[string][]uint16{"w": {1, 2, 3}}
	if v, err := StoredValues(vals, "w", 3, true); err != nil || len(v) != 3 || v[2] != 3 {
		t.Fatalf("present parameter: %v, %v", v, err)
	}
	if v, err := StoredValues(vals, "w.m", 4, false); err != nil || len(v) != 4 || v[0] != 0 || v[3] != 0 {
		t.Fatalf("missing state should start at zero: %v, %v", v, err)
	}
	if _, err := StoredValues(vals, "b", 3, true); err == nil || !strings.Contains(err.Error(), "parameter b missing") {
		t.Fatalf("missing parameter: %v", err)
	}
	if _, err := StoredValues(vals, "w", 5, true); err == nil || !strings.Contains(err.Error(), "tensor w: 3 values, the model needs 5") {
		t.Fatalf("wrong length: %v", err)
	}
}
