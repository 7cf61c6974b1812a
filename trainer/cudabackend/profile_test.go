package cudabackend

import (
	"bytes"
	"strings"
	"testing"

	"lcttop/gpu"
)

// clockDevice is a fake device whose queue is a clock: each operation moves
// it by its cost, and the host waits idleBefore before queueing one.
type clockDevice struct {
	now    float64
	events []float64
	cost   map[string]float64
	idle   float64
	syncs  int
	record int
}

func (d *clockDevice) Name() string                       { return "clock" }
func (d *clockDevice) Alloc(int64) (gpu.Ptr, error)       { return 1, nil }
func (d *clockDevice) Free(gpu.Ptr) error                 { return nil }
func (d *clockDevice) Upload(gpu.Ptr, []byte) error       { d.now += d.cost["upload"]; return nil }
func (d *clockDevice) Download([]byte, gpu.Ptr) error     { d.now += d.cost["download"]; return nil }
func (d *clockDevice) Memset(gpu.Ptr, byte, int64) error  { d.now += d.cost["memset"]; return nil }
func (d *clockDevice) Copy(gpu.Ptr, gpu.Ptr, int64) error { d.now += d.cost["copy"]; return nil }
func (d *clockDevice) Gemm(gpu.Gemm) error                { d.now += d.cost["gemm"]; return nil }
func (d *clockDevice) Sync() error                        { d.syncs++; return nil }
func (d *clockDevice) Scope(string) func()                { return func() {} }
func (d *clockDevice) NewEvent() (gpu.Event, error) {
	d.events = append(d.events, 0)
	return gpu.Event(len(d.events) - 1), nil
}
func (d *clockDevice) DestroyEvent(gpu.Event) error { return nil }
func (d *clockDevice) Millis(a, b gpu.Event) (float32, error) {
	return float32(d.events[b] - d.events[a]), nil
}
func (d *clockDevice) Launch(kernel string, grid, block int, args ...any) error {
	d.now += d.cost[kernel]
	return nil
}

// Record stamps e; after an operation's end event (Profiled records start
// and end in turn) the device waits idle for the host.
func (d *clockDevice) Record(e gpu.Event) error {
	d.events[e] = d.now
	if d.record++; d.record%2 == 0 {
		d.now += d.idle
	}
	return nil
}

func TestProfiledSumsOpsPerTrainingStep(t *testing.T) {
	fake := &clockDevice{idle: 0.125, cost: map[string]float64{
		"upload": 0.5, "gpt_embedding_forward": 1, "gemm": 4, "gpt_add": 2, "gpt_embedding_backward_wte": 3, "download": 0.25,
	}}
	var out bytes.Buffer
	p := NewProfiled(fake, &out, 1)
	step := func(train bool) {
		p.Upload(1, []byte{0})
		end := p.Scope("embedding")
		p.Launch("gpt_embedding_forward", 1, 1)
		end()
		end = p.Scope("linear")
		p.Gemm(gpu.Gemm{})
		inner := p.Scope("add") // nested: stays "linear"
		p.Launch("gpt_add", 1, 1)
		inner()
		end()
		p.Launch("gpt_add", 1, 1) // unscoped: "other"
		p.Download([]byte{0}, 1)
		if train {
			p.Launch("gpt_embedding_backward_wte", 1, 1)
			p.Sync()
		}
	}
	step(true)  // left out (warm-up)
	step(false) // evaluation pass: ended by the next forward, not counted
	step(true)
	step(true)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.steps != 3 || p.counted != 2 {
		t.Fatalf("training steps seen %d, counted %d; want 3 and 2", p.steps, p.counted)
	}
	want := map[profKey]float64{
		{"other", "upload"}: 0.5, {"embedding", "gpt_embedding_forward"}: 1, {"linear", "gemm (cuBLAS)"}: 4,
		{"linear", "gpt_add"}: 2, {"other", "gpt_add"}: 2, {"other", "download"}: 0.25, {"other", "gpt_embedding_backward_wte"}: 3,
	}
	if len(p.rows) != len(want) {
		t.Errorf("%d rows, want %d: %v", len(p.rows), len(want), p.rows)
	}
	for k, ms := range want {
		r := p.rows[k]
		if r == nil || r.calls != 2 || r.ms/2 != ms {
			t.Errorf("row %v: %+v, want 2 calls and %v ms per step", k, r, ms)
		}
	}
	// The idle before each op is its row's; a pass's first op has none.
	for k := range want {
		wantIdle := 0.125
		if k.op == "upload" {
			wantIdle = 0
		}
		if got := p.rows[k].idleMs / 2; got != wantIdle {
			t.Errorf("row %v: idle before %v ms per step, want %v", k, got, wantIdle)
		}
	}
	if strings.Contains(out.String(), "other/upload") || !strings.Contains(out.String(), "linear/gemm (cuBLAS) 0.125;") {
		t.Errorf("idle list wrong:\n%s", out.String())
	}
	// 7 operations a step: 6 gaps of idle between them.
	if got := p.idle / 2; got != 6*0.125 {
		t.Errorf("idle %v ms per step, want %v", got, 6*0.125)
	}
	if got, wantSpan := p.span/2, 12.75+6*0.125; got != wantSpan {
		t.Errorf("span %v ms per step, want %v", got, wantSpan)
	}
	for _, s := range []string{"over 2 steps (the first 1 left out)", "gemm (cuBLAS)", "device idle between ops 0.750 ms"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, out.String())
		}
	}
}
