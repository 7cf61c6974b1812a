package gpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
)

// Batches run the codec over many tensors in one launch: small tensors
// (tens of blocks, each block one CTA) leave most multiprocessors idle, and
// a launch per tensor costs more than the work. A batch's CTAs are the
// blocks of all its tensors; a small table in device memory (struct
// LctBatch of kernels/lct.cu, then the block prefix sums) tells each CTA
// its tensor.

// batchEntryBytes is the size of struct LctBatch.
const batchEntryBytes = 4 * 8

// batchDescBytes is where a batched coder keeps its tensor's descriptor, in
// front of its shared memory (LCT_BATCH_DESC).
const batchDescBytes = 144

// batchState is a device's batch tables and histogram scratch. A trainer
// launches the same few batches every step, so the last batchTables tables
// stay on the device, each in its own buffer, and a batch whose table is
// one of them launches without uploading it. The table is compared byte for
// byte, so a tensor freed and another allocated at its descriptor's address
// finds a table that is right for it. Launches on the device's one stream
// run in order: a table rewritten waits behind the launches before.
type batchState struct {
	tables  [batchTables]batchTable
	clock   uint64
	scratch Buffer // 256 uint64 per tensor, zero between launches
	host    []byte // the table being built
	uploads int    // tables uploaded (tests)
}

// batchTables is how many tables a device keeps.
const batchTables = 8

// batchTable is one table on the device (entries, then the block starts and
// the encoders' ticket counter) and its bytes on the host.
type batchTable struct {
	buf  Buffer
	host []byte
	used uint64 // the clock at its last use: the least recent is rewritten
}

func (d *Device) batch() *batchState { return &d.batches }

// batchItem is one tensor of a launch with the values it reads or writes
// and, for an encode that counts, where its histogram goes.
type batchItem struct {
	t    *Tensor
	data Buffer
	hist Ptr // 0: none
}

// upload writes the table of items (tensors without blocks among them are
// passed over by the kernels' lookup) and returns its address, the block
// starts' address (followed by the encoders' ticket counter) and the total
// number of blocks. With scratch it points
// each entry at its own zeroed histogram scratch.
func (s *batchState) upload(d *Device, items []batchItem, scratch bool) (table, starts uint64, blocks int, err error) {
	n := len(items)
	size := n*batchEntryBytes + 4*(n+2)
	if scratch && (!s.scratch.Valid() || s.scratch.size < n*HistogramBytes) {
		// Kernels leave the scratch zero; a new buffer starts so.
		if err := d.grow(&s.scratch, n*HistogramBytes, CodecScratch); err != nil {
			return 0, 0, 0, err
		}
		if err := d.drv.memset32(Ptr(s.scratch.ptr), 0, s.scratch.size/4); err != nil {
			return 0, 0, 0, err
		}
	}
	s.host = resize(s.host, size)
	b := s.host
	le := binary.LittleEndian
	for i, it := range items {
		e := b[i*batchEntryBytes:]
		le.PutUint64(e, uint64(it.t.desc.ptr))
		le.PutUint64(e[8:], uint64(it.data.ptr))
		le.PutUint64(e[16:], uint64(it.hist))
		sc := uint64(0)
		if scratch {
			sc = uint64(s.scratch.ptr) + uint64(i*HistogramBytes)
		}
		le.PutUint64(e[24:], sc)
		le.PutUint32(b[n*batchEntryBytes+4*i:], uint32(blocks))
		blocks += it.t.blocks()
	}
	le.PutUint32(b[n*batchEntryBytes+4*n:], uint32(blocks))
	// The encoders' ticket counter, 0 between launches (kernels/lct.cu,
	// take_ticket): a table uploaded again is uploaded with it at 0.
	le.PutUint32(b[n*batchEntryBytes+4*(n+1):], 0)
	s.clock++
	tab := &s.tables[0]
	for i := range s.tables {
		x := &s.tables[i]
		if x.buf.Valid() && bytes.Equal(x.host, b) {
			tab = x
			break
		}
		if x.used < tab.used {
			tab = x
		}
	}
	if !tab.buf.Valid() || !bytes.Equal(tab.host, b) {
		if err := d.grow(&tab.buf, size, CodecScratch); err != nil {
			return 0, 0, 0, err
		}
		if err := d.htod(tab.buf, 0, b); err != nil {
			tab.host = tab.host[:0]
			return 0, 0, 0, err
		}
		tab.host = append(tab.host[:0], b...)
		s.uploads++
	}
	tab.used = s.clock
	return uint64(tab.buf.ptr), uint64(tab.buf.ptr) + uint64(n*batchEntryBytes), blocks, nil
}

