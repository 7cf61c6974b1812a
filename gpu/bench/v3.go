package bench

import (
	"fmt"
	"sort"

	"lcttop/codec"
	"lcttop/gpu"
)

// version3 measures format version 3's kernels on vals as pack codes them
// by default (AUTO/empirical, codec.Plan): encode (lct_measure3 and
// lct_encode3) and decode (lct_decode3), each the kernels' device time
// alone, apart from the transfers and the host's part of the encode; the
// GPU's tensor must decode to vals.
func (b *bencher) version3(vals []uint16, data string) error {
	opt := codec.Options{Preset: codec.Auto, Dist: codec.Empirical, Version: codec.FormatVersion3}
	cb, l, err := codec.Plan(vals, opt)
	if err != nil {
		return fmt.Errorf("bench: %s: %w", data, err)
	}
	c := gpu.NewCodecOn(b.d)
	defer c.Close()
	if err := c.TimeKernels(true); err != nil {
		return err
	}
	var t codec.Tensor
	enc, err := b.kernelMs(func() (float64, error) {
		err := c.Encode(&t, vals, cb, l)
		return c.KernelTimes().EncodeMs, err
	})
	if err != nil {
		return fmt.Errorf("bench: %s: version 3 encode: %w", data, err)
	}
	out := make([]uint16, len(vals))
	dec, err := b.kernelMs(func() (float64, error) {
		err := c.Decode(&t, out)
		return c.KernelTimes().DecodeMs, err
	})
	if err != nil {
		return fmt.Errorf("bench: %s: version 3 decode: %w", data, err)
	}
	if b.opt.Profile {
		return nil
	}
	for i := range vals {
		if out[i] != vals[i] {
			return fmt.Errorf("bench: %s: version 3 decode: value %d is %#04x, want %#04x", data, i, out[i], vals[i])
		}
	}
	n := len(vals)
	res := Result{Data: data, Preset: codec.Auto.String(), Dist: codec.Empirical.String(), Elements: n,
		Bytes: int64(2*n + t.StoredBytes()), Ratio: float64(2*n) / float64(t.StoredBytes()),
		SpillRate: float64(t.Stats.Spilled) / float64(n)}
	for _, r := range []struct {
		op string
		ms []float64
	}{{"encode v3", enc}, {"decode v3", dec}} {
		x := res
		x.Op, x.Ms, x.MinMs, x.MaxMs = r.op, r.ms[len(r.ms)/2], r.ms[0], r.ms[len(r.ms)-1]
		b.add(x)
	}
	return nil
}

// version3Reps caps the timed runs of a version 3 figure: each encode's
// host part (each block's codebook, the heads' layout) takes longer than
// its kernels, which events time to the microsecond.
const version3Reps = 5

// kernelMs runs f, which returns its kernels' device time, once to warm up
// and then Reps times (at most version3Reps); the times sorted.
func (b *bencher) kernelMs(f func() (float64, error)) ([]float64, error) {
	if _, err := f(); err != nil || b.opt.Profile {
		return []float64{0}, err
	}
	ms := make([]float64, min(b.opt.Reps, version3Reps))
	for i := range ms {
		var err error
		if ms[i], err = f(); err != nil {
			return nil, err
		}
	}
	sort.Float64s(ms)
	return ms, nil
}
