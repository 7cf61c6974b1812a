package lctfile

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"lcttop/codec"
	"lcttop/codec/safetensors"
)

// packJob is one segment on its way through a streaming pack.
type packJob struct {
	index  int
	seg    Segment
	raw    []byte   // the original bytes: in the mapping, or a stream's buffer
	vals   []uint16 // a BF16 candidate's values (raw itself where it can be)
	cb     codec.Codebook
	layout codec.Layout
	plen   int
	pieces []*codec.Tensor
	crcs   []uint32               // each piece's original bytes' CRC-32C
	blocks []codec.SplitHistogram // its blocks' split histograms where the plan counted them
	kept   int64                  // residue bytes its pieces hold, of the stream's keptResidues
	// recycle: its pieces are version 3 tensors of the CPU codec, whose
	// buffers go to later pieces once written.
	recycle bool

	mu     sync.Mutex
	left   int
	err    error // of the lowest piece that failed
	errAt  int
	done   chan struct{}
	failed bool
}

// finish records piece i's outcome (and, where it keeps its residues, the
// bytes of keptResidues it holds); the last piece closes done.
func (j *packJob) finish(i int, err error, keep bool, kept int64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if keep {
		j.kept += kept
	}
	if err != nil && (j.err == nil || i < j.errAt) {
		j.err, j.errAt, j.failed = err, i, true
	}
	j.left--
	if j.left == 0 {
		close(j.done)
	}
}

func (j *packJob) hasFailed() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failed
}

type pieceTask struct {
	job *packJob
	i   int
}

// PackStream packs the safetensors file that in holds into an .lct file
// written to w, in file order, the bytes Pack gives. Memory stays bounded
// whatever the file's size: BF16 tensors are encoded in pieces of whole
// blocks (codec.WritePieces) on opt.Workers goroutines, each piece read
// through the mapping, verified (opt.Verify) and its pages released, and
// the sf bytes taken again from the file when the tensor is written; a
// few segments at most are in flight. On error or cancellation w holds
// part of a file: write to an Output and abort it.
func PackStream(ctx context.Context, in *Input, w io.Writer, opt Options) (Summary, error) {
	var sum Summary
	prefix, err := in.Next(8)
	if err != nil {
		return sum, fmt.Errorf("not a safetensors file: %d bytes, shorter than the 8-byte header length", in.Offset())
	}
	n, err := safetensors.HeaderLen(prefix, in.Rest())
	if err != nil {
		return sum, err
	}
	header, err := in.Next(int64(n))
	if err != nil {
		return sum, fmt.Errorf("not a safetensors file or truncated: header length %d but the input ended first", n)
	}
	dataLen := in.Rest()
	st, err := safetensors.ParseHeader(header, cmpOr(dataLen, math.MaxInt64))
	if err != nil {
		return sum, err
	}
	if dataLen < 0 { // a stream: the data ends with the last tensor
		for _, t := range st.Tensors {
			dataLen = max(dataLen, t.End)
		}
		dataLen = max(dataLen, 0)
	}
	segs, err := cutSegments(st.Tensors, dataLen)
	if err != nil {
		return sum, err
	}
	version, err := opt.version()
	if err != nil {
		return sum, err
	}
	opt.Version = version
	header = append([]byte(nil), header...) // the mapping's pages go; the header stays
	cw := newCRCWriter(w)
	var pre []byte
	pre = append(pre, Magic...)
	pre = binary.LittleEndian.AppendUint16(pre, uint16(version))
	pre = binary.LittleEndian.AppendUint16(pre, 0)
	pre = binary.LittleEndian.AppendUint64(pre, uint64(len(header)))
	pre = binary.LittleEndian.AppendUint32(pre, headerCRC(header))
	pre = append(pre, header...)
	pre = binary.LittleEndian.AppendUint32(pre, uint32(len(segs)))
	if _, err := cw.Write(pre); err != nil {
		return sum, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := streamWorkers(opt.Workers)
	codecs := streamCodecs(opt.Backend, workers)
	jobs := make(chan *packJob, 1024)
	tasks := make(chan pieceTask, 2*workers)
	bud := newBudget(ctx)
	kept := &keptResidues{}
	kept.left.Store(residueBudget)
	rec := &recycler{}
	var wg sync.WaitGroup
	var readErr error // the dispatcher's, read after jobs closes
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(tasks)
		defer close(jobs)
		readErr = dispatchPack(ctx, in, segs, st.Metadata, opt, bud, rec, jobs, tasks)
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := pieceWorker{codec: codecs[w], verify: opt.Verify, kept: kept, rec: rec}
			for t := range tasks {
				pw.run(ctx, in, t)
			}
		}()
	}
	defer wg.Wait() // nothing may read the mapping once the caller closes it

	total := 0
	for i := range segs {
		if segs[i].Kind == KindTensor {
			total++
		}
	}
	report := func() {
		if opt.Progress != nil {
			opt.Progress(Progress{InBytes: in.Offset(), InTotal: in.Size(), OutBytes: cw.n, Tensors: sum.Tensors, TensorsTotal: total})
		}
	}
	report()
	for j := range jobs {
		select {
		case <-j.done:
		case <-ctx.Done():
			return sum, ctx.Err()
		}
		if j.err != nil {
			cancel()
			return sum, segmentErr(j.index, &j.seg, j.err)
		}
		rec.giveBlockHists(j.blocks) // the encoders are done with them
		j.blocks = nil
		encoded, err := writePackSegment(cw, in, j)
		if err != nil {
			cancel()
			return sum, err
		}
		if j.recycle {
			rec.givePieces(j.pieces)
		}
		bud.release(j.seg.OriginalLen)
		kept.give(j.kept)
		sum.add(&j.seg, encoded)
		report()
	}
	if readErr != nil {
		return sum, readErr
	}
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	if !in.AtEnd() {
		return sum, fmt.Errorf("bytes follow the last tensor's: pack the file itself, not a stream of it, to keep them")
	}
	var trailer [4]byte
	binary.LittleEndian.PutUint32(trailer[:], cw.crc)
	if _, err := cw.w.Write(trailer[:]); err != nil {
		return sum, err
	}
	cw.n += 4
	if err := cw.w.Flush(); err != nil {
		return sum, err
	}
	sum.InBytes, sum.OutBytes = in.Offset(), cw.n
	return sum, nil
}