// EncodeBatch encodes each srcs[i] into ts[i], as Encode(ts[i], srcs[i])
// does, with the same bytes, status words and overflow handling: tensors
// may differ in size, layout, codebook and stream capacity, and all of them
// are encoded by one launch of the encoder (which writes the overflow too).
// When hist is valid it also writes each source's full exponent histogram
// (256 little-endian uint64 counts, what HistogramInto writes) at
// hist+histOffs[i], counted as the encoder reads the values. The tensors must
// be distinct (each has one set of status words) and the histograms must not
// overlap. It does not wait for the device.
func (d *Device) EncodeBatch(ts []*Tensor, srcs []Buffer, hist Buffer, histOffs []int) error {
	if len(srcs) != len(ts) {
		return fmt.Errorf("gpu: encode batch: %d tensors, %d sources", len(ts), len(srcs))
	}
	if err := d.checkBatch("encode batch", ts, srcs, "source"); err != nil {
		return err
	}
	withHist := hist.Valid()
	if withHist {
		if err := checkHistOffsets(hist, histOffs, len(ts)); err != nil {
			return err
		}
	}
	return d.do(func() error { return d.encodeBatch(ts, srcs, hist, histOffs) })
}

// encodeBatch is EncodeBatch after the checks.
func (d *Device) encodeBatch(ts []*Tensor, srcs []Buffer, hist Buffer, histOffs []int) error {
	withHist := hist.Valid()
	items := make([]batchItem, 0, len(ts))
	for i, t := range ts {
		it := batchItem{t: t, data: srcs[i]}
		if withHist {
			it.hist = hist.ptr + Ptr(histOffs[i])
		}
		if t.blocks() == 0 {
			// Nothing to launch for: the status (and the histogram) of an
			// empty tensor are set here.
			if err := t.setStatus(0); err != nil {
				return err
			}
			if withHist {
				if err := d.drv.memset32(Ptr(it.hist), 0, HistogramBytes/4); err != nil {
					return err
				}
			}
			continue
		}
		items = append(items, it)
	}
	switch {
	case len(items) == 0:
		return nil
	case len(items) == 1 && !withHist:
		return d.encode(items[0].t, items[0].data)
	}
	s := d.batch()
	table, starts, blocks, err := s.upload(d, items, withHist)
	if err != nil {
		return err
	}
	smem, k := 0, kEncodeBatch
	if withHist {
		k = kEncodeBatchHist
	}
	for _, it := range items {
		c := it.t.layout.StreamBytes
		need := encodeSmem(c)
		if withHist {
			need += encodeHistSmem(c)
		}
		smem = max(smem, need)
	}
	return d.launch(k, blocks, threads, batchDescBytes+smem, table, starts, uint64(len(items)))
}

// DecodeBatch decodes each ts[i] into dsts[i], as Decode(dsts[i], ts[i])
// does, in one launch (after one that resets the tensors' error words). A
// batch holds each tensor once. It does not wait for the device; corrupt data is
// reported at SyncStatus, for each tensor.
func (d *Device) DecodeBatch(dsts []Buffer, ts []*Tensor) error {
	if len(dsts) != len(ts) {
		return fmt.Errorf("gpu: decode batch: %d destinations, %d tensors", len(dsts), len(ts))
	}
	if err := d.checkBatch("decode batch", ts, dsts, "destination"); err != nil {
		return err
	}
	return d.do(func() error {
		blocks := 0
		for _, t := range ts {
			blocks += t.blocks()
		}
		_, k := d.decoders(blocks)
		return d.decodeBatch(dsts, ts, k)
	})
}

