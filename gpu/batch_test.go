package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/internal/testbf16"
)

// batchCase is one tensor of a batch under test.
type batchCase struct {
	name  string
	src   []uint16
	cb    codec.Codebook
	l     codec.Layout
	small bool // an overflow buffer too small for the spill (16 bytes)
}

func fitCase(name string, src []uint16, p codec.Preset, dist codec.Distribution) batchCase {
	cb, l := fitBlocks(src, p, dist)
	return batchCase{name: name, src: src, cb: cb, l: l}
}

// checkBatch encodes the cases with one EncodeBatch (histograms included)
// and each on its own with Encode and HistogramInto, and checks: every
// tensor's bytes equal codec's encoder's and its own Encode's, its status
// and Stats equal the single encode's; a case with a too small overflow
// buffer, and only such a case, reports the overflow, needing what codec's
// overflow holds; every histogram equals HistogramInto's and codec's full
// histogram; DecodeBatch restores every tensor that fits bit for bit (and
// so do the decoders whose readers load ahead). It runs the batch twice
// (the histogram scratch must come back to zero).
func checkBatch(t *testing.T, d *Device, cases []batchCase) {
	t.Helper()
	var cleanup []func() error
	defer func() {
		for _, f := range cleanup {
			if err := f(); err != nil {
				t.Errorf("free: %v", err)
			}
		}
	}()
	alloc := func(bytes int) Buffer {
		b, err := d.Alloc(bytes, CodecScratch)
		if err != nil {
			t.Fatal(err)
		}
		cleanup = append(cleanup, func() error { return d.Free(b) })
		return b
	}
	tensor := func(c batchCase, want *codec.Tensor) *Tensor {
		ov := len(want.Overflow)
		if c.small {
			ov = 16
		}
		x, err := d.newTensorBlocks(nil, len(c.src), want.Layout, want.BlockBytes, c.cb, ov, Weights)
		if err != nil {
			t.Fatal(err)
		}
		x.Name = c.name
		cleanup = append(cleanup, x.Free)
		return x
	}
	n := len(cases)
	wants := make([]*codec.Tensor, n)
	srcs := make([]Buffer, n)
	batch := make([]*Tensor, n)
	single := make([]*Tensor, n)
	for i, c := range cases {
		wants[i] = cpuEncode(t, c.src, c.cb, c.l)
		if c.small && len(wants[i].Overflow) <= 16 {
			t.Fatalf("%s: the adversarial case spills %d bytes, which fit its 16-byte buffer", c.name, len(wants[i].Overflow))
		}
		srcs[i] = alloc(max(2*len(c.src), 2))
		if err := d.UploadBF16(srcs[i], c.src); err != nil {
			t.Fatal(err)
		}
		batch[i], single[i] = tensor(c, wants[i]), tensor(c, wants[i])
	}
	// Histograms in reverse order with gaps, over poisoned memory.
	hist, histSingle := alloc(n*(HistogramBytes+24)+8), alloc(n*HistogramBytes)
	offs := make([]int, n)
	for i := range offs {
		offs[i] = (n-1-i)*(HistogramBytes+24) + 8
	}
	poison := make([]byte, hist.size)
	for i := range poison {
		poison[i] = 0xEE
	}
	for i := range cases {
		if err := d.Encode(single[i], srcs[i]); err != nil {
			t.Fatal(err)
		}
		if err := d.HistogramInto(histSingle, i*HistogramBytes, srcs[i], len(cases[i].src)); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		if err := d.Upload(hist, poison); err != nil {
			t.Fatal(err)
		}
		err := d.EncodeBatch(batch, srcs, hist, offs)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		err = d.SyncStatus()
		var overflowed []string
		for _, e := range joinedErrors(err) {
			var oe *OverflowError
			if !errors.As(e, &oe) {
				t.Fatalf("round %d: SyncStatus: %v", round, e)
			}
			overflowed = append(overflowed, oe.Tensor)
		}
		hb := make([]byte, hist.size)
		if err := d.Download(hb, hist); err != nil {
			t.Fatal(err)
		}
		hs := make([]byte, histSingle.size)
		if err := d.Download(hs, histSingle); err != nil {
			t.Fatal(err)
		}
		for i, c := range cases {
			what := fmt.Sprintf("round %d: %s (n=%d, %s/%s, C=%d)", round, c.name, len(c.src), c.l.Preset, c.cb.Dist, c.l.StreamBytes)
			b, s, want := batch[i], single[i], wants[i]
			if b.Overflowed() != c.small || s.Overflowed() != c.small {
				t.Fatalf("%s: overflowed: batch %v, single %v, want %v (overflowing: %v)", what, b.Overflowed(), s.Overflowed(), c.small, overflowed)
			}
			if b.OverflowLen() != len(want.Overflow) || s.OverflowLen() != len(want.Overflow) {
				t.Fatalf("%s: overflow length: batch %d, single %d, codec %d", what, b.OverflowLen(), s.OverflowLen(), len(want.Overflow))
			}
			var h codec.Histogram
			for e := range h {
				h[e] = binary.LittleEndian.Uint64(hb[offs[i]+8*e:])
			}
			if full := codec.FullHistogram(c.src); h != full {
				t.Fatalf("%s: batch histogram differs from codec's full histogram", what)
			}
			if string(hb[offs[i]:offs[i]+HistogramBytes]) != string(hs[i*HistogramBytes:(i+1)*HistogramBytes]) {
				t.Fatalf("%s: batch histogram differs from HistogramInto's", what)
			}
			if c.small {
				continue
			}
			gotB, gotS := new(codec.Tensor), new(codec.Tensor)
			if err := b.Download(gotB); err != nil {
				t.Fatal(err)
			}
			if err := s.Download(gotS); err != nil {
				t.Fatal(err)
			}
			gotB.Stats, gotS.Stats = want.Stats, want.Stats
			if err := sameTensor(want, gotB); err != nil {
				t.Fatalf("%s: batch encode differs from codec's: %v", what, err)
			}
			if err := sameTensor(gotS, gotB); err != nil {
				t.Fatalf("%s: batch encode differs from its own Encode: %v", what, err)
			}
			st, err := b.Stats(h)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(st, want.Stats) {
				t.Fatalf("%s: batch Stats differ from codec's:\nwant %s\n got %s", what, statsLine(want.Stats), statsLine(st))
			}
		}
	}
	if t.Failed() {
		return
	}

	// Decode every tensor that fits in one batch, into poisoned buffers:
	// DecodeBatch, each batched decoder, Decode.
	var dsts []Buffer
	var dec []*Tensor
	var src [][]uint16
	for i, c := range cases {
		if c.small {
			continue
		}
		dsts, dec, src = append(dsts, alloc(max(2*len(c.src), 2))), append(dec, batch[i]), append(src, c.src)
	}
	for _, run := range []struct {
		name string
		f    func() error
	}{
		{"DecodeBatch", func() error { return d.DecodeBatch(dsts, dec) }},
		{"decode batch, plain readers", func() error { return d.do(func() error { return d.decodeBatch(dsts, dec, kDecodeBatch) }) }},
		{"decode batch, readers loading ahead", func() error { return d.do(func() error { return d.decodeBatch(dsts, dec, kDecodeBatchPipe) }) }},
		{"Decode, one launch each", func() error {
			for i, x := range dec {
				if err := d.Decode(dsts[i], x); err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		for i, x := range dec {
			bad := make([]uint16, x.N())
			for k := range bad {
				bad[k] = 0xDEAD
			}
			if err := d.UploadBF16(dsts[i], bad); err != nil {
				t.Fatal(err)
			}
		}
		if err := run.f(); err != nil {
			t.Fatalf("%s: %v", run.name, err)
		}
		if err := d.SyncDecodeStatus(); err != nil {
			t.Fatalf("%s: %v", run.name, err)
		}
		for i, x := range dec {
			back := make([]uint16, x.N())
			if err := d.DownloadBF16(back, dsts[i]); err != nil {
				t.Fatal(err)
			}
			if k := testbf16.FirstDiff(src[i], back); k >= 0 {
				t.Fatalf("%s: %s: value %d of %d is %#04x, want %#04x", run.name, x.label(), k, len(back), back[k], src[i][k])
			}
		}
	}
}

// joinedErrors splits an errors.Join.
func joinedErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestBatchMixed: one batch of tensors of every preset and distribution,
// a one-block tensor, a one-value one, an empty one, partial last blocks,
// sizes that are multiples of nothing, an all-zero block (one histogram bin
// holds every count), and an adversarial tensor whose spill does not fit.
func TestBatchMixed(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(21, 22))
	g := func(n int, scale float64) []uint16 { return testbf16.Gaussian(r, n, scale) }
	uniform := make([]uint16, 4097)
	for i := range uniform {
		uniform[i] = uint16(r.Uint32())
	}
	normalCB, _ := fit(g(4096, 0.01), codec.Clean, codec.Gaussian)
	cases := []batchCase{
		fitCase("one block", g(65536, 0.02), codec.Clean, codec.Gaussian),
		fitCase("one value", g(1, 1), codec.High, codec.Laplace),
		fitCase("300 values", g(300, 0.1), codec.Medium, codec.Empirical),
		fitCase("empty", nil, codec.Clean, codec.Gaussian),
		fitCase("three HIGH blocks, partial", g(2*32768+777, 1e-3), codec.High, codec.PowerLaw),
		fitCase("AUTO, partial", g(65536+12345, 0.3), codec.Auto, codec.Empirical),
		fitCase("zeros", make([]uint16, 65536), codec.Clean, codec.Empirical),
		fitCase("AUTO, a C per block", scaledBlocks(r, 3, 777), codec.Auto, codec.Empirical),
		{name: "adversarial", src: uniform, cb: normalCB, l: codec.Layout{Preset: codec.Clean, BlockSize: 65536, StreamBytes: 100, Version: codec.FormatVersion2}, small: true},
	}
	if !emulated(t) {
		for _, n := range []int{7, 4097, 65535, 65537, 300007, 1 << 20, 3<<20 + 99} {
			for _, p := range codec.Presets {
				cases = append(cases, fitCase(fmt.Sprintf("gaussian %d %s", n, p), g(n, 0.05), p, codec.Distributions[n%4]))
			}
		}
		adv := make([]uint16, 3*65536+5)
		for i := range adv {
			adv[i] = uint16(r.Uint32())
		}
		cases = append(cases, batchCase{name: "adversarial, 4 blocks", src: adv, cb: normalCB,
			l: codec.Layout{Preset: codec.Auto, BlockSize: 65536, StreamBytes: 2, Version: codec.FormatVersion2}, small: true})
	}
	checkBatch(t, d, cases)
}

// TestBatchRealTensors: each file's real tensors as one batch per preset and
// distribution (the emulation: three tensors of one file, two choices).
func TestBatchRealTensors(t *testing.T) {
	d := device(t)
	count := 0
	for _, f := range realTensorFiles(t) {
		for _, ch := range codingChoices(t) {
			var cases []batchCase
			for _, nt := range f.tensors {
				cases = append(cases, fitCase(f.name+" "+nt.Name, nt.Values, ch.p, ch.d))
			}
			checkBatch(t, d, cases)
			count += len(cases)
		}
	}
	t.Logf("%d real tensors encoded in batches identical to codec's and to their own Encode, histograms exact, decoded back", count)
}

// TestBatchErrors: what a batch refuses, naming what is wrong.
func TestBatchErrors(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(23, 24))
	src := testbf16.Gaussian(r, 1000, 0.1)
	cb, l := fit(src, codec.Clean, codec.Gaussian)
	var ts []*Tensor
	for i := range 2 {
		x, err := d.NewTensor(len(src), l, cb, 4096, Weights)
		if err != nil {
			t.Fatal(err)
		}
		x.Name = fmt.Sprintf("t%d", i)
		ts = append(ts, x)
		defer x.Free()
	}
	buf, err := d.Alloc(2*len(src), Activations)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	short, err := d.Alloc(2*len(src)-2, Activations)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(short)
	hist, err := d.Alloc(2*HistogramBytes, CodecScratch)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(hist)
	two := []Buffer{buf, buf}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"lengths", d.EncodeBatch(ts, []Buffer{buf}, Buffer{}, nil), "2 tensors, 1 sources"},
		{"duplicate", d.EncodeBatch([]*Tensor{ts[0], ts[0]}, two, Buffer{}, nil), "t0 is tensor 0 and 1"},
		{"short source", d.EncodeBatch(ts, []Buffer{buf, short}, Buffer{}, nil), "source 1 (t1)"},
		{"nil tensor", d.EncodeBatch([]*Tensor{ts[0], nil}, two, Buffer{}, nil), "tensor 1"},
		{"offsets", d.EncodeBatch(ts, two, hist, []int{0}), "1 histogram offsets for 2 tensors"},
		{"overlap", d.EncodeBatch(ts, two, hist, []int{0, 8}), "overlap"},
		{"past the end", d.EncodeBatch(ts, two, hist, []int{0, HistogramBytes + 8}), "histogram 1 at 2056"},
		{"unaligned", d.EncodeBatch(ts, two, hist, []int{4, HistogramBytes + 4}), "histogram 0 at 4"},
		{"decode lengths", d.DecodeBatch(two, ts[:1]), "2 destinations, 1 tensors"},
		{"decode short", d.DecodeBatch([]Buffer{short, buf}, ts), "destination 0 (t0)"},
		{"decode duplicate", d.DecodeBatch(two, []*Tensor{ts[1], ts[1]}), "t1 is tensor 0 and 1"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, c.err, c.want)
		}
	}
}

