package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
	"lcttop/internal/testtensors"
	"lcttop/trainer/optim"
)

// The CPU reference of the updates is the trainer's own optimizer: the GPU
// must give its bits.
var (
	testSGD   = optim.SGD{Schedule: optim.Schedule{LR: 0.05}, Momentum: 0.9, WeightDecay: 1e-2}
	testAdamW = optim.AdamW{Schedule: optim.Schedule{LR: 2e-3}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}
)

// optCase is one fused-update check: the tensors' values, the layouts and
// codebooks they are stored in before and after.
type optCase struct {
	name         string
	vals         [][]uint16 // W, M (, V)
	grad         []uint16
	inL, outL    []codec.Layout
	inCB, outCB  []codec.Codebook
	overflowRoom int // bytes each output's overflow buffer holds; 0: enough
}

func (oc optCase) adam() bool { return len(oc.vals) == 3 }

// reference applies the trainer's CPU update to copies of the values.
func (oc optCase) reference(step int) [][]uint16 {
	ref := make([][]uint16, len(oc.vals))
	for i, v := range oc.vals {
		ref[i] = append([]uint16(nil), v...)
	}
	if oc.adam() {
		testAdamW.Step(step, true).Update(ref[0], ref[1], ref[2], oc.grad)
	} else {
		testSGD.Step(step, true).Update(ref[0], ref[1], oc.grad)
	}
	return ref
}

func (d *Device) runStep(oc optCase, step int, in, out []*Tensor, g Buffer) error {
	if oc.adam() {
		return d.AdamWStepLCT(out[0], out[1], out[2], in[0], in[1], in[2], g, AdamWStep(testAdamW.Step(step, true)))
	}
	return d.SGDStepLCT(out[0], out[1], in[0], in[1], g, SGDStep(testSGD.Step(step, true)))
}

// checkFused runs the fused step (and its unfused twin) on compressed
// inputs and compares the compressed outputs byte for byte with codec's
// encoding of the CPU reference; then the plain BF16 step with the reference.
func checkFused(t *testing.T, oc optCase) {
	t.Helper()
	d := device(t)
	const step = 3
	n := len(oc.grad)
	ref := oc.reference(step)
	nt := len(oc.vals)
	want := make([]*codec.Tensor, nt)
	in := make([]*Tensor, nt)
	out := make([]*Tensor, nt)
	var frees []func() error
	defer func() {
		for _, f := range frees {
			if err := f(); err != nil {
				t.Error(err)
			}
		}
	}()
	for i := range nt {
		want[i] = cpuEncode(t, ref[i], oc.outCB[i], oc.outL[i])
		ct := cpuEncode(t, oc.vals[i], oc.inCB[i], oc.inL[i])
		var err error
		if in[i], err = d.newTensorBlocks(nil, n, ct.Layout, ct.BlockBytes, oc.inCB[i], len(ct.Overflow), OptimizerState); err != nil {
			t.Fatal(err)
		}
		in[i].Name = fmt.Sprintf("%s in %d", oc.name, i)
		frees = append(frees, in[i].Free)
		if err := in[i].Upload(ct); err != nil {
			t.Fatal(err)
		}
		room := oc.overflowRoom
		if room == 0 {
			room = len(want[i].Overflow)
		}
		if out[i], err = d.newTensorBlocks(nil, n, want[i].Layout, want[i].BlockBytes, oc.outCB[i], room, OptimizerState); err != nil {
			t.Fatal(err)
		}
		out[i].Name = fmt.Sprintf("%s out %d", oc.name, i)
		frees = append(frees, out[i].Free)
	}
	g, err := d.Alloc(2*n, Gradients)
	if err != nil {
		t.Fatal(err)
	}
	frees = append(frees, func() error { return d.Free(g) })
	if err := d.UploadBF16(g, oc.grad); err != nil {
		t.Fatal(err)
	}
	for _, unfused := range []bool{false, true} {
		d.forceUnfused = unfused
		err := d.runStep(oc, step, in, out, g)
		d.forceUnfused = false
		if err != nil {
			t.Fatalf("%s: step: %v", oc.name, err)
		}
		if err := d.SyncStatus(); err != nil {
			t.Fatalf("%s (unfused %v): %v", oc.name, unfused, err)
		}
		for i := range nt {
			got := new(codec.Tensor)
			if err := out[i].Download(got); err != nil {
				t.Fatal(err)
			}
			got.Stats = want[i].Stats
			if err := sameTensor(want[i], got); err != nil {
				t.Fatalf("%s (unfused %v): output %d differs from codec's encoding of the CPU update: %v", oc.name, unfused, i, err)
			}
		}
	}
	checkPlain(t, d, oc, ref, step)
}

