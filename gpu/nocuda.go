//go:build !cuda && !kernelemu

package gpu

import "lcttop/codec"

// This file is the build without CUDA: the same names, and every entry point
// that would need the GPU returns ErrNoCUDA.

// Device is a GPU; this build has none.
type Device struct{}

// OpenDevice returns ErrNoCUDA in this build.
func OpenDevice(ordinal int) (*Device, error) { return nil, ErrNoCUDA }

func (d *Device) Name() string                                  { return "" }
func (d *Device) Close() error                                  { return ErrNoCUDA }
func (d *Device) Alloc(bytes int, cat Category) (Buffer, error) { return Buffer{}, ErrNoCUDA }
func (d *Device) Free(b Buffer) error                           { return ErrNoCUDA }
func (d *Device) Memory() MemoryReport                          { return MemoryReport{} }
func (d *Device) Upload(dst Buffer, src []byte) error           { return ErrNoCUDA }
func (d *Device) Download(dst []byte, src Buffer) error         { return ErrNoCUDA }
func (d *Device) UploadBF16(dst Buffer, src []uint16) error     { return ErrNoCUDA }
func (d *Device) DownloadBF16(dst []uint16, src Buffer) error   { return ErrNoCUDA }
func (d *Device) Synchronize() error                            { return ErrNoCUDA }
func (d *Device) SyncStatus() error                             { return ErrNoCUDA }
func (d *Device) NewTimer() (*Timer, error)                     { return nil, ErrNoCUDA }
func (d *Device) Encode(dst *Tensor, src Buffer) error          { return ErrNoCUDA }
func (d *Device) Decode(dst Buffer, src *Tensor) error          { return ErrNoCUDA }
func (d *Device) CopyBuffer(dst, src Buffer, bytes int) error   { return ErrNoCUDA }
func (d *Device) NewTensor(n int, l codec.Layout, cb codec.Codebook, overflowCap int, cat Category) (*Tensor, error) {
	return nil, ErrNoCUDA
}
func (d *Device) SampleHistogram(src Buffer, n int) (codec.Histogram, error) {
	return codec.Histogram{}, ErrNoCUDA
}
func (d *Device) FullHistogram(src Buffer, n int) (codec.Histogram, error) {
	return codec.Histogram{}, ErrNoCUDA
}
func (d *Device) SGDStep(w, m, g Buffer, n int, s SGDStep) error { return ErrNoCUDA }
func (d *Device) AdamWStep(w, m, v, g Buffer, n int, s AdamWStep) error {
	return ErrNoCUDA
}
func (d *Device) SGDStepLCT(wOut, mOut, wIn, mIn *Tensor, g Buffer, s SGDStep) error {
	return ErrNoCUDA
}
func (d *Device) AdamWStepLCT(wOut, mOut, vOut, wIn, mIn, vIn *Tensor, g Buffer, s AdamWStep) error {
	return ErrNoCUDA
}
func (d *Device) FillGaussian(dst Buffer, n int, seed uint64, scale float32) error {
	return ErrNoCUDA
}

// Tensor is an LCT tensor in device memory; this build has none.
type Tensor struct {
	Name string
}

func (t *Tensor) N() int                              { return 0 }
func (t *Tensor) Layout() codec.Layout                { return codec.Layout{} }
func (t *Tensor) Codebook() codec.Codebook            { return codec.Codebook{} }
func (t *Tensor) OverflowCap() int                    { return 0 }
func (t *Tensor) OverflowLen() int                    { return 0 }
func (t *Tensor) StoredBytes() int                    { return 0 }
func (t *Tensor) SetCodebook(cb codec.Codebook) error { return ErrNoCUDA }
func (t *Tensor) GrowOverflow(bytes int) error        { return ErrNoCUDA }
func (t *Tensor) Free() error                         { return ErrNoCUDA }
func (t *Tensor) Upload(ct *codec.Tensor) error       { return ErrNoCUDA }
func (t *Tensor) Download(dst *codec.Tensor) error    { return ErrNoCUDA }

// Timer times device work; this build has none.
type Timer struct{}

func (t *Timer) Start() error         { return ErrNoCUDA }
func (t *Timer) Stop() error          { return ErrNoCUDA }
func (t *Timer) Ms() (float64, error) { return 0, ErrNoCUDA }
func (t *Timer) Close()               {}

// Codec is the GPU codec; this build has none.
type Codec struct{}

// NewCodec returns ErrNoCUDA in this build.
func NewCodec() (*Codec, error) { return nil, ErrNoCUDA }

// NewCodecOn returns a Codec whose every call returns ErrNoCUDA.
func NewCodecOn(d *Device) *Codec { return &Codec{} }

func (c *Codec) Close() error { return ErrNoCUDA }
func (c *Codec) Encode(dst *codec.Tensor, src []uint16, cb codec.Codebook, l codec.Layout) error {
	return ErrNoCUDA
}
func (c *Codec) Decode(t *codec.Tensor, dst []uint16) error { return ErrNoCUDA }

// RunBench returns ErrNoCUDA in this build.
func RunBench(opt BenchOptions) (*BenchReport, error) { return nil, ErrNoCUDA }