// TestDecodePipeCorrupt: on corrupt streams the decoder whose readers load
// ahead reports the very error word the plain one does, and where neither
// finds an error, decodes the same values (codec's, checked by
// TestDecodeCorrupt for the plain one).
func TestDecodePipeCorrupt(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(25, 26))
	src := testbf16.Gaussian(r, 65536+1000, 0.02)
	trials := 30
	if emulated(t) {
		trials = 6
	}
	buf, err := d.Alloc(2*len(src), Activations)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(buf)
	failures := 0
	for trial := range trials {
		ct := corruptTensor(t, r, src, trial)
		x, err := d.NewTensor(len(src), ct.Layout, ct.Codebook, len(ct.Overflow), Weights)
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Upload(ct); err != nil {
			t.Fatal(err)
		}
		var words [2]uint64
		var vals [2][]uint16
		for i, k := range []kernel{kDecode, kDecodePipe} {
			err := d.do(func() error {
				if err := d.decodeWith(k, buf, x); err != nil {
					return err
				}
				return x.readStatus()
			})
			if err != nil {
				t.Fatal(err)
			}
			words[i] = x.decodeErr
			vals[i] = make([]uint16, len(src))
			if err := d.DownloadBF16(vals[i], buf); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Free(); err != nil {
			t.Fatal(err)
		}
		if words[0] != words[1] {
			t.Fatalf("trial %d: error word %#x from the plain decoder, %#x loading ahead", trial, words[0], words[1])
		}
		if words[0] != noError {
			failures++
			continue
		}
		if i := testbf16.FirstDiff(vals[0], vals[1]); i >= 0 {
			t.Fatalf("trial %d: value %d: plain %#04x, loading ahead %#04x", trial, i, vals[0][i], vals[1][i])
		}
	}
	if failures == 0 {
		t.Fatal("no trial produced a decode error: the test checks nothing")
	}
	t.Logf("%d of %d corruptions reported alike by both decoders, the rest decoded alike", failures, trials)
}