// checkPlain runs the plain BF16 step and compares with the reference.
func checkPlain(t *testing.T, d *Device, oc optCase, ref [][]uint16, step int) {
	t.Helper()
	n := len(oc.grad)
	bufs := make([]Buffer, len(oc.vals)+1)
	for i := range bufs {
		src := oc.grad
		if i < len(oc.vals) {
			src = oc.vals[i]
		}
		b, err := d.Alloc(2*n, Weights)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Free(b)
		if err := d.UploadBF16(b, src); err != nil {
			t.Fatal(err)
		}
		bufs[i] = b
	}
	var err error
	if oc.adam() {
		err = d.AdamWStep(bufs[0], bufs[1], bufs[2], bufs[3], n, AdamWStep(testAdamW.Step(step, true)))
	} else {
		err = d.SGDStep(bufs[0], bufs[1], bufs[2], n, SGDStep(testSGD.Step(step, true)))
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range oc.vals {
		got := make([]uint16, n)
		if err := d.DownloadBF16(got, bufs[i]); err != nil {
			t.Fatal(err)
		}
		if j := testbf16.FirstDiff(ref[i], got); j >= 0 {
			t.Fatalf("%s: plain step, tensor %d value %d: CPU %#04x, GPU %#04x (inputs %#04x, g %#04x)", oc.name, i, j, ref[i][j], got[j], oc.vals[i][j], oc.grad[j])
		}
	}
}

// abs makes BF16 values non-negative (Adam's v).
func abs(v []uint16) []uint16 {
	for i := range v {
		v[i] &= 0x7FFF
	}
	return v
}

// synthetic makes a case of gaussian tensors, all stored with preset p
// (codebooks fitted before and after the update).
func synthetic(r *rand.Rand, name string, n int, adam bool, p codec.Preset, d codec.Distribution) optCase {
	oc := optCase{name: name, grad: testbf16.Gaussian(r, n, 1e-2)}
	oc.vals = [][]uint16{testbf16.Gaussian(r, n, 0.05), testbf16.Gaussian(r, n, 1e-3)}
	if adam {
		oc.vals = append(oc.vals, abs(testbf16.Gaussian(r, n, 1e-5)))
	}
	ref := oc.reference(3)
	for i, v := range oc.vals {
		cb, l := fit(v, p, d)
		oc.inCB, oc.inL = append(oc.inCB, cb), append(oc.inL, l)
		cb, l = fit(ref[i], p, d)
		oc.outCB, oc.outL = append(oc.outCB, cb), append(oc.outL, l)
	}
	return oc
}

// blockScaled is an AdamW case whose first block and the rest differ in
// scale by orders of magnitude, so that AUTO gives inputs and outputs a
// capacity per block.
func blockScaled(t *testing.T, r *rand.Rand, n int) optCase {
	t.Helper()
	two := func(s0, s1 float64) []uint16 {
		return append(testbf16.Gaussian(r, 65536, s0), testbf16.Gaussian(r, n-65536, s1)...)
	}
	oc := optCase{name: "adamw, a C per block", grad: testbf16.Gaussian(r, n, 1e-2)}
	oc.vals = [][]uint16{two(0.05, 20), two(1e-3, 1e-7), abs(two(1e-5, 1e-9))}
	ref := oc.reference(3)
	for i, v := range oc.vals {
		cb, l := fitBlocks(v, codec.Auto, codec.Laplace)
		oc.inCB, oc.inL = append(oc.inCB, cb), append(oc.inL, l)
		cb, l = fitBlocks(ref[i], codec.Auto, codec.Laplace)
		oc.outCB, oc.outL = append(oc.outCB, cb), append(oc.outL, l)
		if !oc.inL[i].PerBlock || !oc.outL[i].PerBlock {
			t.Fatalf("tensor %d: capacities per block in %v, out %v", i, oc.inL[i].PerBlock, oc.outL[i].PerBlock)
		}
	}
	return oc
}

func TestFusedSGD(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 21))
	n := 2*65536 + 4321
	if emulated(t) {
		n = 65536 + 4321
	}
	checkFused(t, synthetic(r, "sgd clean", n, false, codec.Clean, codec.Gaussian))
	checkFused(t, synthetic(r, "sgd high", n, false, codec.High, codec.Laplace))
	if !emulated(t) {
		checkFused(t, synthetic(r, "sgd medium", n, false, codec.Medium, codec.PowerLaw))
		checkFused(t, synthetic(r, "sgd auto", n, false, codec.Auto, codec.Empirical))
		checkFused(t, synthetic(r, "sgd small", 1000, false, codec.Clean, codec.Gaussian))
	}
}

