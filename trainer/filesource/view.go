package filesource

import (
	"errors"
	"sync"

	"lcttop/codec"
	"lcttop/session"
)

// view is a checkpoint with its figures: estimates from the samples, made
// exact tensor by tensor.
type view struct {
	ck      *checkpoint
	samples []codec.SplitHistogram // per tensor, when sampled[i]
	sampled []bool                 // an .lct file's LCT tensors are sampled once decoded
	// full is every value's split histogram, where haveFull: what pack
	// fits a codebook to and takes the sign from, so the exact pass counts
	// it first.
	full     []codec.SplitHistogram
	haveFull []bool
	stats    []session.TensorStats
	jobs     []job
	cursor   int  // tensors before it need no more pieces handed out
	pointed  bool // its exact figures are in the history
}

// job is one coded tensor's exact pass under its current setting: first,
// where the tensor's full histogram is not known yet, pieces that count it
// (scan), then pieces that code it.
type job struct {
	gen       int // bumps when the setting changes; older pieces are dropped
	ch        choice
	scan      bool
	exact     bool
	plen      int // elements per piece
	pieces    int
	handed    int // pieces handed out
	finished  int
	bytesDone int64
	header    int
	tally     tally
}

// newView samples every coded tensor of ck on the session's workers and
// estimates its figures; tensors the codec does not take are listed as
// stored.
func (s *Session) newView(ck *checkpoint) (*view, error) {
	n := len(ck.tensors)
	v := &view{ck: ck, samples: make([]codec.SplitHistogram, n), sampled: make([]bool, n), stats: make([]session.TensorStats, n), jobs: make([]job, n),
		full: make([]codec.SplitHistogram, n), haveFull: make([]bool, n)}
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(s.opt.workers(), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n || s.isStopped() {
					return
				}
				t := ck.tensors[i]
				switch {
				case !t.coded():
					v.stats[i] = storedAsIs(t)
				case t.lct != nil:
					v.stats[i] = t.stored
				default:
					v.samples[i] = sampleHistogram(t)
					v.sampled[i] = true
				}
			}
		}()
	}
	wg.Wait()
	if s.isStopped() {
		return nil, errStopped
	}
	for i, t := range ck.tensors {
		if t.coded() {
			s.resetJob(v, i)
		}
	}
	return v, nil
}

// errStopped ends work the session no longer wants.
var errStopped = errors.New("stopped")

func (s *Session) isStopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// resetJob starts tensor i's exact pass over under its current setting,
// its figures estimated from the sample meanwhile. mu is held, or v is not
// shown yet.
func (s *Session) resetJob(v *view, i int) {
	t := v.ck.tensors[i]
	j := &v.jobs[i]
	*j = job{gen: j.gen + 1, pieces: 1, plen: t.n}
	if !v.sampled[i] {
		return // an LCT tensor: the pass decodes it, samples, then codes it whole
	}
	cc := s.codecFor(t)
	est := choose(cc, t.n, &v.samples[i], nil)
	v.stats[i] = estimate(t, &v.samples[i], est)
	j.ch = est
	if v.haveFull[i] {
		j.ch = choose(cc, t.n, &v.samples[i], &v.full[i])
	} else {
		j.scan = true
		clear(v.full[i][:])
	}
	j.plen = pieceLen(j.ch.layout)
	j.pieces = (t.n + j.plen - 1) / j.plen
	j.header = headerBytes(j.ch)
}

// progress counts the exact pass over the coded tensors.
func (v *view) progress() session.Progress {
	var p session.Progress
	for i, t := range v.ck.tensors {
		if !t.coded() {
			continue
		}
		p.Tensors++
		p.Bytes += t.bytes
		p.BytesDone += v.jobs[i].bytesDone
		if v.jobs[i].exact {
			p.TensorsDone++
		}
	}
	return p
}

// setViewLocked shows v, retiring the view before it; mu is held.
func (s *Session) setViewLocked(v *view) {
	old := s.view
	s.view = v
	s.hist.put(pointOf(v))
	s.work.Broadcast()
	if old != nil {
		go old.ck.close() // once its readers are done
	}
}

