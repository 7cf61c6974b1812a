package filesource

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/session"
)

// Options configure a file session. The zero value codes every class with
// AUTO capacity and an empirical codebook on every core.
type Options struct {
	// Codec is every class's codec to start with (nil: auto/empirical, the
	// setting that stores the trainer's tensors in the fewest bytes).
	Codec *session.ClassCodec
	// Workers is how many goroutines the exact pass codes on (0: one per core).
	Workers int
	// Backend runs the exact pass's encodes (nil: the CPU reference codec).
	// Calls into it are made one at a time.
	Backend lctfile.Backend
	// EmitEvery is the least time between two snapshots while figures
	// change (0: 100ms).
	EmitEvery time.Duration
	// Interval is how often Watch reads its folder (0: 1s).
	Interval time.Duration
	// Once makes Watch read its folder once, for what is there now, and not
	// look again; Scanned tells when that read is done.
	Once bool
}

func (o Options) startCodec() session.ClassCodec {
	if o.Codec != nil {
		return *o.Codec
	}
	return session.ClassCodec{Preset: codec.Auto, Dist: codec.Empirical}
}

func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Session shows a checkpoint (Open) or the newest checkpoint of a folder
// (Watch) as a session.Session. Pause, Resume and StepOnce do nothing: a
// checkpoint takes no steps.
type Session struct {
	opt  Options
	mode string // "open" or "watch"
	path string

	ctl       sync.Mutex // codec choices; never held while taking mu
	classes   map[session.TensorClass]session.ClassCodec
	overrides map[string]session.ClassCodec

	mu      sync.Mutex // everything below
	work    *sync.Cond // on mu: the exact pass's workers wait here
	view    *view      // the checkpoint shown; nil until watch finds one
	hist    history
	notice  string
	skipped map[string]string // files of a watched folder left out, and why
	stopped bool
	timer   *time.Timer // a snapshot due
	last    time.Time   // when the last snapshot went out

	sendMu sync.Mutex
	snaps  chan session.Snapshot
	closed bool

	backendMu sync.Mutex
	workersWG sync.WaitGroup
	stop      chan struct{}
	watchWG   sync.WaitGroup
	scanned   chan struct{} // closed when Watch has read its folder once
}

var _ session.Session = (*Session)(nil)

func newSession(mode, path string, opt Options) *Session {
	s := &Session{
		opt: opt, mode: mode, path: path,
		classes:   map[session.TensorClass]session.ClassCodec{},
		overrides: map[string]session.ClassCodec{},
		snaps:     make(chan session.Snapshot, 1),
		stop:      make(chan struct{}),
		scanned:   make(chan struct{}),
	}
	s.work = sync.NewCond(&s.mu)
	for _, c := range session.FileClasses {
		s.classes[c] = opt.startCodec()
	}
	return s
}

// Open shows the checkpoint at path: a .safetensors or .lct file, a folder
// of them, or a sharded Hugging Face checkpoint (its folder or its
// model.safetensors.index.json). A folder that a training job writes
// checkpoints into (names that carry steps) opens its newest complete one.
// The first snapshot, from the samples, is ready when Open returns; the
// exact pass then runs on opt.Workers goroutines until Stop.
func Open(path string, opt Options) (*Session, error) {
	ck, err := openPath(path)
	if err != nil {
		return nil, err
	}
	s := newSession("open", path, opt)
	if ck.stored != nil { // an .lct file: start from the codecs it was stored with
		for c, cc := range ck.stored.Classes {
			s.classes[c] = cc
		}
		for n, cc := range ck.stored.Tensors {
			s.overrides[n] = cc
		}
	}
	v, err := s.newView(ck)
	if err != nil {
		ck.close()
		return nil, err
	}
	s.mu.Lock()
	s.setViewLocked(v)
	snap := s.snapshotLocked()
	s.last = time.Now()
	s.mu.Unlock()
	s.send(snap)
	s.startWorkers()
	close(s.scanned)
	return s, nil
}