func cmpOr(v, fallback int64) int64 {
	if v < 0 {
		return fallback
	}
	return v
}

// dispatchPack reads the segments in order, within the budget, and hands
// each BF16 candidate's pieces to the workers.
func dispatchPack(ctx context.Context, in *Input, segs []Segment, meta map[string]string, opt Options, bud *budget, rec *recycler, jobs chan<- *packJob, tasks chan<- pieceTask) error {
	for i := range segs {
		s := segs[i]
		if err := bud.acquire(ctx, s.OriginalLen); err != nil {
			return err
		}
		raw, err := in.Next(s.OriginalLen)
		if err != nil {
			return segmentErr(i, &s, fmt.Errorf("%w: the input ended %d bytes into the data", ErrTruncated, in.Offset()))
		}
		j := &packJob{index: i, seg: s, raw: raw, done: make(chan struct{})}
		n := len(raw) / 2
		if s.Encoding != EncodingLCT || len(raw)%2 != 0 || n == 0 || n > codec.MaxElements {
			j.seg.Encoding = EncodingRaw
			close(j.done)
		} else {
			preset, dist := opt.Preset, opt.Dist
			if opt.PerTensor != nil {
				if p, d, ok := opt.PerTensor(s.Name, meta); ok {
					preset, dist = p, d
				}
			}
			j.vals = bf16View(raw)
			cb, layout, blocks, err := planStream(in, raw, j.vals, codec.Options{Preset: preset, Dist: dist, Version: opt.Version}, rec)
			if err != nil {
				return segmentErr(i, &s, fmt.Errorf("encoding: %w", err))
			}
			j.cb, j.layout, j.blocks = cb, layout, blocks
			j.recycle = opt.Backend == nil && opt.Version == codec.FormatVersion3
			j.plen = codec.PieceLen(j.layout)
			j.pieces = make([]*codec.Tensor, (n+j.plen-1)/j.plen)
			j.crcs = make([]uint32, len(j.pieces))
			j.left = len(j.pieces)
		}
		select {
		case jobs <- j:
		case <-ctx.Done():
			return ctx.Err()
		}
		for k := range j.pieces {
			select {
			case tasks <- pieceTask{j, k}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// planStream is codec.Plan of a tensor's values, vals (raw's, a part of
// what Next returned). In version 3 the histogram of every value is
// counted a piece at a time, the sample's values with it, each piece's
// pages released once counted (but for a tensor of one piece), so that a
// mapped tensor is not resident whole. An empirical codebook is fitted to
// the full histogram alone; for a tensor of one piece it is counted block
// by block, and the blocks' histograms returned for the encoder
// (codec.EncodeCounted), in a slice from rec.
func planStream(in *Input, raw []byte, vals []uint16, opt codec.Options, rec *recycler) (codec.Codebook, codec.Layout, []codec.SplitHistogram, error) {
	if opt.Version == codec.FormatVersion2 { // the sample alone, as codec.Plan fits version 2
		sample := in.sampleHistogram(raw, vals)
		cb := codec.FitCodebookVersion(opt.Dist, &sample, opt.Version)
		l := codec.ChooseLayout(opt.Preset, &cb, &sample).WithVersion(opt.Version)
		return cb, codec.PerBlockLayout(l, len(vals)), nil, nil
	}
	n := len(vals)
	if opt.Dist == codec.Empirical && n <= histogramPiece {
		blocks, full := codec.BlockSplitHistograms(rec.blockHists(), vals, opt.Preset)
		var unused codec.Histogram // the sample fits the parametric codebooks only
		cb, l, err := codec.PlanHistograms(n, &full, &unused, opt)
		if len(blocks) != l.Blocks(n) {
			rec.giveBlockHists(blocks)
			blocks = nil
		}
		return cb, l, blocks, err
	}
	var sample codec.Histogram
	var full codec.SplitHistogram
	for lo := 0; lo < n; lo += histogramPiece {
		hi := min(lo+histogramPiece, n)
		h := codec.FullSplitHistogram(vals[lo:hi]) // its pages in, front to back
		for b, c := range h {
			full[b] += c
		}
		if n <= histogramPiece { // one piece, coded next: its pages stay
			sample = codec.SampleHistogram(vals)
			break
		}
		for k := range codec.SampleSize { // n > SampleSize: the sampled indices in this piece
			if i := codec.SampleIndex(k, n); lo <= i && i < hi {
				sample[byte(vals[i]>>7)]++
			}
		}
		in.Release(raw[2*lo : 2*hi])
	}
	cb, l, err := codec.PlanHistograms(n, &full, &sample, opt)
	return cb, l, nil, err
}

// histogramPiece is how many values planStream counts between releases.
const histogramPiece = 1 << 20

// residueBudget bounds the bytes of residues that encoded pieces keep
// until written: a piece's residues are at most a byte a value, so the
// pieces of streamBudget's segments keep theirs. Past it, a piece's
// residues are packed again from the file when it is written.
const residueBudget = streamBudget / 2

// keptResidues is what is left of residueBudget.
type keptResidues struct{ left atomic.Int64 }

// take reserves n bytes if they fit.
func (k *keptResidues) take(n int64) bool {
	if k.left.Add(-n) >= 0 {
		return true
	}
	k.left.Add(n)
	return false
}

func (k *keptResidues) give(n int64) { k.left.Add(n) }

// pieceWorker encodes pieces with its own codec and scratch.
type pieceWorker struct {
	codec  Backend
	verify bool
	kept   *keptResidues
	rec    *recycler
	sf     []byte // scratch residues of a piece that keeps none
	check  []uint16
}

func (w *pieceWorker) run(ctx context.Context, in *Input, t pieceTask) {
	j := t.job
	if ctx.Err() != nil || j.hasFailed() {
		j.finish(t.i, nil, false, 0)
		return
	}
	lo := t.i * j.plen
	hi := min(lo+j.plen, len(j.vals))
	vals := j.vals[lo:hi]
	keep := w.kept.take(int64(len(vals))) // the residues' bytes at most
	p := &codec.Tensor{}
	if j.recycle {
		p = w.rec.piece()
	}
	if !keep {
		p.SF = w.sf[:0]
	}
	err := w.encode(p, j, lo, vals)
	if err != nil {
		err = fmt.Errorf("encoding: %w", err)
	} else if w.verify {
		err = w.verifyPiece(p, vals, lo)
	}
	if !keep {
		w.sf, p.SF = p.SF, nil // taken again from the file when written
	}
	j.crcs[t.i] = crc32Update(0, j.raw[2*lo:2*hi]) // while its pages are in
	// A large tensor's pages go a piece at a time; a small one's, with
	// its neighbours', once the writer is past them (releaseBefore).
	if len(j.pieces) > 1 {
		in.Release(j.raw[2*lo : 2*hi])
	}
	j.pieces[t.i] = p
	j.finish(t.i, err, keep, int64(len(vals)))
}

// encode encodes the piece of j whose values, from lo on, are vals: with
// the blocks' histograms the plan counted where the codec takes them.
func (w *pieceWorker) encode(p *codec.Tensor, j *packJob, lo int, vals []uint16) error {
	l := codec.PerBlockLayout(j.layout, len(vals))
	if cpu, ok := w.codec.(*cpuBackend); ok && j.blocks != nil {
		b := lo / l.BlockSize
		return cpu.enc.EncodeCounted(p, vals, j.cb, l, j.blocks[b:b+l.Blocks(len(vals))])
	}
	return w.codec.Encode(p, vals, j.cb, l)
}

// verifyPiece decodes what was just encoded and compares, so that a codec
// fault is caught while the original is at hand.
func (w *pieceWorker) verifyPiece(p *codec.Tensor, vals []uint16, lo int) error {
	w.check = resizeU16(w.check, len(vals))
	if err := w.codec.Decode(p, w.check); err != nil {
		return fmt.Errorf("verifying: decoding what was just encoded: %w", err)
	}
	if i := firstDifference(w.check, vals); i >= 0 {
		return fmt.Errorf("verifying: value %d decodes to 0x%04x, was 0x%04x (codec fault; nothing written)", lo+i, w.check[i], vals[i])
	}
	return nil
}

func resizeU16(s []uint16, n int) []uint16 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]uint16, n)
}

// writePackSegment writes one segment: as an LCT tensor where its pieces
// are smaller than its bytes, else raw. It reports which.
func writePackSegment(cw *crcWriter, in *Input, j *packJob) (bool, error) {
	s := &j.seg
	encoding, payloadLen := EncodingRaw, int64(len(j.raw))
	if j.pieces != nil {
		stored, err := codec.PiecesBytes(j.pieces)
		if err != nil {
			return false, segmentErr(j.index, s, fmt.Errorf("serialising LCT tensor: %w", err))
		}
		if stored < len(j.raw) {
			encoding, payloadLen = EncodingLCT, int64(stored)
		}
	}
	var crc uint32
	if j.pieces != nil { // the pieces' CRCs joined
		for i, c := range j.crcs {
			lo := int64(i * j.plen)
			crc = crc32Combine(crc, c, 2*(min(lo+int64(j.plen), int64(len(j.vals)))-lo))
		}
	} else if len(j.raw) <= ioChunk {
		crc = crc32Update(0, j.raw) // its pages stay for the write
	} else {
		_ = chunks(in, j.raw, func(b []byte) error {
			crc = crc32Update(crc, b)
			return nil
		})
	}
	var h []byte
	h = append(h, s.Kind, encoding)
	h = binary.LittleEndian.AppendUint16(h, uint16(len(s.Name)))
	h = append(h, s.Name...)
	h = binary.LittleEndian.AppendUint64(h, uint64(s.OriginalLen))
	h = binary.LittleEndian.AppendUint32(h, crc)
	h = binary.LittleEndian.AppendUint64(h, uint64(payloadLen))
	if _, err := cw.Write(h); err != nil {
		return false, err
	}
	if encoding == EncodingRaw {
		return false, chunksInOrder(in, j.raw, func(b []byte) error {
			_, err := cw.Write(b)
			return err
		})
	}
	before := cw.n
	err := codec.WritePieces(cw, j.pieces, func(i int) ([]uint16, error) {
		lo := i * j.plen
		hi := min(lo+j.plen, len(j.vals))
		if i > 0 {
			in.Release(j.raw[2*(lo-j.plen) : 2*lo])
		}
		return j.vals[lo:hi], nil
	})
	in.releaseBefore(j.raw)
	if err != nil {
		return false, writeOrSegmentErr(err, j.index, s)
	}
	if cw.n-before != payloadLen {
		return false, segmentErr(j.index, s, fmt.Errorf("serialising LCT tensor: wrote %d bytes, expected %d", cw.n-before, payloadLen))
	}
	return true, nil
}

func crc32Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// writeOrSegmentErr keeps a write error as it is (it names the output) and
// ties any other to the segment.
func writeOrSegmentErr(err error, i int, s *Segment) error {
	var we *writeError
	if errors.As(err, &we) {
		return err
	}
	return segmentErr(i, s, err)
}
