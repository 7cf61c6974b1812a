package cudabackend

import (
	"fmt"

	"lcttop/codec"
	"lcttop/gpu"
	"lcttop/session"
)

// HostCodec is a Codec that runs the reference codec (package codec) on the
// host: Encode copies the values to the host, encodes them and uploads the
// serialised tensor (format.md §5) into device memory; Decode downloads it,
// decodes and uploads the values. The compressed tensors live on the
// device, byte for byte what the GPU codec writes (the two are tested
// identical), so the LCT run's memory figures are those of the design; its
// step time is not: every encode and decode crosses PCIe and runs on the
// CPU. It is the reference the GPU codec is tested against.
type HostCodec struct {
	enc codec.Encoder
	dec codec.Decoder
}

// hostTensor is a serialised LCT tensor in device memory.
type hostTensor struct {
	dev   Device
	ptr   gpu.Ptr
	bytes int64
	n     int
	stats codec.Stats
	cb    codec.Codebook
	l     codec.Layout
}

func (t *hostTensor) Settled() bool               { return true }
func (t *hostTensor) Layout() codec.Layout        { return t.l }
func (t *hostTensor) Bytes() int64                { return t.bytes }
func (t *hostTensor) Stats() (codec.Stats, error) { return t.stats, nil }
func (t *hostTensor) Codebook() codec.Codebook    { return t.cb }

// Encode implements Codec.
// It fits a codebook to every tensor's sample, as lcttop pack does, and
// finishes before it returns; key and prev are not used.
func (h *HostCodec) Encode(mem *Mem, _ string, cat session.Category, src gpu.Ptr, n int, cc session.ClassCodec, _ Compressed) (Compressed, error) {
	vals := make([]uint16, n)
	if err := mem.Dev().Download(gpu.Bytes(vals), src); err != nil {
		return nil, err
	}
	sample := codec.SampleHistogram(vals)
	cb := codec.FitCodebook(cc.Dist, &sample)
	var t codec.Tensor
	if err := h.enc.Encode(&t, vals, cb, codec.ChooseLayout(cc.Preset, &cb, &sample).WithVersion(codec.FormatVersion2)); err != nil {
		return nil, err
	}
	b, err := t.MarshalBinary()
	if err != nil {
		return nil, err
	}
	ht := &hostTensor{dev: mem.Dev(), bytes: int64(len(b)), n: n, stats: t.Stats, cb: t.Codebook, l: t.Layout}
	if ht.ptr, err = mem.Alloc(cat, ht.bytes); err != nil {
		return nil, err
	}
	if err := mem.Dev().Upload(ht.ptr, b); err != nil {
		mem.Free(ht.ptr)
		return nil, err
	}
	return ht, nil
}

// Decode implements Codec.
func (h *HostCodec) Decode(dst gpu.Ptr, c Compressed) error {
	ht, ok := c.(*hostTensor)
	if !ok {
		return fmt.Errorf("host codec: cannot decode a %T", c)
	}
	// The allocation was rounded up; the serialised tensor is its first bytes.
	b := make([]byte, ht.bytes)
	if err := ht.dev.Download(b, ht.ptr); err != nil {
		return err
	}
	t, err := codec.ParseTensor(b)
	if err != nil {
		return fmt.Errorf("host codec: the tensor read back from the device: %w", err)
	}
	vals := make([]uint16, ht.n)
	if err := h.dec.Decode(t, vals); err != nil {
		return err
	}
	return ht.dev.Upload(dst, gpu.Bytes(vals))
}

// CloseWindow implements Codec: every encode is complete when Encode
// returns, and every decode when Decode does.
func (h *HostCodec) CloseWindow(*Mem) (CodecWindow, error) { return nil, nil }

// SettleWindow implements Codec: nothing is ever pending.
func (h *HostCodec) SettleWindow(_ *Mem, _ CodecWindow, pend []Pending) ([]int, error) {
	if len(pend) > 0 {
		return nil, fmt.Errorf("host codec: %d encodes to settle, none can be pending", len(pend))
	}
	return nil, nil
}

// Free implements Codec.
func (h *HostCodec) Free(mem *Mem, c Compressed) {
	if ht, ok := c.(*hostTensor); ok && ht.ptr != 0 {
		mem.Free(ht.ptr)
		ht.ptr = 0
	}
}