// openPath opens what Open is given; a folder whose checkpoints' names say
// their step (step_100, checkpoint-100, ...) opens the newest complete one.
func openPath(path string) (*checkpoint, error) {
	if cks, _, err := scanFolder(path, nil); err == nil && len(cks) > 0 {
		newest := cks[len(cks)-1]
		if stepWord.MatchString(filepath.Base(newest.path)) {
			return openCheckpoint(newest.path, newest.files, newest.step)
		}
	}
	files, err := checkpointFiles(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	tolerant := err == nil && fi.IsDir() && len(files) > 1 && !hasIndex(path)
	return openFiles(path, files, -1, tolerant)
}

// hasIndex reports whether a folder holds a Hugging Face index, whose
// shards must all be there.
func hasIndex(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "*"+hfIndexSuffix))
	return len(m) > 0
}

// Snapshots delivers the newest snapshot; it is closed after Stop.
func (s *Session) Snapshots() <-chan session.Snapshot { return s.snaps }

// Current is a snapshot of the figures as they are now.
func (s *Session) Current() session.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked()
}

// Scanned is closed once Watch has read its folder the first time: every
// checkpoint there then is shown or in the history. Open's is closed at once.
func (s *Session) Scanned() <-chan struct{} { return s.scanned }

// Pause does nothing: a checkpoint takes no steps.
func (s *Session) Pause() {}

// Resume does nothing: a checkpoint takes no steps.
func (s *Session) Resume() {}

// StepOnce does nothing: a checkpoint takes no steps.
func (s *Session) StepOnce() {}

// Stop ends the exact pass and the watching, closes Snapshots and unmaps
// the files. It returns once the workers have left (each finishes the
// piece it codes).
func (s *Session) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
	close(s.stop)
	s.work.Broadcast()
	s.mu.Unlock()
	s.watchWG.Wait()
	s.workersWG.Wait()
	s.sendMu.Lock()
	s.closed = true
	close(s.snaps)
	s.sendMu.Unlock()
	s.mu.Lock()
	v := s.view
	s.mu.Unlock()
	if v != nil {
		v.ck.close()
	}
}

// SetClassCodec codes class c's tensors (those without an override of
// their own) with cc from now on: the next snapshot shows estimates at
// once, and the exact pass codes them again.
func (s *Session) SetClassCodec(c session.TensorClass, cc session.ClassCodec) error {
	if !slices.Contains(session.FileClasses, c) {
		return fmt.Errorf("unknown tensor class %q", c)
	}
	if err := checkCodec(cc); err != nil {
		return err
	}
	s.ctl.Lock()
	s.classes[c] = cc
	s.ctl.Unlock()
	s.recode(func(t *tensor) bool { return t.class == c })
	return nil
}

// ClassCodec is class c's codec.
func (s *Session) ClassCodec(c session.TensorClass) session.ClassCodec {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	if cc, ok := s.classes[c]; ok {
		return cc
	}
	return s.opt.startCodec()
}

// SetTensorCodec codes tensor name with cc from now on, whatever its
// class's. A watched folder keeps it for the tensor of that name in every
// later checkpoint.
func (s *Session) SetTensorCodec(name string, cc session.ClassCodec) error {
	if err := checkCodec(cc); err != nil {
		return err
	}
	return s.setOverride(name, &cc)
}

// ClearTensorCodec codes tensor name by its class's setting again.
func (s *Session) ClearTensorCodec(name string) error {
	return s.setOverride(name, nil)
}

// setOverride sets tensor name's codec, or with cc nil removes it, and
// codes the tensor again.
func (s *Session) setOverride(name string, cc *session.ClassCodec) error {
	s.mu.Lock()
	var t *tensor
	if s.view != nil {
		if i, ok := s.view.ck.index[name]; ok {
			t = s.view.ck.tensors[i]
		}
	}
	s.mu.Unlock()
	switch {
	case t == nil:
		return fmt.Errorf("no tensor named %q", name)
	case !t.coded():
		return fmt.Errorf("tensor %s is %s, kept as it is: only BF16 tensors are coded", name, t.dtype)
	}
	s.ctl.Lock()
	if cc == nil {
		delete(s.overrides, name)
	} else {
		s.overrides[name] = *cc
	}
	s.ctl.Unlock()
	s.recode(func(t *tensor) bool { return t.name == name })
	return nil
}

