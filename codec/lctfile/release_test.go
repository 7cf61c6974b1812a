package lctfile

import (
	"os"
	"path/filepath"
	"testing"
)

// releaseBefore drops a mapped file's pages only in runs of ioChunk or
// more, and never the page its last byte lies in.
func TestReleaseBeforeInRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in")
	size := 3*ioChunk + 3*pageSize/2
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := OpenInput(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	step := int64(ioChunk/8 + 1)
	for in.Rest() > 0 {
		b, err := in.Next(min(step, in.Rest()))
		if err != nil {
			t.Fatal(err)
		}
		before := in.releasedTo
		in.releaseBefore(b)
		end := in.Offset()
		switch {
		case in.releasedTo%int64(pageSize) != 0:
			t.Fatalf("released to %d, not a page boundary", in.releasedTo)
		case in.releasedTo > end:
			t.Fatalf("released to %d, past the %d bytes read", in.releasedTo, end)
		case in.releasedTo != before && in.releasedTo-before < ioChunk:
			t.Fatalf("released %d bytes at once, fewer than %d", in.releasedTo-before, ioChunk)
		case in.releasedTo == before && end-end%int64(pageSize)-before >= ioChunk:
			t.Fatalf("kept %d..%d, a run of %d bytes or more", before, end, ioChunk)
		}
	}
	if in.releasedTo == 0 {
		t.Fatal("nothing released")
	}
}