// TestBatchTables: batches launched again find their tables kept, and more
// distinct batches than the device keeps tables for each find their own
// (kept or uploaded again), as their tensors' bytes and histograms show.
func TestBatchTables(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(27, 28))
	const nt = 3
	var srcs []Buffer
	var ts []*Tensor
	var wants []*codec.Tensor
	var fulls []codec.Histogram
	for i := range nt {
		src := testbf16.Gaussian(r, 3000+1000*i, math.Pow(10, float64(-i)))
		cb, l := fit(src, codec.Presets[i], codec.Gaussian)
		want := cpuEncode(t, src, cb, l)
		buf, err := d.Alloc(2*len(src), Activations)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Free(buf)
		if err := d.UploadBF16(buf, src); err != nil {
			t.Fatal(err)
		}
		x, err := d.NewTensor(len(src), l, cb, len(want.Overflow), Weights)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Free()
		srcs, ts, wants, fulls = append(srcs, buf), append(ts, x), append(wants, want), append(fulls, codec.FullHistogram(src))
	}
	// Every ordered choice of two or three tensors: 12 batches.
	var batches [][]int
	for a := range nt {
		for b := range nt {
			if b == a {
				continue
			}
			batches = append(batches, []int{a, b}, []int{a, b, 3 - a - b})
		}
	}
	if len(batches) <= batchTables {
		t.Fatalf("%d batches do not outnumber the %d tables kept", len(batches), batchTables)
	}
	hist, err := d.Alloc(nt*HistogramBytes, CodecScratch)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(hist)
	// A batch of three (the histogram scratch, in the tables, grows to its
	// size), the first six twice (the second time from the kept tables), all
	// twelve (the least recent rewritten), the first six again.
	order := [][]int{batches[1]}
	order = append(order, batches[:6]...)
	order = append(order, batches[:6]...)
	order = append(order, batches...)
	order = append(order, batches[:6]...)
	var uploads int
	for round, bt := range order {
		switch round {
		case 7:
			uploads = d.batch().uploads
		case 13:
			if got := d.batch().uploads - uploads; got != 0 {
				t.Fatalf("six batches launched again uploaded %d tables, want none", got)
			}
		}
		{
			var bts []*Tensor
			var bsrcs []Buffer
			var offs []int
			for k, i := range bt {
				bts, bsrcs, offs = append(bts, ts[i]), append(bsrcs, srcs[i]), append(offs, k*HistogramBytes)
			}
			if err := d.EncodeBatch(bts, bsrcs, hist, offs); err != nil {
				t.Fatal(err)
			}
			if err := d.SyncStatus(); err != nil {
				t.Fatal(err)
			}
			hb := make([]byte, hist.size)
			if err := d.Download(hb, hist); err != nil {
				t.Fatal(err)
			}
			for k, i := range bt {
				var h codec.Histogram
				for e := range h {
					h[e] = binary.LittleEndian.Uint64(hb[offs[k]+8*e:])
				}
				if h != fulls[i] {
					t.Fatalf("launch %d, batch %v: histogram %d is not tensor %d's", round, bt, k, i)
				}
				got := new(codec.Tensor)
				if err := ts[i].Download(got); err != nil {
					t.Fatal(err)
				}
				got.Stats = wants[i].Stats
				if err := sameTensor(wants[i], got); err != nil {
					t.Fatalf("launch %d, batch %v: tensor %d: %v", round, bt, i, err)
				}
			}
		}
	}
}

