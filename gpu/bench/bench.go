// Package bench is lcttop bench: the GPU codec's encode and decode, batched
// and one tensor at a time, and the fused optimizer steps, each timed
// against the device's own copy bandwidth.
package bench

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"lcttop/codec"
	"lcttop/codec/safetensors"
	"lcttop/gpu"
)

// Run measures the codec and the optimizer steps on the first GPU
// (Options says which), with the device-to-device copy bandwidth of the
// same run as the yardstick: every figure is also a fraction of its
// memory-bound floor, the bytes it must move at that bandwidth. Data is never
// zeros; each encode is checked against its decode.
func Run(opt Options) (*Report, error) {
	d, err := gpu.OpenDevice(0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if opt.Reps < 1 {
		opt.Reps = 1
	}
	b := &bencher{d: d, opt: opt, rep: &Report{Device: d.Name(), Date: time.Now().UTC().Format(time.RFC3339)}}
	if b.timer, err = d.NewTimer(); err != nil {
		return nil, err
	}
	defer b.timer.Close()
	if err := b.run(); err != nil {
		return b.rep, err
	}
	return b.rep, nil
}

type bencher struct {
	d     *gpu.Device
	opt   Options
	rep   *Report
	timer *gpu.Timer
	seed  uint64
}

func (b *bencher) logf(format string, args ...any) {
	if b.opt.Log != nil {
		fmt.Fprintf(b.opt.Log, format+"\n", args...)
	}
}

func (b *bencher) run() error {
	if err := b.copyBandwidth(); err != nil {
		return err
	}
	for _, n := range b.opt.Sizes {
		if err := b.gaussian(n, codec.Clean); err != nil {
			return err
		}
	}
	if len(b.opt.Sizes) > 0 && !b.opt.Profile {
		n := b.opt.Sizes[len(b.opt.Sizes)-1]
		for _, p := range []codec.Preset{codec.High, codec.Auto} {
			if err := b.gaussian(n, p); err != nil {
				return err
			}
		}
	}
	if len(b.opt.Sizes) > 0 {
		if err := b.gaussianVersion3(b.opt.Sizes[len(b.opt.Sizes)-1]); err != nil {
			return err
		}
	}
	if b.opt.Batches {
		if err := b.batches(); err != nil {
			return err
		}
	}
	if b.opt.TensorDir != "" && !b.opt.Profile {
		if err := b.realTensors(); err != nil {
			return err
		}
	}
	for _, n := range b.opt.StepSizes {
		for _, p := range []codec.Preset{codec.Clean, codec.High} {
			if b.opt.Profile && p != codec.Clean {
				continue
			}
			if err := b.steps(n, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// time runs f a few times to warm up, then Reps times, each timed with
// device events; it returns the median, the least and the most.
func (b *bencher) time(f func() error) (med, lo, hi float64, err error) {
	if b.opt.Profile {
		return 0, 0, 0, f()
	}
	for range 3 {
		if err := f(); err != nil {
			return 0, 0, 0, err
		}
	}
	ms := make([]float64, b.opt.Reps)
	for i := range ms {
		if err := b.timer.Start(); err != nil {
			return 0, 0, 0, err
		}
		if err := f(); err != nil {
			return 0, 0, 0, err
		}
		if err := b.timer.Stop(); err != nil {
			return 0, 0, 0, err
		}
		if ms[i], err = b.timer.Ms(); err != nil {
			return 0, 0, 0, err
		}
	}
	sort.Float64s(ms)
	return ms[len(ms)/2], ms[0], ms[len(ms)-1], nil
}

func (b *bencher) add(r Result) {
	if b.opt.Profile {
		return
	}
	r.GBps = float64(2*r.Elements) / (r.Ms * 1e6)
	r.FloorMs = float64(r.Bytes) / (b.rep.CopyGBps * 1e6)
	r.OfFloor = r.FloorMs / r.Ms
	b.rep.Results = append(b.rep.Results, r)
	b.logf("%-10s %-24s %-16s %10d  %8.4f ms  %6.0f%% of floor", r.Op, r.Data, r.Preset+"/"+r.Dist, r.Elements, r.Ms, 100*r.OfFloor)
}

// alloc allocates n BF16 values; the caller frees them.
func (b *bencher) alloc(n int, cat gpu.Category) (gpu.Buffer, error) { return b.d.Alloc(2*n, cat) }

func (b *bencher) fill(dst gpu.Buffer, n int, scale float32, absolute bool) error {
	b.seed++
	if absolute {
		return b.d.FillAbsGaussian(dst, n, b.seed, scale)
	}
	return b.d.FillGaussian(dst, n, b.seed, scale)
}

// copyBandwidth times a 1 GiB device-to-device copy.
func (b *bencher) copyBandwidth() error {
	const bytes = 1 << 30
	n := bytes / 2
	if b.d.Emulated() {
		n = 1 << 20
	}
	src, err := b.alloc(n, gpu.CodecScratch)
	if err != nil {
		return err
	}
	defer b.d.Free(src)
	dst, err := b.alloc(n, gpu.CodecScratch)
	if err != nil {
		return err
	}
	defer b.d.Free(dst)
	if err := b.fill(src, n, 1, false); err != nil {
		return err
	}
	med, _, _, err := b.time(func() error { return b.d.CopyBuffer(dst, src, 2*n) })
	if err != nil {
		return err
	}
	b.rep.CopyBytes = int64(2 * n)
	b.rep.CopyGBps = float64(4*n) / (med * 1e6)
	if b.opt.Profile {
		b.rep.CopyGBps = 1
	}
	b.logf("device-to-device copy: %.0f GB/s (read + write)", b.rep.CopyGBps)
	return nil
}

// withGaussian runs f on n gaussian values in device memory.
func (b *bencher) withGaussian(n int, f func(src gpu.Buffer) error) error {
	src, err := b.alloc(n, gpu.Activations)
	if err != nil {
		return err
	}
	defer b.d.Free(src)
	if err := b.fill(src, n, 0.02, false); err != nil {
		return err
	}
	return f(src)
}

// gaussian measures encode and decode of n gaussian values.
func (b *bencher) gaussian(n int, p codec.Preset) error {
	return b.withGaussian(n, func(src gpu.Buffer) error { return b.codec(src, n, "gaussian", p, codec.Gaussian) })
}

// gaussianVersion3 is version3 on n gaussian values.
func (b *bencher) gaussianVersion3(n int) error {
	return b.withGaussian(n, func(src gpu.Buffer) error {
		vals := make([]uint16, n)
		if err := b.d.DownloadBF16(vals, src); err != nil {
			return err
		}
		return b.version3(vals, "gaussian")
	})
}

// realTensors tiles each real tensor file's BF16 values to RealSize.
func (b *bencher) realTensors() error {
	files, err := filepath.Glob(filepath.Join(b.opt.TensorDir, "*.safetensors"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("bench: no .safetensors files in %s", b.opt.TensorDir)
	}
	sort.Strings(files)
	for _, f := range files {
		st, err := safetensors.ReadFile(f)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		var vals []uint16
		for _, ti := range st.Tensors {
			if ti.DType == "BF16" {
				vals = append(vals, safetensors.BF16Values(st.Bytes(ti))...)
			}
		}
		if len(vals) == 0 {
			continue
		}
		n := b.opt.RealSize
		tiled := make([]uint16, n)
		for i := 0; i < n; i += len(vals) {
			copy(tiled[i:], vals)
		}
		src, err := b.alloc(n, gpu.Activations)
		if err != nil {
			return err
		}
		err = b.d.UploadBF16(src, tiled)
		for _, c := range []struct {
			p codec.Preset
			d codec.Distribution
		}{{codec.Clean, codec.Gaussian}, {codec.Auto, codec.Empirical}} {
			if err == nil {
				err = b.codec(src, n, filepath.Base(f), c.p, c.d)
			}
		}
		if err == nil {
			err = b.codecPerBlock(src, tiled, filepath.Base(f)+" C/block")
		}
		if err == nil {
			err = b.version3(tiled, filepath.Base(f))
		}
		if ferr := b.d.Free(src); err == nil {
			err = ferr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// encodeChecked encodes src into t, growing t's overflow buffer until the
// spill fits.
func (b *bencher) encodeChecked(t *gpu.Tensor, src gpu.Buffer) error {
	for {
		if err := b.d.Encode(t, src); err != nil {
			return err
		}
		err := b.d.SyncStatus()
		var oe *gpu.OverflowError
		if !errors.As(err, &oe) {
			return err
		}
		if err := t.GrowOverflow(oe.Needed); err != nil {
			return err
		}
	}
}

func (b *bencher) newTensor(src gpu.Buffer, n int, p codec.Preset, dist codec.Distribution, cat gpu.Category) (*gpu.Tensor, error) {
	h, err := b.d.SampleHistogram(src, n)
	if err != nil {
		return nil, err
	}
	cb := codec.FitCodebook(dist, &h)
	t, err := b.d.NewTensor(n, codec.ChooseLayout(p, &cb, &h).WithVersion(codec.FormatVersion2), cb, n/64+4096, cat)
	if err != nil {
		return nil, err
	}
	if err := b.encodeChecked(t, src); err != nil {
		t.Free()
		return nil, err
	}
	return t, nil
}

// codec measures encode and decode of src, and checks the round trip.
func (b *bencher) codec(src gpu.Buffer, n int, data string, p codec.Preset, dist codec.Distribution) error {
	t, err := b.newTensor(src, n, p, dist, gpu.Weights)
	if err != nil {
		return err
	}
	defer t.Free()
	return b.measure(t, src, n, data, p, dist)
}

// codecPerBlock is codec's AUTO/empirical row with a capacity per block, as
// pack stores a tensor (codec.BlockCapacities, searched on the host from
// vals, src's values), beside the row with one capacity for the tensor:
// what the capacities cost the kernels in speed, and buy in ratio.
func (b *bencher) codecPerBlock(src gpu.Buffer, vals []uint16, data string) error {
	n := len(vals)
	h, err := b.d.SampleHistogram(src, n)
	if err != nil {
		return err
	}
	cb := codec.FitCodebook(codec.Empirical, &h)
	l := codec.ChooseLayout(codec.Auto, &cb, &h).WithVersion(codec.FormatVersion2)
	l.PerBlock = true
	caps := codec.BlockCapacities(&cb, l, vals)
	l.StreamBytes = int(slices.Max(caps))
	t, err := b.d.NewTensorBlocks(n, l, caps, cb, n/64+4096, gpu.Weights)
	if err != nil {
		return err
	}
	defer t.Free()
	if err := b.encodeChecked(t, src); err != nil {
		return err
	}
	return b.measure(t, src, n, data, codec.Auto, codec.Empirical)
}

// measure times encode and decode of src into t, and checks the round trip.
func (b *bencher) measure(t *gpu.Tensor, src gpu.Buffer, n int, data string, p codec.Preset, dist codec.Distribution) error {
	d := b.d
	med, lo, hi, err := b.time(func() error { return d.Encode(t, src) })
	if err != nil {
		return err
	}
	if err := d.SyncStatus(); err != nil {
		return err
	}
	spilled, err := t.SpilledValues()
	if err != nil {
		return err
	}
	res := Result{Data: data, Preset: p.String(), Dist: dist.String(), Elements: n,
		Bytes: int64(2*n) + t.DeviceBytes(), Ratio: float64(2*n) / float64(t.StoredBytes()), SpillRate: float64(spilled) / float64(n)}
	enc := res
	enc.Op, enc.Ms, enc.MinMs, enc.MaxMs = "encode", med, lo, hi
	b.add(enc)

	dst, err := b.alloc(n, gpu.Activations)
	if err != nil {
		return err
	}
	defer d.Free(dst)
	if med, lo, hi, err = b.time(func() error { return d.Decode(dst, t) }); err != nil {
		return err
	}
	if err := d.SyncStatus(); err != nil {
		return err
	}
	dec := res
	dec.Op, dec.Ms, dec.MinMs, dec.MaxMs = "decode", med, lo, hi
	b.add(dec)
	if b.opt.Profile {
		return nil
	}
	return b.sameValues(src, dst, n, "decode of "+data)
}

func (b *bencher) sameValues(x, y gpu.Buffer, n int, what string) error {
	a, c := make([]uint16, n), make([]uint16, n)
	if err := b.d.DownloadBF16(a, x); err != nil {
		return err
	}
	if err := b.d.DownloadBF16(c, y); err != nil {
		return err
	}
	for i := range a {
		if a[i] != c[i] {
			return fmt.Errorf("bench: %s: value %d is %#04x, want %#04x", what, i, c[i], a[i])
		}
	}
	return nil
}

var (
	sgdStep   = gpu.SGDStep{LR: 0.01, Momentum: 0.9, WeightDecay: 1e-4}
	adamWStep = gpu.AdamWStep{LR: 1e-3, Beta1: 0.9, OneMinusBeta1: float32(1 - 0.9), Beta2: 0.999, OneMinusBeta2: float32(1 - 0.999),
		Eps: 1e-8, WeightDecay: 0.1, BiasCorr1: float32(1 - math.Pow(0.9, 10)), BiasCorr2: float32(1 - math.Pow(0.999, 10))}
)

// steps measures the fused SGD and AdamW steps on n elements stored with
// preset p against the plain BF16 steps.
func (b *bencher) steps(n int, p codec.Preset) error {
	d := b.d
	var bufs []gpu.Buffer
	var tensors []*gpu.Tensor
	defer func() {
		for _, t := range tensors {
			t.Free()
		}
		for _, x := range bufs {
			d.Free(x)
		}
	}()
	dense := func(scale float32, absolute bool, cat gpu.Category) (gpu.Buffer, error) {
		x, err := b.alloc(n, cat)
		if err == nil {
			bufs = append(bufs, x)
			err = b.fill(x, n, scale, absolute)
		}
		return x, err
	}
	w, err := dense(0.02, false, gpu.Weights)
	if err != nil {
		return err
	}
	m, err := dense(1e-3, false, gpu.OptimizerState)
	if err != nil {
		return err
	}
	v, err := dense(1e-6, true, gpu.OptimizerState)
	if err != nil {
		return err
	}
	g, err := dense(1e-3, false, gpu.Gradients)
	if err != nil {
		return err
	}
	in := make([]*gpu.Tensor, 3)
	out := make([]*gpu.Tensor, 3)
	for i, x := range []gpu.Buffer{w, m, v} {
		if in[i], err = b.newTensor(x, n, p, codec.Gaussian, gpu.OptimizerState); err != nil {
			return err
		}
		tensors = append(tensors, in[i])
		if out[i], err = d.NewTensor(n, in[i].Layout(), in[i].Codebook(), in[i].OverflowCap(), gpu.OptimizerState); err != nil {
			return err
		}
		tensors = append(tensors, out[i])
	}
	stored := func(ts ...*gpu.Tensor) (s int64) {
		for _, t := range ts {
			s += t.DeviceBytes()
		}
		return s
	}
	type stepCase struct {
		name        string
		fused       func() error
		plain       func() error
		ins, outs   []*gpu.Tensor
		plainTensor int // dense tensors the plain step reads and writes, besides g
	}
	cases := []stepCase{
		{"sgd", func() error { return d.SGDStepLCT(out[0], out[1], in[0], in[1], g, sgdStep) },
			func() error { return d.SGDStep(w, m, g, n, sgdStep) }, in[:2], out[:2], 2},
		{"adamw", func() error { return d.AdamWStepLCT(out[0], out[1], out[2], in[0], in[1], in[2], g, adamWStep) },
			func() error { return d.AdamWStep(w, m, v, g, n, adamWStep) }, in, out, 3},
	}
	for _, c := range cases {
		// The first fused step sizes the outputs' overflow buffers.
		for {
			if err := c.fused(); err != nil {
				return err
			}
			err := d.SyncStatus()
			var oe *gpu.OverflowError
			if !errors.As(err, &oe) {
				if err != nil {
					return err
				}
				break
			}
			for _, t := range c.outs {
				if err := t.GrowOverflow(t.OverflowLen()); err != nil {
					return err
				}
			}
		}
		pmed, plo, phi, err := b.time(c.plain)
		if err != nil {
			return err
		}
		plain := Result{Op: c.name + "-bf16", Data: "gaussian", Preset: "bf16", Dist: "-", Elements: n,
			Ms: pmed, MinMs: plo, MaxMs: phi, Bytes: int64(2 * n * (2*c.plainTensor + 1))}
		b.add(plain)
		med, lo, hi, err := b.time(c.fused)
		if err != nil {
			return err
		}
		if err := d.SyncStatus(); err != nil {
			return err
		}
		// Ratio and spill over all the step's outputs (weights and states):
		// a spilling state costs the step as much as a spilling weight.
		spilled, storedOut := 0, 0
		for _, t := range c.outs {
			s, err := t.SpilledValues()
			if err != nil {
				return err
			}
			spilled += s
			storedOut += t.StoredBytes()
		}
		values := float64(n * len(c.outs))
		fused := Result{Op: c.name + "-lct", Data: "gaussian", Preset: p.String(), Dist: "gaussian", Elements: n,
			Ms: med, MinMs: lo, MaxMs: hi, Bytes: stored(c.ins...) + int64(2*n) + stored(c.outs...),
			Ratio: 2 * values / float64(storedOut), SpillRate: float64(spilled) / values}
		if !b.opt.Profile {
			fused.VsBF16 = med / pmed
		}
		b.add(fused)
	}
	return nil
}
