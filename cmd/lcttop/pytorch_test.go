package main

import (
	"encoding/json"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lcttop/codec/safetensors"
	"lcttop/session"
)

// pythonTorch is Debian's python3 with PyTorch (python3-torch). Where it is
// missing the tests that need it skip, except under CI, whose .ci/run
// installs it: there a missing PyTorch fails them.
func pythonTorch(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s cannot import torch (%v): .ci/run installs python3-torch", py, err)
		}
		t.Skipf("%s cannot import torch (apt-get install --no-install-recommends python3-torch)", py)
	}
	return py
}

// expected is what scripts/torch_loop.py says PyTorch held at the last step.
type expected struct {
	Step    int      `json:"step"`
	World   int      `json:"world"`
	Params  []string `json:"params"`
	Tensors map[string]struct {
		Elements  int         `json:"elements"`
		Histogram [256]uint64 `json:"histogram"`
		CRC32     uint32      `json:"crc32"`
	} `json:"tensors"`
}

// runLoop trains with real PyTorch into a fresh folder.
func runLoop(t *testing.T, args ...string) (string, expected) {
	t.Helper()
	py := pythonTorch(t)
	out := t.TempDir()
	cmd := exec.Command(py, append([]string{filepath.Join("..", "..", "scripts", "torch_loop.py"), out}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("torch_loop.py %v: %v\n%s", args, err, b)
	}
	var want expected
	if err := json.Unmarshal(readFile(t, filepath.Join(out, "expected.json")), &want); err != nil {
		t.Fatal(err)
	}
	return out, want
}

// snapshotJSON runs lcttop with --json and returns its last line's snapshot.
func snapshotJSON(t *testing.T, args ...string) session.Snapshot {
	t.Helper()
	out := mustRun(t, args...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var snap session.Snapshot
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &snap); err != nil {
		t.Fatalf("lcttop %v: %v", args, err)
	}
	return snap
}

// checkDump checks the dump of the last step: its rank files hold the
// bytes PyTorch held, and watch merges them into one checkpoint with every
// tensor, each of the elements and exponents PyTorch held.
func checkDump(t *testing.T, out string, want expected) session.Snapshot {
	t.Helper()
	dump := filepath.Join(out, "dump")
	files, _ := filepath.Glob(filepath.Join(dump, "lcttop-step00000004*.safetensors"))
	if len(files) != want.World {
		t.Fatalf("%d files of the last step, want %d (one per rank)", len(files), want.World)
	}
	seen := 0
	for _, f := range files {
		st, err := safetensors.Parse(readFile(t, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range st.Tensors {
			w, ok := want.Tensors[x.Name]
			if !ok {
				t.Errorf("%s: tensor %s PyTorch did not hold", f, x.Name)
				continue
			}
			seen++
			if c := crc32.ChecksumIEEE(st.Bytes(x)); c != w.CRC32 {
				t.Errorf("%s: tensor %s: its bytes are not what PyTorch held", f, x.Name)
			}
		}
	}
	if seen != len(want.Tensors) {
		t.Errorf("the ranks' files hold %d tensors, PyTorch %d", seen, len(want.Tensors))
	}
	snap := snapshotJSON(t, "watch", "--headless", "--once", "--json", dump)
	if snap.Step != want.Step || snap.File.Files != want.World {
		t.Fatalf("watch shows step %d from %d files, want step %d from %d", snap.Step, snap.File.Files, want.Step, want.World)
	}
	got := map[string]session.TensorStats{}
	for _, ts := range snap.Tensors {
		got[ts.Name] = ts
	}
	if len(got) != len(want.Tensors) {
		t.Errorf("watch merged %d tensors, PyTorch held %d", len(got), len(want.Tensors))
	}
	for name, w := range want.Tensors {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("tensor %s: not in the merged checkpoint", name)
		case g.Estimated || g.Elements != w.Elements || g.Histogram != w.Histogram:
			t.Errorf("tensor %s: %d elements (estimated %v), exponents differ from PyTorch's: %v", name, g.Elements, g.Estimated, g.Histogram != w.Histogram)
		}
	}
	return snap
}

// sameFigures checks that a checkpoint's tensor shows the figures the dump
// shows for the same values.
func sameFigures(t *testing.T, what string, got, dumped session.TensorStats) {
	t.Helper()
	if got.Elements != dumped.Elements || got.StoredBytes != dumped.StoredBytes || got.Ratio != dumped.Ratio || got.Histogram != dumped.Histogram || got.Estimated {
		t.Errorf("%s: %d elements, %d bytes, ratio %.6f; the dump's %s: %d, %d, %.6f (histograms equal: %v)",
			what, got.Elements, got.StoredBytes, got.Ratio, dumped.Name, dumped.Elements, dumped.StoredBytes, dumped.Ratio, got.Histogram == dumped.Histogram)
	}
}

// One process: the dump watch follows, and the same loop's torch.save
// checkpoint and torch.distributed.checkpoint folder opened by lcttop open
// with the dump's figures for every parameter and optimizer state.
func TestRealPyTorchLoop(t *testing.T) {
	out, want := runLoop(t)
	snap := checkDump(t, out, want)
	dumped := map[string]session.TensorStats{}
	for _, ts := range snap.Tensors {
		dumped[ts.Name] = ts
	}
	for _, src := range []string{filepath.Join(out, "ckpt.pt"), filepath.Join(out, "dcp")} {
		opened := snapshotJSON(t, "open", "--headless", "--json", src)
		byName := map[string]session.TensorStats{}
		for _, ts := range opened.Tensors {
			byName[ts.Name] = ts
		}
		compared := 0
		for _, p := range want.Params {
			pairs := map[string]string{"model." + p: "param." + p}
			for _, k := range []string{"exp_avg", "exp_avg_sq"} {
				pairs["optimizer.state."+p+"."+k] = k + "." + p
			}
			for name, dumpName := range pairs {
				g, ok := byName[name]
				if !ok {
					t.Errorf("%s: no tensor %s", src, name)
					continue
				}
				sameFigures(t, src+": "+name, g, dumped[dumpName])
				compared++
			}
		}
		if compared != 3*len(want.Params) {
			t.Errorf("%s: %d tensors compared, want %d", src, compared, 3*len(want.Params))
		}
	}
}

// DistributedDataParallel over gloo in 2 processes: watch merges the ranks'
// files into one checkpoint of what PyTorch held; the checkpoint folder's
// sharded embedding, one chunk per rank, opens as one tensor with the
// figures of the dumped embedding.
func TestRealPyTorchDDP(t *testing.T) {
	out, want := runLoop(t, "--ddp")
	snap := checkDump(t, out, want)
	var embed session.TensorStats
	for _, ts := range snap.Tensors {
		if ts.Name == "param.embed.weight" {
			embed = ts
		}
	}
	dcp := filepath.Join(out, "dcp")
	ranks, _ := filepath.Glob(filepath.Join(dcp, "__1_*.distcp"))
	if len(ranks) == 0 {
		t.Fatal("rank 1 wrote no file of the checkpoint folder")
	}
	opened := snapshotJSON(t, "open", "--headless", "--json", dcp)
	for _, ts := range opened.Tensors {
		if ts.Name == "sharded.embed.weight" {
			sameFigures(t, "sharded.embed.weight", ts, embed)
			return
		}
	}
	t.Error("no tensor sharded.embed.weight in the checkpoint folder")
}
