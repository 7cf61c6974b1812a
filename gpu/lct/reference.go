package lct

import (
	"fmt"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
)

// NewReference returns the reference codec: package codec on the host.
// Encode copies the values to the host, encodes them and uploads the
// serialised tensor (format.md §5) into the run's memory; Decode downloads
// it, decodes and uploads the values, on the trainer's stream. The
// compressed tensors live on the device, byte for byte what the GPU codec
// writes (the two are tested identical), so an LCT run's memory figures
// are those of the design; its step time is not: every encode and decode
// crosses PCIe and runs on the CPU. It is what the GPU codec is tested
// against.
func NewReference() *Codec { return &Codec{keys: map[string]*keyState{}} }

// reference is the reference codec's coders.
type reference struct {
	enc codec.Encoder
	dec codec.Decoder
}

// serialised is a serialised LCT tensor in device memory.
type serialised struct {
	ptr    gpu.Ptr
	bytes  int64
	stats  codec.Stats
	cb     codec.Codebook
	layout codec.Layout
}

// encode fits a codebook to every tensor's sample, as lcttop pack does,
// and finishes before it returns.
func (r *reference) encode(mem Memory, cat session.Category, src gpu.Ptr, n int, cc session.ClassCodec) (*Tensor, error) {
	vals := make([]uint16, n)
	if err := mem.Download(gpu.Bytes(vals), src); err != nil {
		return nil, err
	}
	sample := codec.SampleHistogram(vals)
	cb := codec.FitCodebook(cc.Dist, &sample)
	var t codec.Tensor
	if err := r.enc.Encode(&t, vals, cb, codec.ChooseLayout(cc.Preset, &cb, &sample).WithVersion(codec.FormatVersion2)); err != nil {
		return nil, err
	}
	b, err := t.MarshalBinary()
	if err != nil {
		return nil, err
	}
	s := &serialised{bytes: int64(len(b)), stats: t.Stats, cb: t.Codebook, layout: t.Layout}
	if s.ptr, err = mem.AllocSide(cat, s.bytes); err != nil {
		return nil, err
	}
	if err := mem.Upload(s.ptr, b); err != nil {
		mem.Free(s.ptr)
		return nil, err
	}
	return &Tensor{ref: s, n: n, cat: cat, settled: true, mem: mem}, nil
}

func (r *reference) decode(dst gpu.Ptr, t *Tensor) error {
	ct, err := t.ref.download(t.mem)
	if err != nil {
		return err
	}
	vals := make([]uint16, t.n)
	if err := r.dec.Decode(ct, vals); err != nil {
		return err
	}
	return t.mem.Upload(dst, gpu.Bytes(vals))
}

func (r *reference) free(t *Tensor) {
	if t.ref.ptr != 0 {
		t.mem.Free(t.ref.ptr)
		t.ref.ptr = 0
	}
}

// download reads the serialised tensor back from the device.
func (s *serialised) download(mem Memory) (*codec.Tensor, error) {
	// The allocation was rounded up; the serialised tensor is its first bytes.
	b := make([]byte, s.bytes)
	if err := mem.Download(b, s.ptr); err != nil {
		return nil, err
	}
	t, err := codec.ParseTensor(b)
	if err != nil {
		return nil, fmt.Errorf("reference codec: the tensor read back from the device: %w", err)
	}
	return t, nil
}