// TestDecoders: the readers that load ahead while the grid fits one wave
// of decoding CTAs, the plain ones past it.
func TestDecoders(t *testing.T) {
	d := device(t)
	wave := decodeWaveCTAs * d.info.SMs
	for _, c := range []struct {
		blocks        int
		single, batch kernel
	}{{1, kDecodePipe, kDecodeBatchPipe}, {wave, kDecodePipe, kDecodeBatchPipe}, {wave + 1, kDecode, kDecodeBatch}} {
		if s, b := d.decoders(c.blocks); s != c.single || b != c.batch {
			t.Errorf("%d blocks (wave %d): %s and %s, want %s and %s", c.blocks, wave, kernelNames[s], kernelNames[b], kernelNames[c.single], kernelNames[c.batch])
		}
	}
}

// TestDecodeBatchCorruptFreed: a tensor decoded in a batch and freed at
// once still has its decode error reported by the next status read, and
// the other tensor of the batch has none.
func TestDecodeBatchCorruptFreed(t *testing.T) {
	d := device(t)
	r := rand.New(rand.NewPCG(29, 30))
	src := testbf16.Gaussian(r, 65536+300, 0.02)
	cb, l := fit(src, codec.Clean, codec.Gaussian)
	good := cpuEncode(t, src, cb, l)
	bad := cpuEncode(t, src, cb, l)
	for i := range bad.Streams[:4096] {
		bad.Streams[i] = 0xFF // a run of ones: past capacity, or an invalid prefix
	}
	if codec.Decode(bad, make([]uint16, len(src))) == nil {
		t.Fatal("the corrupt tensor decodes on the host: the test checks nothing")
	}
	var ts []*Tensor
	var dsts []Buffer
	for i, ct := range []*codec.Tensor{good, bad} {
		x, err := d.NewTensor(len(src), l, cb, len(ct.Overflow), Weights)
		if err != nil {
			t.Fatal(err)
		}
		x.Name = []string{"good", "corrupt"}[i]
		if err := x.Upload(ct); err != nil {
			t.Fatal(err)
		}
		dst, err := d.Alloc(2*len(src), Activations)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Free(dst)
		ts, dsts = append(ts, x), append(dsts, dst)
	}
	defer ts[0].Free()
	if err := d.SyncStatus(); err != nil {
		t.Fatal(err)
	}
	if err := d.DecodeBatch(dsts, ts); err != nil {
		t.Fatal(err)
	}
	if err := ts[1].Free(); err != nil {
		t.Fatal(err)
	}
	err := d.SyncStatus()
	var de *DecodeError
	if !errors.As(err, &de) || de.Tensor != "corrupt" || len(joinedErrors(err)) != 1 {
		t.Fatalf("SyncStatus after decoding and freeing the corrupt tensor: %v, want one DecodeError of \"corrupt\"", err)
	}
}