// decodeBatch is DecodeBatch after the checks, with batched decoder k
// (kDecodeBatch or kDecodeBatchPipe; a batch of one takes its single
// counterpart).
func (d *Device) decodeBatch(dsts []Buffer, ts []*Tensor, k kernel) error {
	switch len(ts) {
	case 0:
		return nil
	case 1:
		single := kDecodePipe
		if k == kDecodeBatch {
			single = kDecode
		}
		return d.decodeWith(single, dsts[0], ts[0])
	}
	items := make([]batchItem, len(ts))
	smem := 0
	for i, t := range ts {
		items[i] = batchItem{t: t, data: dsts[i]}
		smem = max(smem, decodeSmem(t.layout.StreamBytes))
	}
	s := d.batch()
	table, starts, blocks, err := s.upload(d, items, false)
	if err != nil {
		return err
	}
	// Every tensor's error word is reset, those without blocks too, and
	// each is marked as decoded since the last status read, as clearError
	// marks it (a tensor freed before a read reports its decode keeps its
	// status slot until one does).
	if err := d.launch(kBatchClearErrors, 1, threads, 0, table, uint64(len(items))); err != nil {
		return err
	}
	for _, t := range ts {
		t.markDecoded()
	}
	return d.launch(k, blocks, threads, batchDescBytes+smem, table, starts, uint64(len(items)))
}

// decodeWith is decode with decoder k.
func (d *Device) decodeWith(k kernel, dst Buffer, t *Tensor) error {
	if err := t.clearError(); err != nil {
		return err
	}
	return d.launch(k, t.blocks(), threads, decodeSmem(t.layout.StreamBytes), ptrArg(t.desc), ptrArg(dst))
}

// encodeHistSmem is what counting the histogram adds to the encoder's
// shared memory for stream capacity c: nothing where each row has a word to
// spare for one bin (kernels/lct.cu, hist_in_rows), else 256 counters.
func encodeHistSmem(c int) int {
	if rowStrideOut(c) > (c+3)/4+1 {
		return 0
	}
	return 256 * 4
}

// checkBatch checks a batch's tensors and dense buffers (what names them in
// errors); the tensors must be distinct.
func (d *Device) checkBatch(op string, ts []*Tensor, bufs []Buffer, what string) error {
	seen := make(map[*Tensor]int, len(ts))
	for i, t := range ts {
		if err := t.check(d); err != nil {
			return fmt.Errorf("gpu: %s: tensor %d: %w", op, i, err)
		}
		if j, ok := seen[t]; ok {
			return fmt.Errorf("gpu: %s: %s is tensor %d and %d; a batch holds each tensor once", op, t.label(), j, i)
		}
		seen[t] = i
		if err := checkDense(fmt.Sprintf("%s: %s %d (%s)", op, what, i, t.label()), bufs[i], t.n); err != nil {
			return err
		}
	}
	return nil
}

// checkHistOffsets checks that n histograms at offs fit hist, 8-aligned and
// without overlapping.
func checkHistOffsets(hist Buffer, offs []int, n int) error {
	if len(offs) != n {
		return fmt.Errorf("gpu: encode batch: %d histogram offsets for %d tensors", len(offs), n)
	}
	order := make([]int, n)
	for i, off := range offs {
		if off < 0 || off%8 != 0 || off+HistogramBytes > hist.size {
			return fmt.Errorf("gpu: encode batch: histogram %d at %d into a %d-byte buffer (want 8-aligned, %d bytes each)", i, off, hist.size, HistogramBytes)
		}
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return offs[order[a]] < offs[order[b]] })
	for k := 1; k < n; k++ {
		a, b := order[k-1], order[k]
		if offs[b] < offs[a]+HistogramBytes {
			return fmt.Errorf("gpu: encode batch: histograms %d (at %d) and %d (at %d) overlap", a, offs[a], b, offs[b])
		}
	}
	return nil
}