// recode starts the exact pass over for the shown tensors that match, at
// their new setting, and shows their estimates at once.
func (s *Session) recode(match func(*tensor) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.view
	if v == nil {
		return
	}
	for i, t := range v.ck.tensors {
		if t.coded() && match(t) {
			s.resetJob(v, i)
			v.cursor = min(v.cursor, i)
		}
	}
	v.pointed = false
	s.work.Broadcast()
	s.changedLocked()
}

// task is one piece of the exact pass.
type task struct {
	v     *view
	i     int
	gen   int
	piece int
	ch    choice
	scan  bool // count the piece's histogram, not code it
	whole bool // an LCT tensor: decode, sample, choose, code every piece
}

// nextTask hands out the next piece of the shown checkpoint's exact pass,
// waiting while there is none; ok is false once the session stops.
func (s *Session) nextTask() (tk task, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.stopped {
			return task{}, false
		}
		if v := s.view; v != nil {
			for ; v.cursor < len(v.jobs); v.cursor++ {
				i := v.cursor
				j := &v.jobs[i]
				if !v.ck.tensors[i].coded() || j.exact || j.handed >= j.pieces {
					continue
				}
				tk = task{v: v, i: i, gen: j.gen, piece: j.handed, ch: j.ch, scan: j.scan, whole: !v.sampled[i]}
				j.handed++
				v.ck.refs.Add(1)
				return tk, true
			}
		}
		s.work.Wait()
	}
}

// startWorkers runs the exact pass on opt.Workers goroutines.
func (s *Session) startWorkers() {
	for range s.opt.workers() {
		s.workersWG.Add(1)
		go func() {
			defer s.workersWG.Done()
			w := &worker{s: s, enc: codec.Encoder{Workers: 1}}
			for {
				tk, ok := s.nextTask()
				if !ok {
					return
				}
				w.run(tk)
				tk.v.ck.refs.Done()
			}
		}()
	}
}

// readAhead is how many pieces past its own a worker asks the kernel to read.
const readAhead = 4

// worker is one goroutine of the exact pass with its scratch.
type worker struct {
	s    *Session
	enc  codec.Encoder
	out  codec.Tensor
	vals []uint16
}

func (w *worker) run(tk task) {
	t := tk.v.ck.tensors[tk.i]
	if !tk.whole {
		plen := pieceLen(tk.ch.layout)
		lo := tk.piece * plen
		hi := min(lo+plen, t.n)
		raw := t.raw[2*lo : 2*hi]
		// Ask for this piece and the next few, so that a cold file is read
		// while the pieces before are coded.
		t.src.prefetch(t.raw[2*lo : 2*min(hi+readAhead*plen, t.n)])
		if cap(w.vals) < hi-lo {
			w.vals = make([]uint16, hi-lo)
		}
		vals := w.vals[:hi-lo]
		t.values(lo, hi, vals)
		t.src.release(raw)
		if tk.scan {
			h := codec.FullSplitHistogram(vals)
			w.s.finishScan(tk, &h)
			return
		}
		if err := w.encode(vals, tk.ch); err != nil {
			w.s.failed(tk, err)
			return
		}
		w.s.finishPiece(tk, &w.out, int64(2*(hi-lo)))
		return
	}
	// An .lct file's LCT tensor: decode it, sample it, and code it here.
	vals, err := t.decodeAll()
	if err != nil {
		w.s.failed(tk, err)
		return
	}
	sample, full := codec.SampleSplitHistogram(vals), codec.FullSplitHistogram(vals)
	ch, gen, ok := w.s.sampledWhole(tk, &sample, &full)
	if !ok {
		return
	}
	tk.gen, tk.ch = gen, ch
	plen := pieceLen(ch.layout)
	for lo := 0; lo < t.n; lo += plen {
		hi := min(lo+plen, t.n)
		if err := w.encode(vals[lo:hi], ch); err != nil {
			w.s.failed(tk, err)
			return
		}
		tk.piece = lo / plen
		if !w.s.finishPiece(tk, &w.out, int64(2*(hi-lo))) {
			return
		}
	}
}

