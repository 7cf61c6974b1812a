package cudabackend

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"lcttop/gpu"
)

// eventTimer is what a Device offers for timing its queued work: events
// recorded after the work queued so far and the device time between two of
// them.
type eventTimer interface {
	// NewEvent creates an event (reusable: each Record moves it).
	NewEvent() (gpu.Event, error)
	// Record queues e after the work queued so far.
	Record(e gpu.Event) error
	// Millis is the device time from a to b, both recorded and passed.
	Millis(a, b gpu.Event) (float32, error)
	// DestroyEvent releases e.
	DestroyEvent(e gpu.Event) error
}

// timedDevice is a Device that times its queued work.
type timedDevice interface {
	Device
	eventTimer
}

// ProfileEnv is the environment variable that turns on the per-op profile
// of a CUDA device (Open): its value is the number of training steps left
// out at the start (warm-up; 1 when it is not a number).
const ProfileEnv = "LCTTOP_PROFILE_OPS"

// Profiled wraps a Device with an eventTimer and times every queued
// operation with a pair of events around it, attributed to the op scope
// (Device.Scope) it was queued in and its kernel (or gemm, memset, copy). Steps
// are told apart by the GPT kernels' order: each launch of
// gpt_embedding_forward begins a forward pass, and a pass that launches
// gpt_embedding_backward_wte is a training step. At each pass's end it
// waits for the device (a sync the step makes anyway) and reads the events.
// Close writes the table, the mean over the training steps after Skip, to
// W. The events add two records and the launch's host timing to every
// operation: a profiled step is somewhat slower than a plain one. A pass
// also ends at each Sync (the end of a training step), so that host time
// between steps is not counted as the device waiting.
type Profiled struct {
	Device
	timer eventTimer
	W     io.Writer
	Skip  int

	scope   string
	free    []gpu.Event
	pending []profOp
	train   bool // the pending pass is a training step
	forward bool // the pending pass has begun its forward
	steps   int  // training steps seen
	counted int  // training steps summed into rows
	rows    map[profKey]*profRow
	idle    float64 // device idle between operations, ms, summed
	span    float64 // first start to last end of each step, ms, summed
	hostOps float64 // host time inside the queueing calls, ms, summed
	hostAll float64 // host time from a step's first call to its last
	spans   []float64
	hostT0  time.Time
	hostT1  time.Time
	err     error
}

type profKey struct{ scope, op string }

type profRow struct {
	calls      int
	ms, hostMs float64
	idleMs     float64 // the device idle just before the row's operations
}

type profOp struct {
	key        profKey
	start, end gpu.Event
	host       time.Duration
}

// NewProfiled wraps d (gpu.Compute is one).
func NewProfiled(d timedDevice, w io.Writer, skip int) *Profiled {
	return &Profiled{Device: d, timer: d, W: w, Skip: skip, rows: map[profKey]*profRow{}}
}

// Scope implements Device: the op scope of what follows.
func (p *Profiled) Scope(name string) func() {
	if p.scope != "" {
		return func() {}
	}
	p.scope = name
	return func() { p.scope = "" }
}

func (p *Profiled) event() (gpu.Event, error) {
	if n := len(p.free); n > 0 {
		e := p.free[n-1]
		p.free = p.free[:n-1]
		return e, nil
	}
	return p.timer.NewEvent()
}

// timed queues f between two events under op.
func (p *Profiled) timed(op string, f func() error) error {
	if p.err != nil {
		return f()
	}
	start, err := p.event()
	if err == nil {
		err = p.timer.Record(start)
	}
	if err != nil {
		p.err = err
		return f()
	}
	t0 := time.Now()
	ferr := f()
	host := time.Since(t0)
	end, err := p.event()
	if err == nil {
		err = p.timer.Record(end)
	}
	if err != nil {
		p.err = err
		return ferr
	}
	if len(p.pending) == 0 {
		p.hostT0 = t0
	}
	p.hostT1 = time.Now()
	scope := p.scope
	if scope == "" {
		scope = "other"
	}
	p.pending = append(p.pending, profOp{key: profKey{scope, op}, start: start, end: end, host: host})
	return ferr
}

