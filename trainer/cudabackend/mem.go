package cudabackend

import (
	"fmt"
	"math/bits"
	"sort"

	"lcttop/gpu"
	"lcttop/trainer"
)

// align is the granularity of device allocations (cuMemAlloc's alignment).
const align = 256

// alignUp is bytes rounded up to align: what an allocation of bytes takes.
func alignUp(bytes int64) int64 { return (bytes + align - 1) / align * align }

// devicePool caches device memory between uses: a block freed by one step is
// handed out again for the same size class at the next, so training steps
// do not call cuMemAlloc and cuMemFree (which waits for the GPU). Sizes
// round up to 256 bytes up to 4 KiB, to a sixteenth of the power of two
// below them up to 1 MiB, and to 64 KiB above (sizeClass), so that a
// compressed tensor whose size moves by a few bytes from one step to the
// next reuses its block. Classes not used during
// a step are given back to the device after it (TrimUnused), so sizes that
// drift do not pile up. Both runs of a training draw on one devicePool.
type devicePool struct {
	dev     Device
	free    map[int64][]pooled
	lastUse map[int64]int // generation of the last get or put of a class
	gen     int
	cached  int64 // bytes held in free lists
	held    int64 // bytes allocated from the device, in use or cached
	peak    int64 // largest held
	allocs  int   // device allocations made (the cache missed)
	// fence orders the default stream after a side stream's use of a
	// block (see sideFence); nil when nothing runs on a side stream.
	fence sideFence
}

// pooled is a cached block and the side stream's point up to which the
// side stream may still use it (0: it never did).
type pooled struct {
	ptr  gpu.Ptr
	side uint64
}

// sideFence is a codec whose work runs on a stream of its own beside the
// trainer's (gpuCodec on gpu's side stream). A block its work used may go
// back to the pool before that work is done; the default stream's first
// user of the block waits for it (Hold), and the codec orders its own
// users after the default stream's work itself.
type sideFence interface {
	// Hold makes the default stream's later work wait for the side
	// stream's work up to point.
	Hold(point uint64) error
}

// SetFence makes the pool order reused blocks after f's side stream.
func (p *devicePool) SetFence(f sideFence) { p.fence = f }

// Allocs is how many device allocations the pool has made.
func (p *devicePool) Allocs() int { return p.allocs }

// newDevicePool returns an empty pool on dev.
func newDevicePool(dev Device) *devicePool {
	return &devicePool{dev: dev, free: map[int64][]pooled{}, lastUse: map[int64]int{}}
}

// Held is what the pool has allocated from the device now, and at most.
func (p *devicePool) Held() (now, peak int64) { return p.held, p.peak }

// sizeClass is the block size that serves a request of bytes: up to 4 KiB
// a multiple of 256 bytes; up to 1 MiB a sixteenth of the power of two
// below (at most 6.25% more than asked), so that the overflow areas and
// streams of compressed tensors, whose sizes move by a few percent from one
// step to the next, mostly keep their block instead of a cuMemAlloc each
// (and a cuMemFree at the trim); above, a multiple of 64 KiB.
func sizeClass(bytes int64) int64 {
	const small, grain = 1 << 20, 64 << 10
	if bytes > small {
		return (bytes + grain - 1) / grain * grain
	}
	g := int64(align)
	if bytes > 4<<10 {
		g = int64(1) << (bits.Len64(uint64(bytes-1)) - 1 - 4)
	}
	return (bytes + g - 1) / g * g
}