func TestFusedAdamW(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 23))
	n := 2*65536 + 4321
	if emulated(t) {
		n = 65536 + 4321
	}
	checkFused(t, synthetic(r, "adamw clean", n, true, codec.Clean, codec.Gaussian))
	// Each tensor its own preset and C (block sizes equal), the same codebook before and after.
	oc := synthetic(r, "adamw mixed", n, true, codec.Auto, codec.Empirical)
	oc.inL[0] = codec.Layout{Preset: codec.Clean, BlockSize: 65536, StreamBytes: 100, Version: codec.FormatVersion2}
	oc.outL[0], oc.outCB = oc.inL[0], oc.inCB
	checkFused(t, oc)
	// Inputs and outputs with a capacity per block (the fused kernels read
	// and write each block's stream area where the table says).
	checkFused(t, blockScaled(t, r, n))
	if !emulated(t) {
		checkFused(t, synthetic(r, "adamw high", n, true, codec.High, codec.Laplace))
		checkFused(t, synthetic(r, "adamw tiny", 37, true, codec.Medium, codec.Gaussian))
	}
}

// TestFusedSpills: inputs and outputs with 2 bytes per stream, so that
// nearly every stream spills on both sides: the decoders read the overflow
// areas and the overflow pass recomputes every block. An overflow buffer too
// small is reported and the step runs again once it is grown.
func TestFusedSpills(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(24, 25))
	n := 65536 + 999
	tiny := codec.Layout{Preset: codec.Auto, BlockSize: 65536, StreamBytes: 2, Version: codec.FormatVersion2}
	for _, adam := range []bool{false, true} {
		oc := synthetic(r, fmt.Sprintf("spilling adam=%v", adam), n, adam, codec.Auto, codec.Gaussian)
		for i := range oc.inL {
			oc.inL[i], oc.outL[i] = tiny, tiny
		}
		checkFused(t, oc)
	}

	oc := synthetic(r, "overflow too small", n, false, codec.Clean, codec.Gaussian)
	for i := range oc.inL {
		oc.outL[i] = tiny
	}
	ref := oc.reference(3)
	want := cpuEncode(t, ref[0], oc.outCB[0], tiny)
	in := make([]*Tensor, 2)
	out := make([]*Tensor, 2)
	for i := range 2 {
		ct := cpuEncode(t, oc.vals[i], oc.inCB[i], oc.inL[i])
		var err error
		if in[i], err = d.NewTensor(n, oc.inL[i], oc.inCB[i], len(ct.Overflow), Weights); err != nil {
			t.Fatal(err)
		}
		defer in[i].Free()
		if err := in[i].Upload(ct); err != nil {
			t.Fatal(err)
		}
		if out[i], err = d.NewTensor(n, tiny, oc.outCB[i], 100, Weights); err != nil {
			t.Fatal(err)
		}
		defer out[i].Free()
	}
	g, err := d.Alloc(2*n, Gradients)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(g)
	if err := d.UploadBF16(g, oc.grad); err != nil {
		t.Fatal(err)
	}
	if err := d.runStep(oc, 3, in, out, g); err != nil {
		t.Fatal(err)
	}
	var oe *OverflowError
	if err := d.SyncStatus(); !errors.As(err, &oe) {
		t.Fatalf("SyncStatus after a spill beyond a 100-byte buffer: %v, want an OverflowError", err)
	}
	for i := range 2 {
		if err := out[i].GrowOverflow(out[i].OverflowLen()); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.runStep(oc, 3, in, out, g); err != nil {
		t.Fatal(err)
	}
	if err := d.SyncStatus(); err != nil {
		t.Fatal(err)
	}
	got := new(codec.Tensor)
	if err := out[0].Download(got); err != nil {
		t.Fatal(err)
	}
	got.Stats = want.Stats
	if err := sameTensor(want, got); err != nil {
		t.Fatalf("after growing the overflow buffer: %v", err)
	}
}

