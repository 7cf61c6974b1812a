package filesource

import (
	"fmt"
	"os"

	"github.com/edsrzf/mmap-go"
)

// mapping is one file mapped read-only.
type mapping struct {
	path string
	data mmap.MMap // nil for an empty file
	size int64
}

// mapFile maps path read-only; an empty file maps to no bytes.
func mapFile(path string) (*mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %w", path, pathReason(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %w", path, pathReason(err))
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s: is a folder, not a file", path)
	}
	m := &mapping{path: path, size: fi.Size()}
	if m.size == 0 {
		return m, nil
	}
	if m.data, err = mmap.Map(f, mmap.RDONLY, 0); err != nil {
		return nil, fmt.Errorf("%s: cannot map: %w", path, err)
	}
	adviseRandom(m.data)
	return m, nil
}

// bytes returns the whole mapped file.
func (m *mapping) bytes() []byte { return m.data }

// release tells the kernel the pages of b (a part of this mapping) are not
// needed now: they leave this process's resident set (the page cache keeps
// them) and fault back in if read again.
func (m *mapping) release(b []byte) {
	if len(b) == 0 || len(m.data) == 0 {
		return
	}
	dontNeed(m.data, b)
}

// prefetch starts reading b's pages (a part of this mapping).
func (m *mapping) prefetch(b []byte) {
	if len(b) == 0 || len(m.data) == 0 {
		return
	}
	willNeed(m.data, b)
}

func (m *mapping) close() error {
	if m.data == nil {
		return nil
	}
	err := m.data.Unmap()
	m.data = nil
	return err
}
