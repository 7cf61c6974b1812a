package gpu

import "sync"

// driverMemory counts the device memory a Device holds from the driver,
// through every path (its own buffers and the compute view's allocations):
// what the GPU sees this process use, less the context's own footprint.
type driverMemory struct {
	mu         sync.Mutex
	sizes      map[Ptr]int64
	now, peak  int64
	allocCalls int
}

func (m *driverMemory) add(p Ptr, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sizes == nil {
		m.sizes = map[Ptr]int64{}
	}
	m.sizes[p] = int64(bytes)
	m.now += int64(bytes)
	m.peak = max(m.peak, m.now)
	m.allocCalls++
}

func (m *driverMemory) remove(p Ptr) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now -= m.sizes[p]
	delete(m.sizes, p)
}

// DriverMemory is the device memory d holds from the driver now and at its
// most since it was opened, in bytes, and how many allocations it made:
// every allocation, whoever asked for it.
func (d *Device) DriverMemory() (now, peak int64, allocs int) {
	m := &d.driverMem
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now, m.peak, m.allocCalls
}