// get returns a block for bytes; one the side stream used is ordered after
// that use, unless side says the side stream takes it (its work is in
// order, and the codec orders it after the default stream's).
func (p *devicePool) get(bytes int64, side bool) (gpu.Ptr, error) {
	c := sizeClass(bytes)
	p.lastUse[c] = p.gen
	if l := p.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		if b.side != 0 && !side && p.fence != nil {
			if err := p.fence.Hold(b.side); err != nil {
				return 0, err
			}
		}
		p.free[c] = l[:len(l)-1]
		p.cached -= c
		return b.ptr, nil
	}
	ptr, err := p.dev.Alloc(c)
	if err != nil && p.cached > 0 {
		// Give the cache back and try once more.
		if terr := p.Trim(); terr != nil {
			return 0, terr
		}
		ptr, err = p.dev.Alloc(c)
	}
	if err != nil {
		return 0, err
	}
	p.held += c
	p.allocs++
	p.peak = max(p.peak, p.held)
	return ptr, nil
}

func (p *devicePool) put(ptr gpu.Ptr, bytes int64, side uint64) {
	c := sizeClass(bytes)
	p.lastUse[c] = p.gen
	p.free[c] = append(p.free[c], pooled{ptr, side})
	p.cached += c
}

// Trim frees every cached block.
func (p *devicePool) Trim() error { return p.trim(func(int64) bool { return true }) }

// TrimUnused frees the cached blocks of every size class not used since the
// last TrimUnused, and starts a new generation (call it after each step).
func (p *devicePool) TrimUnused() error {
	gen := p.gen
	err := p.trim(func(c int64) bool { return p.lastUse[c] < gen })
	p.gen++
	return err
}

func (p *devicePool) trim(drop func(class int64) bool) error {
	sizes := make([]int64, 0, len(p.free))
	for s := range p.free {
		if drop(s) {
			sizes = append(sizes, s)
		}
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	for _, s := range sizes {
		for _, b := range p.free[s] {
			if b.side != 0 {
				// The side stream's work may still use a block: let it end
				// before any is given back.
				if err := p.dev.Sync(); err != nil {
					return err
				}
				break
			}
		}
	}
	for _, s := range sizes {
		for _, b := range p.free[s] {
			if err := p.dev.Free(b.ptr); err != nil {
				return err
			}
			p.held -= s
			p.cached -= s
		}
		delete(p.free, s)
		delete(p.lastUse, s)
	}
	return nil
}

// Mem is one run's device memory: every allocation goes through its ledger
// (live and peak bytes per category, and the budget), and through the
// shared pool.
type Mem struct {
	pool   *devicePool
	ledger *trainer.Ledger
	sizes  map[gpu.Ptr]allocation
	live   int64 // the ledger's live total, kept here to read without its lock and maps
	watch  highWater
	// sideUse is, per block the codec's side stream used, the point of
	// its last use; freeTag, when set, is that point for every block
	// freed until it is cleared (a compressed tensor's sections).
	sideUse map[gpu.Ptr]uint64
	freeTag uint64
}

// Touch records that the side stream uses block ptr up to point: whoever
// takes the block after it is freed waits for that point (devicePool.get).
func (m *Mem) Touch(ptr gpu.Ptr, point uint64) {
	if point == 0 {
		return
	}
	if m.sideUse == nil {
		m.sideUse = map[gpu.Ptr]uint64{}
	}
	m.sideUse[ptr] = max(m.sideUse[ptr], point)
}

// freeTagged frees what free frees as blocks the side stream used up to
// point.
func (m *Mem) freeTagged(point uint64, free func()) {
	prev := m.freeTag
	m.freeTag = max(prev, point)
	defer func() { m.freeTag = prev }()
	free()
}

// highWater follows the run's highest live bytes while on, not counting
// the views a phase decoded ahead of their use (ahead): what the phase
// needs on top of its start whether or not it decodes ahead (see ahead.go).
type highWater struct {
	on    bool
	ahead int64
	high  int64
}

// startWatch starts following the high water from what is live now.
func (m *Mem) startWatch() {
	m.watch = highWater{on: true, high: m.live}
}

// stopWatch stops following and returns the highest live bytes, views
// decoded ahead not counted, since startWatch.
func (m *Mem) stopWatch() int64 {
	h := m.watch.high
	m.watch = highWater{}
	return h
}

// Live is the run's live bytes, as its ledger counts them.
func (m *Mem) Live() int64 { return m.live }

type allocation struct {
	bytes int64
	cat   trainer.Category
}

// newRunMem returns a run's memory with its own ledger (budget 0: none).
func newRunMem(pool *devicePool, budget int64) *Mem {
	return &Mem{pool: pool, ledger: trainer.NewLedger(budget), sizes: map[gpu.Ptr]allocation{}}
}

// Ledger is the run's accounting.
func (m *Mem) Ledger() *trainer.Ledger { return m.ledger }

// Dev is the device the memory lives on.
func (m *Mem) Dev() Device { return m.pool.dev }

// Alloc returns bytes of device memory counted in category c; it fails
// when the ledger's budget would be exceeded or the device is full.
func (m *Mem) Alloc(c trainer.Category, bytes int64) (gpu.Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("device allocation of %d bytes of %s", bytes, c)
	}
	return m.alloc(c, bytes, false)
}

