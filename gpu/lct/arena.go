package lct

import (
	"encoding/binary"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
)

// histArena holds the exponent histograms (256 uint64 each) the open
// window's encodes count, one slot per encode from the first, in one device
// buffer of the run's Memory (codec scratch), so that CloseWindow reads
// them in one copy. The next window reuses the slots: its counts are
// queued after the copy.
type histArena struct {
	mem   Memory // the run it belongs to (a codec may serve several in turn)
	buf   gpu.Ptr
	slots int
	used  int // slots the open window took
}

const histSlotBytes = gpu.HistogramBytes

// take returns the open window's next slot, growing the arena (and keeping
// the window's counts) when it is full.
func (a *histArena) take(mem Memory, dev *gpu.Device) (int, error) {
	if a.mem != mem {
		// Another run: the last one's arena went with its memory.
		*a = histArena{mem: mem}
	}
	if a.used == a.slots {
		n := max(64, 2*a.slots)
		p, err := mem.AllocSide(session.CodecScratch, int64(n*histSlotBytes))
		if err != nil {
			return 0, err
		}
		if err := dev.AfterDefault(); err != nil {
			mem.Free(p)
			return 0, err
		}
		if a.buf != 0 {
			bytes := a.used * histSlotBytes
			if err := dev.CopyBuffer(gpu.External(p, bytes), gpu.External(a.buf, bytes), bytes); err != nil {
				mem.Free(p)
				return 0, err
			}
			pt, err := dev.Point()
			if err != nil {
				mem.Free(p)
				return 0, err
			}
			mem.Touch(a.buf, pt)
			mem.Free(a.buf)
		}
		a.buf, a.slots = p, n
	}
	a.used++
	return a.used - 1, nil
}

// histAt is histogram i of a window's arena read back.
func histAt(b []byte, i int) (full codec.Histogram) {
	b = b[i*histSlotBytes:]
	for e := range 256 {
		full[e] = binary.LittleEndian.Uint64(b[8*e:])
	}
	return full
}
