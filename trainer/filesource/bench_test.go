package filesource

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkOpenBig opens the checkpoint LCTTOP_BIG_CHECKPOINT names (make
// one with go run ./scripts/gencheckpoint) and reports how soon the table
// came, how long the exact pass took, and the process's peak resident
// memory (VmHWM) against the file's size (docs/perf.md).
//
//	LCTTOP_BIG_CHECKPOINT=/tmp/big/model.safetensors go test ./trainer/filesource -run '^$' -bench OpenBig -benchtime 1x
func BenchmarkOpenBig(b *testing.B) {
	path := os.Getenv("LCTTOP_BIG_CHECKPOINT")
	if path == "" {
		b.Skip("set LCTTOP_BIG_CHECKPOINT to a large checkpoint (go run ./scripts/gencheckpoint)")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	var table, exact time.Duration
	for range b.N {
		start := time.Now()
		s, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		table = time.Since(start)
		for snap := range s.Snapshots() {
			if snap.File.Progress.Done() {
				break
			}
		}
		exact = time.Since(start)
		s.Stop()
	}
	hwm := peakRSS(b)
	b.ReportMetric(table.Seconds(), "table-s")
	b.ReportMetric(exact.Seconds(), "exact-s")
	b.ReportMetric(float64(hwm)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(hwm)/float64(fi.Size()), "peak-rss/file")
}

// peakRSS is VmHWM of this process, in bytes.
func peakRSS(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status: ", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("VmHWM not in /proc/self/status")
	return 0
}