// Sync implements Device; it ends a pass (the run syncs once, at the end of
// each training step).
func (p *Profiled) Sync() error {
	err := p.Device.Sync()
	if err == nil {
		p.flush()
	}
	return err
}

// Launch implements Device; a launch of gpt_embedding_forward ends the
// previous pass (an evaluation's forward has no Sync of its own).
func (p *Profiled) Launch(kernel string, grid, block int, args ...any) error {
	switch kernel {
	case "gpt_embedding_forward":
		if p.forward {
			// The inputs uploaded just before belong to the new pass.
			i := len(p.pending)
			for i > 0 && p.pending[i-1].key.op == "upload" {
				i--
			}
			carry := slices.Clone(p.pending[i:])
			p.pending = p.pending[:i]
			p.flush()
			p.pending = carry
		}
		p.forward = true
	case "gpt_embedding_backward_wte":
		p.train = true
	}
	return p.timed(kernel, func() error { return p.Device.Launch(kernel, grid, block, args...) })
}

// Gemm implements Device.
func (p *Profiled) Gemm(g gpu.Gemm) error {
	return p.timed("gemm (cuBLAS)", func() error { return p.Device.Gemm(g) })
}

// Memset implements Device.
func (p *Profiled) Memset(ptr gpu.Ptr, b byte, bytes int64) error {
	return p.timed("memset", func() error { return p.Device.Memset(ptr, b, bytes) })
}

// Copy implements Device.
func (p *Profiled) Copy(dst, src gpu.Ptr, bytes int64) error {
	return p.timed("copy", func() error { return p.Device.Copy(dst, src, bytes) })
}

// Upload implements Device.
func (p *Profiled) Upload(dst gpu.Ptr, src []byte) error {
	return p.timed("upload", func() error { return p.Device.Upload(dst, src) })
}

// Download implements Device.
func (p *Profiled) Download(dst []byte, src gpu.Ptr) error {
	return p.timed("download", func() error { return p.Device.Download(dst, src) })
}

// flush waits for the pass queued so far and, if it was a training step
// past the warm-up, adds its times to the table.
func (p *Profiled) flush() {
	ops := p.pending
	train := p.train
	p.pending, p.train, p.forward = nil, false, false
	if len(ops) == 0 {
		return
	}
	defer func() {
		for _, o := range ops {
			p.free = append(p.free, o.start, o.end)
		}
	}()
	if err := p.Device.Sync(); err != nil {
		p.fail(err)
		return
	}
	if !train {
		return
	}
	p.steps++
	if p.steps <= p.Skip || p.err != nil {
		return
	}
	rows := map[profKey]*profRow{}
	var idle, hostOps float64
	for i, o := range ops {
		ms, err := p.timer.Millis(o.start, o.end)
		if err != nil {
			p.fail(err)
			return
		}
		r := rows[o.key]
		if r == nil {
			r = &profRow{}
			rows[o.key] = r
		}
		if i > 0 {
			gap, err := p.timer.Millis(ops[i-1].end, o.start)
			if err != nil {
				p.fail(err)
				return
			}
			idle += float64(gap)
			r.idleMs += float64(gap)
		}
		r.calls++
		r.ms += float64(ms)
		h := float64(o.host) / float64(time.Millisecond)
		r.hostMs += h
		hostOps += h
	}
	span, err := p.timer.Millis(ops[0].start, ops[len(ops)-1].end)
	if err != nil {
		p.fail(err)
		return
	}
	for k, r := range rows {
		t := p.rows[k]
		if t == nil {
			t = &profRow{}
			p.rows[k] = t
		}
		t.calls += r.calls
		t.ms += r.ms
		t.hostMs += r.hostMs
		t.idleMs += r.idleMs
	}
	p.counted++
	p.idle += idle
	p.span += float64(span)
	p.spans = append(p.spans, float64(span))
	p.hostOps += hostOps
	p.hostAll += float64(p.hostT1.Sub(p.hostT0)) / float64(time.Millisecond)
}

