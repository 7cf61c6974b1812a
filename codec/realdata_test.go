package codec

import (
	"path/filepath"
	"testing"

	"lcttop/internal/testtensors"
)

// TestRealTensorsRoundTrip: every BF16 tensor of every real file, under
// every preset and distribution, encodes to the reference bytes and back.
func TestRealTensorsRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("real tensors: skipped in -short mode")
	}
	for _, path := range testtensors.Files(t) {
		tensors := testtensors.LoadBF16(t, path)
		if len(tensors) == 0 {
			t.Fatalf("%s: no BF16 tensors", path)
		}
		for _, nt := range tensors {
			forEachOption(func(opt Options) {
				checkRoundTrip(t, filepath.Base(path)+":"+nt.Name, nt.Values, opt)
			})
		}
	}
}
