package torchfile

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pastEndArchive rewrites a torch.save file with its largest storage record
// last and emptied, its zip headers still claiming the full size.
func pastEndArchive(t *testing.T, name string) []byte {
	z, err := zip.OpenReader(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	var largest *zip.File
	for _, f := range z.File {
		if strings.Contains(f.Name, "/data/") && (largest == nil || f.UncompressedSize64 > largest.UncompressedSize64) {
			largest = f
		}
	}
	var out bytes.Buffer
	w := zip.NewWriter(&out)
	for _, f := range z.File {
		if f == largest {
			continue
		}
		if err := w.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	h := largest.FileHeader
	h.CRC32 = 0
	if _, err := w.CreateRaw(&h); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestStorageRecordPastEnd opens a file whose storage record claims bytes
// the archive does not hold: one error naming the tensor, no extent past the end.
func TestStorageRecordPastEnd(t *testing.T) {
	b := pastEndArchive(t, "adam.pt")
	p := filepath.Join(t.TempDir(), "past-end.pt")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cp, err := Open(p)
	if err == nil {
		for _, x := range cp.Tensors {
			for _, e := range x.Extents {
				if e.Offset+e.Length > int64(len(b)) {
					t.Fatalf("tensor %s: extent %+v past the end of the %d-byte file", x.Name, e, len(b))
				}
			}
		}
		t.Fatal("opened a file whose storage record runs past its end")
	}
	if !strings.Contains(err.Error(), "tensor ") || !strings.Contains(err.Error(), "past the end") {
		t.Fatalf("error %q does not name the tensor and the record past the end", err)
	}
}

// TestWritePastEndCorpus writes the fuzz corpus entry when PAST_END_CORPUS names a path.
func TestWritePastEndCorpus(t *testing.T) {
	p := os.Getenv("PAST_END_CORPUS")
	if p == "" {
		t.Skip("PAST_END_CORPUS unset")
	}
	b := pastEndArchive(t, "adam.pt")
	if err := os.WriteFile(p, []byte("go test fuzz v1\n[]byte("+strconv.Quote(string(b))+")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
