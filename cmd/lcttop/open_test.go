package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
	"lcttop/session"
	"lcttop/trainer/filesource"
	"lcttop/ui"
	"lcttop/ui/msgs"
)

// checkpointFile is a small model's checkpoint: weights, Adam states, a
// gradient, a tiny tensor, an F32 tensor.
func checkpointFile(t *testing.T, seed uint64) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	gen := func(n int, f func() float64) []byte {
		v := make([]uint16, n)
		for i := range v {
			b := math.Float32bits(float32(f()))
			v[i] = uint16((b + 0x7FFF + (b>>16)&1) >> 16)
		}
		return safetensors.BF16Bytes(v)
	}
	ts := []safetensors.NewTensor{
		{Name: "model.wte.weight", DType: "BF16", Shape: []int64{256, 512}, Data: gen(256*512, func() float64 { return 0.02 * r.NormFloat64() })},
		{Name: "model.fc.weight", DType: "BF16", Shape: []int64{300, 256}, Data: gen(300*256, func() float64 { return 0.05 * r.NormFloat64() })},
		{Name: "model.fc.bias", DType: "BF16", Shape: []int64{300}, Data: gen(300, func() float64 { return 0.01 * r.NormFloat64() })},
		{Name: "grad.model.fc.weight", DType: "BF16", Shape: []int64{300, 256}, Data: gen(300*256, func() float64 { return 1e-3 * r.NormFloat64() })},
		{Name: "exp_avg.model.fc.weight", DType: "BF16", Shape: []int64{300, 256}, Data: gen(300*256, func() float64 { return 1e-4 * r.NormFloat64() })},
		{Name: "exp_avg_sq.model.fc.weight", DType: "BF16", Shape: []int64{300, 256}, Data: gen(300*256, func() float64 {
			g := 1e-3 * r.NormFloat64() * math.Exp(r.NormFloat64())
			return g * g
		})},
		{Name: "scale", DType: "F32", Shape: []int64{4}, Data: make([]byte, 16)},
	}
	b, err := safetensors.Encode(ts, map[string]string{"step": "100"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run executes a command and the commands its messages lead to, feeding
// every message back to the model.
func run(t *testing.T, m ui.Model, cmd tea.Cmd) (ui.Model, []tea.Msg) {
	t.Helper()
	var seen []tea.Msg
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg := c()
		switch msg := msg.(type) {
		case tea.BatchMsg:
			queue = append(queue, msg...)
			continue
		case msgs.Snapshot, msgs.SnapshotsClosed, nil:
			continue // the test feeds snapshots itself
		}
		seen = append(seen, msg)
		nm, next := m.Update(msg)
		m = nm.(ui.Model)
		queue = append(queue, next)
	}
	return m, seen
}

func key(t *testing.T, m ui.Model, k string) (ui.Model, []tea.Msg) {
	t.Helper()
	nm, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
	return run(t, nm.(ui.Model), cmd)
}

// waitExact reads the session's snapshots until the exact figures, and
// hands that snapshot to the model.
func waitExact(t *testing.T, m ui.Model, s *filesource.Session, ok func(session.Snapshot) bool) (ui.Model, session.Snapshot) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case snap := <-s.Snapshots():
			if snap.File.Progress.Done() && ok(snap) {
				nm, _ := m.Update(msgs.Snapshot{Snapshot: snap})
				return nm.(ui.Model), snap
			}
		case <-deadline:
			t.Fatal("no exact snapshot within a minute")
		}
	}
}