func (p *Profiled) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// Close reads the last pass, writes the table (which says what failed, if
// anything did) and releases the events; the device stays open.
func (p *Profiled) Close() error {
	p.flush()
	p.WriteTable()
	for _, e := range p.free {
		p.timer.DestroyEvent(e)
	}
	p.free = nil
	return nil
}

// WriteTable writes the mean per training step of every (op, kernel) row,
// op subtotals, and the step's device idle time to W.
func (p *Profiled) WriteTable() {
	w := p.W
	if w == nil {
		return
	}
	if p.err != nil {
		fmt.Fprintf(w, "lcttop profile: failed: %v\n", p.err)
		return
	}
	if p.counted == 0 {
		fmt.Fprintf(w, "lcttop profile: no training step after the first %d to report (%d seen)\n", p.Skip, p.steps)
		return
	}
	n := float64(p.counted)
	fmt.Fprintf(w, "lcttop profile (%s=%d): mean per training step over %d steps (the first %d left out), device %s\n",
		ProfileEnv, p.Skip, p.counted, p.Skip, p.Device.Name())
	fmt.Fprintf(w, "%-14s %-34s %7s %9s %9s\n", "op", "kernel", "calls", "device ms", "host ms")
	byScope := map[string][]profKey{}
	scopeMs := map[string]float64{}
	for k, r := range p.rows {
		byScope[k.scope] = append(byScope[k.scope], k)
		scopeMs[k.scope] += r.ms
	}
	scopes := make([]string, 0, len(byScope))
	for s := range byScope {
		scopes = append(scopes, s)
	}
	sort.Slice(scopes, func(i, j int) bool { return scopeMs[scopes[i]] > scopeMs[scopes[j]] })
	var busy float64
	for _, s := range scopes {
		keys := byScope[s]
		sort.Slice(keys, func(i, j int) bool { return p.rows[keys[i]].ms > p.rows[keys[j]].ms })
		for _, k := range keys {
			r := p.rows[k]
			fmt.Fprintf(w, "%-14s %-34s %7.0f %9.3f %9.3f\n", s, k.op, float64(r.calls)/n, r.ms/n, r.hostMs/n)
		}
		busy += scopeMs[s]
	}
	fmt.Fprintln(w, strings.Repeat("-", 77))
	for _, s := range scopes {
		fmt.Fprintf(w, "%-14s %-34s %7s %9.3f\n", s, "(op total)", "", scopeMs[s]/n)
	}
	med := slices.Clone(p.spans)
	slices.Sort(med)
	fmt.Fprintf(w, "device busy in ops %.3f ms; device idle between ops %.3f ms (waiting on the host); step span %.3f ms mean, %.3f ms median\n",
		busy/n, p.idle/n, p.span/n, med[len(med)/2])
	fmt.Fprintf(w, "host: %.3f ms inside the queueing calls (launch, gemm, copies) of %.3f ms from a step's first call to its last\n",
		p.hostOps/n, p.hostAll/n)
	p.writeIdle(n)
}

// idleRows is how many rows writeIdle lists.
const idleRows = 8

// writeIdle lists the rows the device waited longest before, per step:
// where the host (a settle's wait, a download) held the queue back.
func (p *Profiled) writeIdle(n float64) {
	keys := make([]profKey, 0, len(p.rows))
	for k, r := range p.rows {
		if r.idleMs > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return p.rows[keys[i]].idleMs > p.rows[keys[j]].idleMs })
	if len(keys) > idleRows {
		keys = keys[:idleRows]
	}
	fmt.Fprintf(p.W, "device idle just before, largest first (ms a step):")
	for _, k := range keys {
		fmt.Fprintf(p.W, " %s/%s %.3f;", k.scope, k.op, p.rows[k].idleMs/n)
	}
	fmt.Fprintln(p.W)
}