// TensorCodec is tensor name's override.
func (s *Session) TensorCodec(name string) (session.ClassCodec, bool) {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	cc, ok := s.overrides[name]
	return cc, ok
}

func checkCodec(cc session.ClassCodec) error {
	if !slices.Contains(codec.Presets, cc.Preset) {
		return fmt.Errorf("preset %d out of range", cc.Preset)
	}
	if !slices.Contains(codec.Distributions, cc.Dist) {
		return fmt.Errorf("distribution %d out of range", cc.Dist)
	}
	return nil
}

// codecFor is the setting tensor t is coded with now.
func (s *Session) codecFor(t *tensor) session.ClassCodec {
	s.ctl.Lock()
	defer s.ctl.Unlock()
	if cc, ok := s.overrides[t.name]; ok {
		return cc
	}
	if cc, ok := s.classes[t.class]; ok {
		return cc
	}
	return s.opt.startCodec()
}

// errNoCheckpoint answers Detail and Values before watch has found one.
var errNoCheckpoint = errors.New("no checkpoint yet")

// Detail returns block `block` of a BF16 tensor as the codec would code it
// under its current setting: its values read from the file (decoded, for an
// .lct file's LCT tensor), with the codebook and layout.
func (s *Session) Detail(name string, block int) (session.TensorDetail, error) {
	t, ch, release, err := s.acquire(name)
	if err != nil {
		return session.TensorDetail{}, err
	}
	defer release()
	var vals []uint16
	if t.lct != nil || ch == nil {
		if vals, err = t.decodeAll(); err != nil {
			return session.TensorDetail{}, err
		}
		if ch == nil {
			sample, full := codec.SampleSplitHistogram(vals), codec.FullSplitHistogram(vals)
			c := choose(s.codecFor(t), t.n, &sample, &full)
			ch = &c
		}
	}
	blocks := ch.layout.Blocks(t.n)
	if block < 0 || block >= blocks {
		return session.TensorDetail{}, fmt.Errorf("tensor %s: block %d out of range 0..%d", name, block, blocks-1)
	}
	lo, hi := block*ch.layout.BlockSize, min((block+1)*ch.layout.BlockSize, t.n)
	d := session.TensorDetail{
		Name: t.name, Class: t.class, Codebook: ch.cb, Layout: ch.layout,
		Block: block, Blocks: blocks, N: t.n, TensorFit: true,
	}
	if vals != nil {
		d.Values = slices.Clone(vals[lo:hi])
	} else {
		d.Values = make([]uint16, hi-lo)
		t.values(lo, hi, d.Values)
		t.src.release(t.raw[2*lo : 2*hi])
	}
	// AUTO stores each block at the capacity its own values give, and a
	// block may have a codebook of its own (as pack does); the block alone
	// is one block, so its layout has that C.
	own := d.Codebook
	d.Codebook, d.Layout = codec.BlockPlan(d.Codebook, d.Layout, d.Values)
	d.TensorFit = d.Codebook == own
	return d, nil
}

// Values returns a BF16 tensor's values, whole, in file order.
func (s *Session) Values(name string) ([]uint16, error) {
	t, _, release, err := s.acquire(name)
	if err != nil {
		return nil, err
	}
	defer release()
	return t.decodeAll()
}