// encode codes one piece. AUTO pieces are coded with a capacity per block,
// each block's chosen from its own values as pack chooses it; the tally
// drops the table where every block of the tensor got the same C.
func (w *worker) encode(vals []uint16, ch choice) error {
	l := codec.PerBlockLayout(ch.layout, len(vals))
	if b := w.s.opt.Backend; b != nil {
		w.s.backendMu.Lock()
		defer w.s.backendMu.Unlock()
		return b.Encode(&w.out, vals, ch.cb, l)
	}
	return w.enc.Encode(&w.out, vals, ch.cb, l)
}

// sampledWhole records an LCT tensor's sample and full histogram once
// decoded and returns the choice to code it with; ok is false when the
// tensor is no longer wanted.
func (s *Session) sampledWhole(tk task, sample, full *codec.SplitHistogram) (choice, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := tk.v
	if s.view != v {
		return choice{}, 0, false
	}
	v.samples[tk.i], v.sampled[tk.i] = *sample, true
	v.full[tk.i], v.haveFull[tk.i] = *full, true
	j := &v.jobs[tk.i]
	gen := j.gen
	if gen != tk.gen {
		// The setting changed while it was decoded. Unless a task for the
		// new setting is decoding it already, its pass starts over from
		// the sample, in pieces.
		if j.handed == 0 {
			s.resetJob(v, tk.i)
			j.gen = gen
			s.work.Broadcast()
		}
		return choice{}, 0, false
	}
	s.resetJob(v, tk.i) // now with the sample: the setting's choice and pieces
	j.gen = gen         // the same pass goes on, here
	j.handed = j.pieces
	return j.ch, j.gen, true
}

// finishScan counts a scanned piece's histogram; with the last, the tensor
// gets pack's choice and its pieces are handed out again, to be coded.
func (s *Session) finishScan(tk task, h *codec.SplitHistogram) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := tk.v
	j := &v.jobs[tk.i]
	if s.view != v || j.gen != tk.gen || !j.scan {
		return
	}
	full := &v.full[tk.i]
	for b, c := range h {
		full[b] += c
	}
	j.finished++
	if j.finished < j.pieces {
		return
	}
	t := v.ck.tensors[tk.i]
	v.haveFull[tk.i] = true
	j.ch = choose(j.ch.cc, t.n, &v.samples[tk.i], full)
	j.scan, j.handed, j.finished = false, 0, 0
	j.plen = pieceLen(j.ch.layout)
	j.pieces = (t.n + j.plen - 1) / j.plen
	j.header = headerBytes(j.ch)
	v.cursor = min(v.cursor, tk.i)
	s.work.Broadcast()
}

// finishPiece counts a coded piece; it reports whether the tensor's pass
// is still wanted.
func (s *Session) finishPiece(tk task, out *codec.Tensor, bytes int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := tk.v
	j := &v.jobs[tk.i]
	if s.view != v || j.gen != tk.gen {
		return false
	}
	j.tally.add(out)
	j.finished++
	j.bytesDone += bytes
	if j.finished == j.pieces {
		j.exact = true
		v.stats[tk.i] = j.tally.stats(v.ck.tensors[tk.i], j.ch, j.header)
		if p := v.progress(); p.Done() && !v.pointed {
			v.pointed = true
			s.hist.put(pointOf(v))
		}
	}
	s.changedLocked()
	return true
}

// failed reports a tensor the exact pass could not code (a damaged .lct
// tensor): its figures stay as they were, marked in the notice.
func (s *Session) failed(tk task, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := tk.v
	j := &v.jobs[tk.i]
	if s.view != v || j.gen != tk.gen {
		return
	}
	j.exact = true // nothing more to do for it
	j.bytesDone = v.ck.tensors[tk.i].bytes
	s.notice = err.Error()
	s.changedLocked()
}
