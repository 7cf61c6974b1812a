package lctfile

import (
	"sync"

	"lcttop/codec"
)

// Backend runs the codec somewhere: nil in Options means the CPU reference
// codec; gpu.Codec implements it for CUDA. Encode fills dst.Stats, as
// codec.Encoder does.
type Backend interface {
	Encode(dst *codec.Tensor, src []uint16, cb codec.Codebook, l codec.Layout) error
	Decode(t *codec.Tensor, dst []uint16) error
}

// cpuBackend is the reference codec with its own scratch, one per worker.
type cpuBackend struct {
	enc codec.Encoder
	dec codec.Decoder
}

func newCPUBackend(workers int) *cpuBackend {
	return &cpuBackend{enc: codec.Encoder{Workers: workers}, dec: codec.Decoder{Workers: workers}}
}

func (c *cpuBackend) Encode(dst *codec.Tensor, src []uint16, cb codec.Codebook, l codec.Layout) error {
	return c.enc.Encode(dst, src, cb, l)
}

func (c *cpuBackend) Decode(t *codec.Tensor, dst []uint16) error { return c.dec.Decode(t, dst) }

// lockedBackend serialises calls into a backend of the caller's (a GPU codec
// owns one device context), while sampling, fitting, CRCs and copies still
// run on every core.
type lockedBackend struct {
	mu sync.Mutex
	b  Backend
}

func (l *lockedBackend) Encode(dst *codec.Tensor, src []uint16, cb codec.Codebook, lay codec.Layout) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Encode(dst, src, cb, lay)
}

func (l *lockedBackend) Decode(t *codec.Tensor, dst []uint16) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Decode(t, dst)
}

// backends returns one backend per worker: fresh CPU codecs, or the caller's
// backend shared behind a lock. A lone worker lets the CPU codec spread one
// tensor's blocks over every core instead.
func backends(b Backend, workers int) []Backend {
	out := make([]Backend, workers)
	var shared Backend
	if b != nil {
		shared = &lockedBackend{b: b}
	}
	for i := range out {
		switch {
		case shared != nil:
			out[i] = shared
		case workers == 1:
			out[i] = newCPUBackend(0)
		default:
			out[i] = newCPUBackend(1)
		}
	}
	return out
}