// acquire finds a coded tensor of the checkpoint shown and holds its files
// mapped until release; ch is its current codec choice (nil while an .lct
// file's tensor is not yet decoded).
func (s *Session) acquire(name string) (t *tensor, ch *choice, release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.view
	if v == nil {
		return nil, nil, nil, errNoCheckpoint
	}
	i, ok := v.ck.index[name]
	if !ok {
		return nil, nil, nil, fmt.Errorf("no tensor named %q", name)
	}
	t = v.ck.tensors[i]
	if !t.coded() {
		return nil, nil, nil, fmt.Errorf("tensor %s is %s, kept as it is: only BF16 tensors are coded", name, t.dtype)
	}
	if v.sampled[i] {
		c := v.jobs[i].ch
		if c.cc != s.codecFor(t) {
			var full *codec.SplitHistogram
			if v.haveFull[i] {
				full = &v.full[i]
			}
			c = choose(s.codecFor(t), t.n, &v.samples[i], full)
		}
		ch = &c
	}
	v.ck.refs.Add(1)
	return t, ch, v.ck.refs.Done, nil
}

// send delivers snap, replacing one not yet taken; after Stop it does
// nothing.
func (s *Session) send(snap session.Snapshot) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.closed {
		return
	}
	session.SendNewest(s.snaps, snap)
}

// changedLocked schedules a snapshot: at once when none went out for
// EmitEvery, else when that much time has passed. mu is held.
func (s *Session) changedLocked() {
	if s.timer != nil || s.stopped {
		return
	}
	every := s.opt.EmitEvery
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	delay := max(time.Until(s.last.Add(every)), 0)
	s.timer = time.AfterFunc(delay, func() {
		s.mu.Lock()
		s.timer = nil
		if s.stopped {
			s.mu.Unlock()
			return
		}
		snap := s.snapshotLocked()
		s.last = time.Now()
		s.mu.Unlock()
		s.send(snap)
	})
}

// snapshotLocked describes the checkpoint shown; mu is held.
func (s *Session) snapshotLocked() session.Snapshot {
	snap := session.Snapshot{
		Time: time.Now(), Backend: "file", Model: filepath.Base(s.path), Workers: s.opt.workers(),
		File: &session.FileStats{Mode: s.mode, Path: s.path, Notice: s.notice},
	}
	snap.File.Skipped = s.skippedLocked()
	v := s.view
	if v == nil {
		return snap
	}
	snap.Step = v.ck.step
	snap.Model = filepath.Base(v.ck.path)
	snap.Tensors = slices.Clone(v.stats)
	for _, b := range v.ck.bad { // error rows: the files that could not be read
		snap.Tensors = append(snap.Tensors, session.TensorStats{Name: filepath.Base(b.Path), Class: session.ClassOther, DType: "—", Raw: true, Error: b.Reason})
	}
	f := snap.File
	f.Path, f.Files = v.ck.path, len(v.ck.files)
	f.Progress = v.progress()
	f.Checkpoints = s.hist.list()
	f.Skipped = append(slices.Clone(v.ck.bad), f.Skipped...)
	byClass := map[session.TensorClass]*session.ClassBytes{}
	byDType := map[string]*session.DTypeBytes{}
	for i, t := range v.ck.tensors {
		st := &v.stats[i]
		cb := byClass[t.class]
		if cb == nil {
			cb = &session.ClassBytes{Class: t.class}
			byClass[t.class] = cb
		}
		cb.Tensors++
		cb.FileBytes += t.bytes
		cb.LCTBytes += int64(st.StoredBytes)
		db := byDType[t.dtype]
		if db == nil {
			db = &session.DTypeBytes{DType: t.dtype}
			byDType[t.dtype] = db
		}
		db.Tensors++
		db.Bytes += t.bytes
		f.FileBytes += t.bytes
		f.LCTBytes += int64(st.StoredBytes)
	}
	for _, c := range session.FileClasses {
		if cb, ok := byClass[c]; ok {
			f.Classes = append(f.Classes, *cb)
		}
	}
	for _, db := range byDType {
		f.DTypes = append(f.DTypes, *db)
	}
	slices.SortFunc(f.DTypes, func(a, b session.DTypeBytes) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.DType, b.DType)) // larger first
	})
	return snap
}
