package lctfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/edsrzf/mmap-go"

	"lcttop/codec"
)

// Input is a file a streaming pack or unpack reads once, front to back: a
// regular file memory-mapped (its pages released as they are done with),
// or standard input ("-", or a FIFO or device) read as it comes.
type Input struct {
	name string
	m    mmap.MMap // a mapped file; nil for a stream or an empty file
	r    *bufio.Reader
	f    *os.File
	off  int64 // bytes handed out so far
	size int64 // -1 for a stream

	releasedTo int64 // a mapped file's bytes before it are released (releaseBefore)

	// A virtual input (OpenTorchInput): its parts in order, the place in
	// the first, and the mappings they lie in.
	parts   []part
	partOff int64
	maps    []mmap.MMap
}

// OpenInput opens path ("-": standard input) for reading once.
func OpenInput(path string) (*Input, error) {
	if path == "-" {
		return &Input{name: "standard input", r: bufio.NewReaderSize(os.Stdin, 1<<20), size: -1}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %w", path, pathReason(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: cannot read: %w", path, pathReason(err))
	}
	in := &Input{name: path, f: f, size: fi.Size()}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, fmt.Errorf("%s: cannot read: is a directory", path)
	case !fi.Mode().IsRegular():
		in.r, in.size = bufio.NewReaderSize(f, 1<<20), -1
		return in, nil
	case fi.Size() == 0:
		return in, nil
	}
	if in.m, err = mmap.Map(f, mmap.RDONLY, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: cannot map: %w", path, err)
	}
	adviseSequential(in.m)
	return in, nil
}

// Name is the input as messages name it.
func (in *Input) Name() string { return in.name }

// Size is the input's length, -1 for a stream.
func (in *Input) Size() int64 { return in.size }

// Offset is how many bytes have been read.
func (in *Input) Offset() int64 { return in.off }

// Next returns the next n bytes: for a mapped file a part of the mapping,
// for a stream a new buffer. Fewer bytes than n is io.ErrUnexpectedEOF.
func (in *Input) Next(n int64) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("a length of %d bytes", n)
	}
	if in.maps != nil || in.parts != nil {
		return in.nextParts(n)
	}
	if in.r == nil {
		if n > in.size-in.off {
			return nil, io.ErrUnexpectedEOF
		}
		b := in.m[in.off : in.off+n : in.off+n]
		in.off += n
		return b, nil
	}
	// Grow as bytes arrive, so that a damaged length asks for no more
	// memory than the stream holds.
	const step = 64 << 20
	buf := make([]byte, 0, min(n, step))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, min(n-int64(len(buf)), int64(cap(buf))))...)[:len(buf)]
		}
		k, err := io.ReadFull(in.r, buf[len(buf):min(int64(cap(buf)), n)])
		buf = buf[:len(buf)+k]
		in.off += int64(k)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// AtEnd reports whether every byte has been read; for a stream it reads
// ahead one byte to tell.
func (in *Input) AtEnd() bool {
	if in.r == nil {
		return in.off == in.size
	}
	_, err := in.r.Peek(1)
	return err != nil
}

// Rest is how many bytes are left of a mapped file (-1 for a stream).
func (in *Input) Rest() int64 {
	if in.r != nil {
		return -1
	}
	return in.size - in.off
}

// Release tells the kernel b's pages (a part of what Next returned) are
// done with: a mapping's leave the resident set (the page cache keeps
// them); a stream's buffer is simply dropped.
func (in *Input) Release(b []byte) {
	if len(b) == 0 {
		return
	}
	if in.m != nil && inside(in.m, b) {
		dontNeed(in.m, b)
	}
	in.releaseIn(b)
}

// sampleHistogram is codec.SampleHistogram of vals, the values of raw (a
// part of what Next returned). A mapped tensor's sample is read from the
// file: touching 4,096 scattered places of the mapping would map the pages
// around each as well, a quarter of a gigabyte at once.
func (in *Input) sampleHistogram(raw []byte, vals []uint16) codec.Histogram {
	n := len(vals)
	if in.m == nil || n <= codec.SampleSize || !inside(in.m, raw) {
		return codec.SampleHistogram(vals)
	}
	base := mappedOffset(in.m, raw)
	var h codec.Histogram
	var b [2]byte
	for k := range codec.SampleSize {
		i := codec.SampleIndex(k, n)
		if _, err := in.f.ReadAt(b[:], base+2*int64(i)); err != nil {
			return codec.SampleHistogram(vals) // the mapping reads what the file would not
		}
		h[byte(binary.LittleEndian.Uint16(b[:])>>7)]++
	}
	return h
}

// Close unmaps and closes the file.
func (in *Input) Close() error {
	var err error
	if in.m != nil {
		err = in.m.Unmap()
		in.m = nil
	}
	if in.f != nil {
		if e := in.f.Close(); err == nil {
			err = e
		}
	}
	for _, m := range in.maps {
		if e := m.Unmap(); err == nil {
			err = e
		}
	}
	in.maps = nil
	return err
}

// inside reports whether b lies within all.
func inside(all, b []byte) bool {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(all)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(all))
}

// mappedOffset is where b (inside all) starts in all.
func mappedOffset(all, b []byte) int64 {
	return int64(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(all))))
}