// AllocSide is Alloc for memory only the codec's side stream uses (it
// orders that use after the default stream's work itself).
func (m *Mem) AllocSide(c trainer.Category, bytes int64) (gpu.Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("device allocation of %d bytes of %s", bytes, c)
	}
	return m.alloc(c, bytes, true)
}

func (m *Mem) alloc(c trainer.Category, bytes int64, side bool) (gpu.Ptr, error) {
	// The ledger counts what the block takes on the device: its pool size
	// class, not the bytes asked for.
	bytes = sizeClass(alignUp(bytes))
	if err := m.ledger.Alloc(c, bytes); err != nil {
		return 0, err
	}
	ptr, err := m.pool.get(bytes, side)
	if err != nil {
		m.ledger.Free(c, bytes)
		return 0, fmt.Errorf("%d bytes of %s: %w", bytes, c, err)
	}
	m.sizes[ptr] = allocation{bytes, c}
	m.live += bytes
	if m.watch.on {
		m.watch.high = max(m.watch.high, m.live-m.watch.ahead)
	}
	return ptr, nil
}

// Free returns memory from Alloc to the pool.
func (m *Mem) Free(ptr gpu.Ptr) {
	a, ok := m.sizes[ptr]
	if !ok {
		panic(fmt.Sprintf("cudabackend: free of %#x, not allocated by this run", uintptr(ptr)))
	}
	delete(m.sizes, ptr)
	m.live -= a.bytes
	m.ledger.Free(a.cat, a.bytes)
	side := m.freeTag
	if u, ok := m.sideUse[ptr]; ok {
		side = max(side, u)
		delete(m.sideUse, ptr)
	}
	m.pool.put(ptr, a.bytes, side)
}

// Charge counts delta bytes more (or fewer, when negative) in category c
// of the run's ledger: memory the run uses that it did not allocate itself
// (its codec device's own buffers).
func (m *Mem) Charge(c trainer.Category, delta int64) error {
	switch {
	case delta > 0:
		if err := m.ledger.Alloc(c, delta); err != nil {
			return err
		}
	case delta < 0:
		m.ledger.Free(c, -delta)
	}
	m.live += delta
	if m.watch.on {
		m.watch.high = max(m.watch.high, m.live-m.watch.ahead)
	}
	return nil
}

// Relabel moves an allocation to another category (the logits buffer
// becomes the loss gradient in place).
func (m *Mem) Relabel(ptr gpu.Ptr, to trainer.Category) error {
	a, ok := m.sizes[ptr]
	if !ok {
		return fmt.Errorf("relabel of %#x, not allocated by this run", uintptr(ptr))
	}
	m.ledger.Free(a.cat, a.bytes)
	if err := m.ledger.Alloc(to, a.bytes); err != nil {
		m.ledger.Alloc(a.cat, a.bytes)
		return err
	}
	m.sizes[ptr] = allocation{a.bytes, to}
	return nil
}

// FreeAll returns every allocation of the run to the pool.
func (m *Mem) FreeAll() {
	for ptr := range m.sizes {
		m.Free(ptr)
	}
}
