package format

import (
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	cases := map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.00 KiB", 1536: "1.50 KiB",
		10 * 1024 * 1024: "10.0 MiB", 200 << 30: "200 GiB", -2048: "-2.00 KiB",
	}
	for n, want := range cases {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	cases := map[int]string{256: "256", 9999: "9999", 65536: "65.5k", 1048576: "1.05M", 162000000: "162M"}
	for n, want := range cases {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPercent(t *testing.T) {
	cases := map[float64]string{0: "0%", 0.00001: "<0.01%", 0.0123: "1.23%", 0.305: "30.5%", 1: "100%", -0.05: "-5.00%"}
	for f, want := range cases {
		if got := Percent(f); got != want {
			t.Errorf("Percent(%g) = %q, want %q", f, got, want)
		}
	}
}

func TestDurationAndWindow(t *testing.T) {
	if got := Duration(812 * time.Microsecond); got != "812µs" {
		t.Errorf("Duration = %q", got)
	}
	if got := Duration(3410 * time.Microsecond); got != "3.41ms" {
		t.Errorf("Duration = %q", got)
	}
	if got := Duration(250 * time.Millisecond); got != "250ms" {
		t.Errorf("Duration = %q", got)
	}
	if got := Duration(0); got != "—" {
		t.Errorf("Duration(0) = %q", got)
	}
	for d, want := range map[time.Duration]string{30 * time.Second: "30s", 5 * time.Minute: "5m", time.Hour: "1h", 1500 * time.Millisecond: "1.5s"} {
		if got := Window(d); got != want {
			t.Errorf("Window(%v) = %q, want %q", d, got, want)
		}
	}
}
