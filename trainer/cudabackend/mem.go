package cudabackend

import (
	"fmt"

	"lcttop/gpu"
	"lcttop/gpu/lct"
	"lcttop/session"
	"lcttop/trainer"
)

// Mem is one run's device memory: every allocation goes through its ledger
// (live and peak bytes per category, and the budget), and through the
// shared pool. It is the memory of the run's codec too (lct.Memory).
type Mem struct {
	pool   *devicePool
	ledger *trainer.Ledger
	sizes  map[gpu.Ptr]allocation
	live   int64 // the ledger's live total, kept here to read without its lock and maps
	watch  highWater
	// sideUse is, per block the codec's side stream used, the point of
	// its last use.
	sideUse map[gpu.Ptr]uint64
}

var (
	_ lct.Memory   = (*Mem)(nil)
	_ lct.Shrinker = (*Mem)(nil)
)

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

// highWater follows the run's highest live bytes while on, not counting
// the views a phase decoded ahead of their use (ahead): what the phase
// needs on top of its start whether or not it decodes ahead (see ahead.go).
type highWater struct {
	on    bool
	ahead int64
	high  int64
}

// startWatch starts following the high water from what is live now but
// ahead bytes of views decoded ahead.
func (m *Mem) startWatch(ahead int64) {
	m.watch = highWater{on: true, high: m.live - ahead, ahead: ahead}
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
	cat   session.Category
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
func (m *Mem) Alloc(c session.Category, bytes int64) (gpu.Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("device allocation of %d bytes of %s", bytes, c)
	}
	return m.alloc(c, bytes, false)
}

// AllocSide is Alloc for memory only the codec's side stream uses (it
// orders that use after the default stream's work itself).
func (m *Mem) AllocSide(c session.Category, bytes int64) (gpu.Ptr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("device allocation of %d bytes of %s", bytes, c)
	}
	return m.alloc(c, bytes, true)
}

func (m *Mem) alloc(c session.Category, bytes int64, side bool) (gpu.Ptr, error) {
	// The ledger counts what the block takes in the pool, not the bytes
	// asked for.
	bytes = alignUp(bytes)
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
	side := m.sideUse[ptr]
	delete(m.sideUse, ptr)
	m.pool.put(ptr, side)
}

// Shrink keeps the first bytes of block ptr and gives the rest back to the
// pool (lct.Shrinker): the ledger counts the block's new size from now on.
func (m *Mem) Shrink(ptr gpu.Ptr, bytes int64) bool {
	a, ok := m.sizes[ptr]
	if !ok {
		panic(fmt.Sprintf("cudabackend: shrink of %#x, not allocated by this run", uintptr(ptr)))
	}
	bytes = alignUp(max(bytes, 1))
	if bytes >= a.bytes || !m.pool.shrink(ptr, bytes, m.sideUse[ptr]) {
		return false
	}
	m.ledger.Free(a.cat, a.bytes-bytes)
	m.live -= a.bytes - bytes
	m.sizes[ptr] = allocation{bytes, a.cat}
	return true
}

// Upload copies src to dst on the trainer's stream.
func (m *Mem) Upload(dst gpu.Ptr, src []byte) error { return m.pool.dev.Upload(dst, src) }

// Download copies src to dst once the trainer's work queued before it is
// done.
func (m *Mem) Download(dst []byte, src gpu.Ptr) error { return m.pool.dev.Download(dst, src) }

// Charge counts delta bytes more (or fewer, when negative) in category c
// of the run's ledger: memory the run uses that it did not allocate itself
// (its codec device's own buffers).
func (m *Mem) Charge(c session.Category, delta int64) error {
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
func (m *Mem) Relabel(ptr gpu.Ptr, to session.Category) error {
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