// TestFusedRejects: mismatched block sizes and outputs that are inputs.
func TestFusedRejects(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(26, 27))
	n := 5000
	oc := synthetic(r, "rejects", n, false, codec.Clean, codec.Gaussian)
	mk := func(l codec.Layout) *Tensor {
		x, err := d.NewTensor(n, l, oc.inCB[0], 0, Weights)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Free() })
		return x
	}
	clean, high := oc.inL[0], codec.Layout{Preset: codec.High, BlockSize: 32768, StreamBytes: 48, Version: codec.FormatVersion2}
	a, b, c, e := mk(clean), mk(clean), mk(clean), mk(high)
	g, err := d.Alloc(2*n, Gradients)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(g)
	s := SGDStep(testSGD.Step(1, true))
	if err := d.SGDStepLCT(c, e, a, b, g, s); err == nil || !strings.Contains(err.Error(), "blocks of") {
		t.Fatalf("mixed block sizes: %v", err)
	}
	if err := d.SGDStepLCT(a, c, a, b, g, s); err == nil || !strings.Contains(err.Error(), "both input and output") {
		t.Fatalf("output is input: %v", err)
	}
	short, err := d.Alloc(n, Gradients)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(short)
	if err := d.SGDStepLCT(c, e, a, b, short, s); err == nil {
		t.Fatal("a gradient buffer too short was accepted")
	}
}

