// Package format turns the UI's figures into short, fixed-width text.
package format

import (
	"fmt"
	"math"
	"time"
)

// Bytes formats n bytes with a binary unit: "512 B", "1.4 KiB", "2.31 GiB".
func Bytes(n int64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := bytesAbs(uint64(n))
	if neg {
		return "-" + s
	}
	return s
}

// UBytes is Bytes for unsigned counts (NVML reports uint64).
func UBytes(n uint64) string { return bytesAbs(n) }

func bytesAbs(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(n)
	i := -1
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f %s", v, units[i])
	case v < 100:
		return fmt.Sprintf("%.1f %s", v, units[i])
	default:
		return fmt.Sprintf("%.0f %s", v, units[i])
	}
}

// Count formats an element count compactly: 256, 65.5k, 1.05M, 162M.
func Count(n int) string {
	v := float64(n)
	switch {
	case n < 10000:
		return fmt.Sprintf("%d", n)
	case n < 1e6:
		return trim(v/1e3) + "k"
	case n < 1e9:
		return trim(v/1e6) + "M"
	default:
		return trim(v/1e9) + "G"
	}
}

func trim(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

// Percent formats a fraction (0.0123) as a percentage ("1.23%"), with fewer
// decimals for large values so the width stays near 6 characters.
func Percent(f float64) string {
	p := 100 * f
	switch {
	case math.IsNaN(p) || math.IsInf(p, 0):
		return "—"
	case p == 0:
		return "0%"
	case math.Abs(p) < 0.01:
		return "<0.01%"
	case math.Abs(p) < 10:
		return fmt.Sprintf("%.2f%%", p)
	case math.Abs(p) < 100:
		return fmt.Sprintf("%.1f%%", p)
	default:
		return fmt.Sprintf("%.0f%%", p)
	}
}

// Duration formats a step time: "812µs", "3.41ms", "1.20s".
func Duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second && d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// Window formats a chart window: "30s", "5m", "1h".
func Window(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return fmt.Sprintf("%gs", d.Seconds())
	}
}
