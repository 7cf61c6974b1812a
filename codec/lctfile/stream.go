package lctfile

import (
	"bufio"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"runtime"
	"sync"
	"unsafe"
)

// Progress is how far a streaming pack or unpack has come.
type Progress struct {
	InBytes  int64 // input bytes done
	InTotal  int64 // the input's size; -1 for a stream
	OutBytes int64
	Tensors  int // tensor segments written
	// TensorsTotal is how many tensor segments there are (an unpack knows
	// once it has read the segments it counts).
	TensorsTotal int
}

// Summary is what a streaming pack or unpack did.
type Summary struct {
	InBytes, OutBytes int64
	Tensors           int // tensor segments
	Encoded           int // of them stored as LCT tensors
}

// add counts a segment written.
func (s *Summary) add(seg *Segment, encoded bool) {
	if seg.Kind == KindTensor {
		s.Tensors++
		if encoded {
			s.Encoded++
		}
	}
}

// streamCodecs is one codec per worker of a stream: the caller's backend
// shared behind a lock, or a CPU codec each on one goroutine (the pieces
// spread over the cores).
func streamCodecs(b Backend, workers int) []Backend {
	if b != nil {
		return backends(b, workers)
	}
	out := make([]Backend, workers)
	for i := range out {
		out[i] = newCPUBackend(1)
	}
	return out
}

// streamBudget bounds the input bytes of the segments read but not yet
// written, beyond the two segments always let through (the workers code
// the next while the writer writes one): it bounds what a stream's buffers
// hold and how far the workers run ahead of the writer.
const streamBudget = 64 << 20

// alwaysIn is how many segments are let in whatever their size.
const alwaysIn = 2

// ioChunk is how much of a segment is checksummed or copied between two
// releases of its pages.
const ioChunk = 4 << 20

// budget lets segments in while their bytes fit, and always alwaysIn.
type budget struct {
	mu         sync.Mutex
	cond       *sync.Cond
	used, segs int64
}

func newBudget(ctx context.Context) *budget {
	b := &budget{}
	b.cond = sync.NewCond(&b.mu)
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	return b
}

func (b *budget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.segs >= alwaysIn && b.used+n > streamBudget {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.used += n
	b.segs++
	return nil
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.segs--
	b.cond.Broadcast()
	b.mu.Unlock()
}

// streamWorkers is opt.Workers, or one per core.
func streamWorkers(n int) int {
	if n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// crcWriter writes through a buffer, counting the bytes and keeping the
// CRC-32C of everything written (the .lct file's trailing CRC).
type crcWriter struct {
	w     *bufio.Writer
	crc   uint32
	n     int64
	noCRC bool // the bytes counted only
}

func newCRCWriter(w io.Writer) *crcWriter {
	return &crcWriter{w: bufio.NewWriterSize(w, 1<<20)}
}

// newCountingWriter is a crcWriter that keeps no CRC: a restored
// safetensors file has none of its own.
func newCountingWriter(w io.Writer) *crcWriter {
	c := newCRCWriter(w)
	c.noCRC = true
	return c
}

func (c *crcWriter) Write(p []byte) (int, error) {
	if !c.noCRC {
		c.crc = crc32.Update(c.crc, castagnoli, p)
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// chunks calls do on consecutive parts of b of at most ioChunk bytes, then
// releases each part's pages.
func chunks(in *Input, b []byte, do func([]byte) error) error {
	return eachChunk(b, do, in.Release)
}

// chunksInOrder is chunks for the writer, which goes through the input
// in order: each part's pages go with releaseBefore, a run at a time.
func chunksInOrder(in *Input, b []byte, do func([]byte) error) error {
	return eachChunk(b, do, in.releaseBefore)
}

// eachChunk calls do, then done, on consecutive parts of b of at most
// ioChunk bytes.
func eachChunk(b []byte, do func([]byte) error, done func([]byte)) error {
	for len(b) > 0 {
		part := b[:min(len(b), ioChunk)]
		b = b[len(part):]
		if err := do(part); err != nil {
			return err
		}
		done(part)
	}
	return nil
}

// littleEndian is whether this machine stores a uint16 as a file's BF16
// bytes are stored.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// u16Bytes is the memory of v as bytes (in the machine's byte order).
func u16Bytes(v []uint16) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 2*len(v))
}

// bf16View returns raw's values: the bytes themselves where this machine
// reads them so (little-endian, aligned), else a copy.
func bf16View(raw []byte) []uint16 {
	if len(raw) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(raw))
	if littleEndian && uintptr(p)%2 == 0 {
		return unsafe.Slice((*uint16)(p), len(raw)/2)
	}
	v := make([]uint16, len(raw)/2)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return v
}