// TestFusedRealTensors: AdamW on the real weights, moments and gradients of
// step 600, and SGD on the real weights and momentum of step 300 (with a
// synthetic gradient), each tensor stored as the trainer would: CLEAN with a
// gaussian codebook for weights, AUTO empirical for the optimizer state.
func TestFusedRealTensors(t *testing.T) {
	dir := testtensors.Dir(t)
	load := func(name string) map[string][]uint16 {
		m := map[string][]uint16{}
		for _, nt := range testtensors.LoadBF16(t, filepath.Join(dir, name+".safetensors")) {
			m[nt.Name] = nt.Values
		}
		return m
	}
	w, m, v, g := load("step600_weight"), load("step600_adam_m"), load("step600_adam_v"), load("step600_grad")
	stores := func(vals [][]uint16, ref [][]uint16) optCase {
		oc := optCase{vals: vals}
		for i := range vals {
			p, dist := codec.Auto, codec.Empirical
			if i == 0 {
				p, dist = codec.Clean, codec.Gaussian
			}
			cb, l := fit(vals[i], p, dist)
			oc.inCB, oc.inL = append(oc.inCB, cb), append(oc.inL, l)
			cb, l = fit(ref[i], p, dist)
			oc.outCB, oc.outL = append(oc.outCB, cb), append(oc.outL, l)
		}
		return oc
	}
	count := 0
	for name, wv := range w {
		if emulated(t) && (len(wv) < 65536 || count >= 1) {
			continue
		}
		oc := optCase{name: "adamw " + name, vals: [][]uint16{wv, m[name], v[name]}, grad: g[name]}
		oc2 := stores(oc.vals, oc.reference(3))
		oc2.name, oc2.grad = oc.name, oc.grad
		checkFused(t, oc2)
		count++
	}
	r := rand.New(rand.NewPCG(28, 29))
	sgd := load("sgd_step300")
	for name, mom := range sgd {
		suffix, ok := strings.CutPrefix(name, "momentum.")
		if !ok || (emulated(t) && (len(mom) < 65536 || count >= 2)) {
			continue
		}
		var wv []uint16
		for other, vals := range sgd {
			if other != name && strings.HasSuffix(other, "."+suffix) {
				wv = vals
			}
		}
		if wv == nil {
			t.Fatalf("sgd_step300: no weights for %s", name)
		}
		oc := optCase{name: "sgd " + suffix, vals: [][]uint16{wv, mom}, grad: testbf16.Gaussian(r, len(wv), 1e-3)}
		oc2 := stores(oc.vals, oc.reference(3))
		oc2.name, oc2.grad = oc.name, oc.grad
		checkFused(t, oc2)
		count++
	}
	if count == 0 {
		t.Fatal("no real tensors checked")
	}
	t.Logf("%d real tensor sets updated through the codec bit for bit", count)
}

// TestPlainSpecialValues: the plain updates on every exponent, with zeros,
// subnormals and infinities among the inputs, against the CPU reference
// (NaN results compare as NaN: their payloads differ between CPU and GPU).
func TestPlainSpecialValues(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(30, 31))
	n := 65536 + 17
	mk := func() []uint16 {
		v := allPatterns(r.Uint64())
		return append(v, v[:17]...)
	}
	for _, adam := range []bool{false, true} {
		vals := [][]uint16{mk(), mk()}
		if adam {
			vals = append(vals, mk())
		}
		grad := mk()
		oc := optCase{name: "special", vals: vals, grad: grad}
		ref := oc.reference(2)
		bufs := make([]Buffer, len(vals)+1)
		for i := range bufs {
			src := grad
			if i < len(vals) {
				src = vals[i]
			}
			var err error
			if bufs[i], err = d.Alloc(2*n, Weights); err != nil {
				t.Fatal(err)
			}
			defer d.Free(bufs[i])
			if err := d.UploadBF16(bufs[i], src); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		if adam {
			err = d.AdamWStep(bufs[0], bufs[1], bufs[2], bufs[3], n, AdamWStep(testAdamW.Step(2, true)))
		} else {
			err = d.SGDStep(bufs[0], bufs[1], bufs[2], n, SGDStep(testSGD.Step(2, true)))
		}
		if err != nil {
			t.Fatal(err)
		}
		nans := 0
		for i := range vals {
			got := make([]uint16, n)
			if err := d.DownloadBF16(got, bufs[i]); err != nil {
				t.Fatal(err)
			}
			for j := range got {
				if isNaN(ref[i][j]) && isNaN(got[j]) {
					nans++
					continue
				}
				if got[j] != ref[i][j] {
					t.Fatalf("adam=%v tensor %d value %d: CPU %#04x, GPU %#04x", adam, i, j, ref[i][j], got[j])
				}
			}
		}
		if nans == 0 || nans > n {
			t.Fatalf("adam=%v: %d NaN results; want some (NaN inputs) but not most", adam, nans)
		}
	}
}

func isNaN(v uint16) bool { return math.IsNaN(float64(math.Float32frombits(uint32(v) << 16))) }
