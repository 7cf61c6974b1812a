package lct_test

import (
	"fmt"
	"slices"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/gpu/lct"
	"lcttop/session"
)

// runMemory is a run's device memory as the codec takes it: blocks from
// the compute view. A block the codec gives back may still be in use on
// the side stream up to the point Touch recorded: it is kept until
// release, which makes the trainer's stream wait for that point first
// (Free runs inside the device's own calls, which must not be entered
// again).
type runMemory struct {
	dev     *gpu.Device
	compute *gpu.Compute
	used    map[gpu.Ptr]uint64 // the side stream's point of a block's last use
	freed   []gpu.Ptr
	charged int64
}

func (m *runMemory) AllocSide(_ session.Category, bytes int64) (gpu.Ptr, error) {
	return m.compute.Alloc(bytes)
}

func (m *runMemory) Free(p gpu.Ptr) { m.freed = append(m.freed, p) }

func (m *runMemory) Touch(p gpu.Ptr, point uint64) { m.used[p] = max(m.used[p], point) }

// release frees the blocks given back once the trainer's stream has
// waited for the side stream's last use of each.
func (m *runMemory) release() error {
	for _, p := range m.freed {
		if err := m.dev.HoldDefault(m.used[p]); err != nil {
			return err
		}
		delete(m.used, p)
		if err := m.compute.Free(p); err != nil {
			return err
		}
	}
	m.freed = nil
	return nil
}

func (m *runMemory) Charge(_ session.Category, delta int64) error { m.charged += delta; return nil }

func (m *runMemory) Upload(dst gpu.Ptr, src []byte) error   { return m.compute.Upload(dst, src) }
func (m *runMemory) Download(dst []byte, src gpu.Ptr) error { return m.compute.Download(dst, src) }

// A tensor in device memory encoded on the side stream, settled, and
// decoded back into another buffer: the values come back bit for bit, in
// fewer bytes than BF16 takes.
func Example() {
	dev, err := gpu.OpenEmulated() // gpu.OpenDevice(0) on a GPU
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	if err := dev.UseSideStream(); err != nil {
		fmt.Println(err)
		return
	}
	c := lct.New(dev)
	mem := &runMemory{dev: dev, compute: dev.Compute(), used: map[gpu.Ptr]uint64{}}

	// 4096 weights of a small spread around zero: exponents from few values.
	vals := make([]uint16, 4096)
	for i := range vals {
		vals[i] = 0x3c00 + uint16(i*37%97) - 48 // ±0.0x, sign bit included through the wrap
		if i%3 == 0 {
			vals[i] |= 0x8000
		}
	}
	n := len(vals)
	src, _ := mem.compute.Alloc(2 * int64(n))
	dst, _ := mem.compute.Alloc(2 * int64(n))
	defer mem.compute.Free(src)
	defer mem.compute.Free(dst)
	if err := mem.compute.Upload(src, gpu.Bytes(vals)); err != nil {
		fmt.Println(err)
		return
	}

	cc := session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
	t, err := c.Encode(mem, "w", session.Weights, src, n, cc, nil)
	if err == nil {
		err = c.Settle(mem, []lct.Pending{{T: t, Src: src}})
	}
	if err == nil {
		err = c.Decode(dst, t)
	}
	if err == nil {
		err = c.Ready(dst) // the trainer's reads of dst wait for the decode
	}
	back := make([]uint16, n)
	if err == nil {
		err = mem.compute.Download(gpu.Bytes(back), dst)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	stats, err := t.Stats()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("settled:", t.Settled())
	fmt.Println("values back bit for bit:", slices.Equal(back, vals))
	fmt.Println("smaller than BF16:", t.Bytes() < 2*int64(n), stats.Ratio > 1)
	c.Free(t)
	if err := mem.release(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// settled: true
	// values back bit for bit: true
	// smaller than BF16: true true
}