// A codec choice made in the UI on an opened checkpoint, exported with e,
// is what lcttop pack --plan applies: every tensor stored with the codec
// and in the bytes the UI showed, and unpack gives the file back byte for
// byte.
func TestPlanFromUIAppliedByPack(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "ckpt.safetensors"), checkpointFile(t, 1))
	s, err := filesource.Open(in, filesource.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	m := ui.New(s, ui.Options{ExportDir: dir})
	nm, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m, _ = waitExact(t, nm.(ui.Model), s, func(session.Snapshot) bool { return true })
	if m.Selected() != "model.wte.weight" {
		t.Fatalf("selected %q", m.Selected())
	}
	// d: the selected tensor's class (weight) to the next distribution;
	// p twice on the Adam v row: its class to the next preset but one.
	m, seen := key(t, m, "d")
	for _, msg := range seen {
		if cs, ok := msg.(msgs.CodecSet); ok && cs.Err != nil {
			t.Fatal(cs.Err)
		}
	}
	for m.Selected() != "exp_avg_sq.model.fc.weight" {
		m, _ = key(t, m, "j")
	}
	m, _ = key(t, m, "p")
	m, _ = key(t, m, "p")
	// A tensor of its own (the per-tensor keys are the UI's; the session
	// call is what they make).
	own := session.ClassCodec{Preset: codec.High, Dist: codec.PowerLaw}
	if err := s.SetTensorCodec("model.fc.weight", own); err != nil {
		t.Fatal(err)
	}
	weight := session.ClassCodec{Preset: codec.Auto, Dist: codec.Gaussian}   // empirical → gaussian (wraps)
	adamV := session.ClassCodec{Preset: codec.Medium, Dist: codec.Empirical} // auto → clean → medium
	if got := s.ClassCodec(session.ClassWeight); got != weight {
		t.Fatalf("weight class %s after d, want %s", got, weight)
	}
	if got := s.ClassCodec(session.ClassAdamV); got != adamV {
		t.Fatalf("adam_v class %s after p p, want %s", got, adamV)
	}
	var shown session.Snapshot
	m, shown = waitExact(t, m, s, func(sn session.Snapshot) bool {
		for _, ts := range sn.Tensors {
			if ts.Name == "model.fc.weight" && ts.Preset != codec.High || ts.Name == "exp_avg_sq.model.fc.weight" && ts.Preset != codec.Medium {
				return false
			}
		}
		return true
	})
	m, seen = key(t, m, "e")
	var plan string
	for _, msg := range seen {
		if ex, ok := msg.(msgs.Exported); ok {
			if ex.Err != nil {
				t.Fatal(ex.Err)
			}
			for _, p := range ex.Paths {
				if strings.HasSuffix(p, "-plan.json") {
					plan = p
				}
			}
		}
	}
	if plan == "" {
		t.Fatal("e exported no plan")
	}

	out := filepath.Join(dir, "ckpt.lct")
	mustRun(t, "pack", "--plan", plan, in, out)
	back := filepath.Join(dir, "back.safetensors")
	mustRun(t, "unpack", out, back)
	if !bytes.Equal(readFile(t, back), readFile(t, in)) {
		t.Fatal("unpack of pack --plan is not the original file byte for byte")
	}
	a, err := lctfile.ReadArchive(readFile(t, out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]session.ClassCodec{
		"model.wte.weight": weight, "model.fc.weight": own, "grad.model.fc.weight": {Preset: codec.Auto, Dist: codec.Empirical},
		"exp_avg.model.fc.weight": {Preset: codec.Auto, Dist: codec.Empirical}, "exp_avg_sq.model.fc.weight": adamV,
	}
	stored := map[string]int{}
	for _, ts := range shown.Tensors {
		stored[ts.Name] = ts.StoredBytes
	}
	lct := 0
	for _, seg := range a.Segments {
		if seg.Encoding != lctfile.EncodingLCT {
			continue
		}
		lct++
		got := session.ClassCodec{Preset: seg.Tensor.Layout.Preset, Dist: seg.Tensor.Codebook.Dist}
		if got != want[seg.Name] {
			t.Errorf("%s stored with %s, the plan says %s", seg.Name, got, want[seg.Name])
		}
		if len(seg.Payload) != stored[seg.Name] {
			t.Errorf("%s: %d bytes stored, the UI showed %d", seg.Name, len(seg.Payload), stored[seg.Name])
		}
	}
	if lct != len(want) {
		t.Errorf("%d tensors stored through LCT, want %d", lct, len(want))
	}
	// The same plan twice gives the same file.
	again := filepath.Join(dir, "again.lct")
	mustRun(t, "pack", "--plan", plan, in, again)
	if !bytes.Equal(readFile(t, again), readFile(t, out)) {
		t.Error("pack --plan is not deterministic")
	}
}

func TestOpenHeadless(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, filepath.Join(dir, "ckpt.safetensors"), checkpointFile(t, 2))
	out := mustRun(t, "open", "--headless", "--workers", "2", in)
	for _, want := range []string{"table ready after", "7 tensors in 1 file(s)", "exact figures after", "weight", "gradient", "adam_m", "adam_v", "other", "total", "F32: 1 tensors", "BF16 ratio"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

func TestWatchOnceHeadless(t *testing.T) {
	dir := t.TempDir()
	for i, step := range []string{"000020", "000040"} {
		writeFile(t, filepath.Join(dir, ".tmp"), checkpointFile(t, uint64(10+i)))
		if err := os.Rename(filepath.Join(dir, ".tmp"), filepath.Join(dir, "step_"+step+".safetensors")); err != nil {
			t.Fatal(err)
		}
	}
	out := mustRun(t, "watch", "--headless", "--once", dir)
	for _, want := range []string{"step 40 exact", "step", "20", "40", "true", "most drift", "model.fc.bias"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	// --once measures every checkpoint the same way: exactly.
	if strings.Contains(out, "false") {
		t.Errorf("a checkpoint of the history measured from its sample only:\n%s", out)
	}
}

func TestOpenAndWatchErrors(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "x.safetensors"), checkpointFile(t, 3))
	plan := writeFile(t, filepath.Join(dir, "plan.json"), []byte(`{"format":"lcttop-plan/1","classes":{"weight":"fast/gaussian"}}`))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"open", filepath.Join(dir, "missing.safetensors")}, "missing.safetensors: cannot read: no such file or directory"},
		{[]string{"open", "--preset", "fast", file}, `--preset "fast": unknown value "fast"`},
		{[]string{"watch", file}, "not a folder"},
		{[]string{"watch", "--once", dir}, "--once: only with --headless"},
		{[]string{"watch", "--headless", "--once", t.TempDir()}, "no complete checkpoint"},
		{[]string{"pack", "--plan", plan, file, filepath.Join(dir, "o.lct")}, "--plan " + plan + `: plan: class weight: codec "fast/gaussian"`},
		{[]string{"pack", "--plan", filepath.Join(dir, "nope.json"), file, filepath.Join(dir, "o.lct")}, "nope.json: cannot read"},
	} {
		r := lcttop(t, c.args...)
		if r.code != 1 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("lcttop %v: exit %d, stderr %q, want one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "o.lct")); err == nil {
		t.Error("a failed pack left its output")
	}
}
