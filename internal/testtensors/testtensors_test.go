package testtensors

import "testing"

func TestLoadsEveryFile(t *testing.T) {
	for _, f := range Files(t) {
		ts := LoadBF16(t, f)
		if len(ts) == 0 {
			t.Errorf("%s: no BF16 tensors", f)
		}
		for _, x := range ts {
			if len(x.Values) == 0 {
				t.Errorf("%s: %s is empty", f, x.Name)
			}
		}
	}
}
