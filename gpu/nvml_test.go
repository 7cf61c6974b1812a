package gpu

import (
	"strings"
	"testing"
)

// TestNVMLNeverPanics opens NVML wherever the test runs: without a driver it
// must fail with a clear error; with one, a reading must name the GPU and
// have its memory figures in order.
func TestNVMLNeverPanics(t *testing.T) {
	n, err := OpenNVML()
	if err != nil {
		if !strings.Contains(err.Error(), "NVML") {
			t.Fatalf("OpenNVML error %q does not say it is NVML", err)
		}
		t.Logf("no GPU here: %v", err)
		var nilN *NVML
		if s := nilN.Status(); s.Available || s.Err == "" {
			t.Fatalf("nil NVML status %+v: want unavailable with a reason", s)
		}
		return
	}
	s := n.Status()
	if !s.Available || s.Name == "" || s.MemTotal == 0 || s.MemUsed > s.MemTotal {
		t.Fatalf("status %+v: want a named GPU with used <= total memory", s)
	}
	t.Logf("%s, driver %s: %d/%d MiB, SM %d MHz, %.0f W", s.Name, s.Driver, s.MemUsed>>20, s.MemTotal>>20, s.ClockSM, s.PowerW)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if s := n.Status(); s.Available {
		t.Fatal("a closed NVML still reports a reading")
	}
	if err := n.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
