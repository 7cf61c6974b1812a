package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/codec/safetensors"
	"lcttop/session"
)

// A sharded run's check: at each step scripts/pytorch_reference.py
// gathered (--gather-at), the rank files scripts/lcttop_dump.py wrote hold,
// put together, the full state PyTorch gathered, bit for bit, and lcttop
// watch merges them into one checkpoint of every tensor with exactly its
// elements and exponents.

// shardName is an FSDP rank's piece of a tensor, as lcttop_dump.py names it.
var shardName = regexp.MustCompile(`^(.+)\.shard(\d+)$`)

// fullStep is the name pytorch_reference.py gives a gathered state.
var fullStep = regexp.MustCompile(`^full-step(\d+)\.safetensors$`)

// tensorFigures are what watch must show of a dumped tensor.
type tensorFigures struct {
	elements  int
	histogram codec.Histogram
}

// stepMatch is what compareGathered found equal at one step.
type stepMatch struct {
	step, world int
	files       []string
	tensors     int   // of the full state
	sharded     int   // of them put together from pieces
	bytes       int64 // compared
	dumped      map[string]tensorFigures
}

// compareGathered compares the rank files of the step that full, a state
// pytorch_reference.py gathered, was written at with it: every tensor of
// the full state is in the files, whole in one (DDP) or in pieces that
// follow each other in rank order (FSDP), with the same bytes; nothing
// else is. It returns the differences, one line each.
func compareGathered(dump, full string) (stepMatch, []string, error) {
	var m stepMatch
	f, err := safetensors.ReadFile(full)
	if err != nil {
		return m, nil, fmt.Errorf("%s: %v", full, err)
	}
	if m.step, err = strconv.Atoi(f.Metadata["step"]); err != nil {
		return m, nil, fmt.Errorf("%s: no step in its metadata", full)
	}
	if m.world, err = strconv.Atoi(f.Metadata["world"]); err != nil || m.world < 1 {
		return m, nil, fmt.Errorf("%s: no world size in its metadata", full)
	}
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf("step %d: ", m.step)+fmt.Sprintf(format, args...))
	}
	m.files, _ = filepath.Glob(filepath.Join(dump, fmt.Sprintf("lcttop-step%08d-rank*-of-*.safetensors", m.step)))
	if m.world == 1 {
		m.files, _ = filepath.Glob(filepath.Join(dump, fmt.Sprintf("lcttop-step%08d.safetensors", m.step)))
	}
	sort.Strings(m.files)
	if len(m.files) != m.world {
		bad("%d rank files in %s, want %d (was a dump skipped?)", len(m.files), dump, m.world)
		return m, problems, nil
	}

	type piece struct {
		rank int
		name string
		b    []byte
	}
	whole := map[string][]byte{}
	wholeRank := map[string]int{}
	pieces := map[string][]piece{}
	for _, path := range m.files {
		rf, err := safetensors.ReadFile(path)
		if err != nil {
			return m, nil, fmt.Errorf("%s: %v", path, err)
		}
		rank, err := strconv.Atoi(rf.Metadata["rank"])
		if err != nil || rf.Metadata["step"] != strconv.Itoa(m.step) || rf.Metadata["world"] != strconv.Itoa(m.world) {
			bad("%s: metadata %v, want step %d of %d ranks", filepath.Base(path), rf.Metadata, m.step, m.world)
			continue
		}
		for _, x := range rf.Tensors {
			if x.DType != "BF16" {
				bad("%s: %s is %s, not BF16", filepath.Base(path), x.Name, x.DType)
				continue
			}
			if s := shardName.FindStringSubmatch(x.Name); s != nil {
				if r, _ := strconv.Atoi(s[2]); r != rank {
					bad("%s: %s, a piece of rank %d in the file of rank %d", filepath.Base(path), x.Name, r, rank)
				}
				pieces[s[1]] = append(pieces[s[1]], piece{rank, x.Name, rf.Bytes(x)})
				continue
			}
			if r, dup := wholeRank[x.Name]; dup {
				bad("%s written by ranks %d and %d", x.Name, r, rank)
			}
			whole[x.Name], wholeRank[x.Name] = rf.Bytes(x), rank
		}
	}

	m.dumped = map[string]tensorFigures{}
	figures := func(b []byte) tensorFigures {
		return tensorFigures{len(b) / 2, codec.FullHistogram(safetensors.BF16Values(b))}
	}
	for _, x := range f.Tensors {
		want := f.Bytes(x)
		m.tensors++
		m.bytes += int64(len(want))
		if b, ok := whole[x.Name]; ok {
			if !bytes.Equal(b, want) {
				bad("%s (rank %d) differs from the gathered state", x.Name, wholeRank[x.Name])
			}
			m.dumped[x.Name] = figures(want)
			delete(whole, x.Name)
			continue
		}
		ps, ok := pieces[x.Name]
		if !ok {
			bad("%s: in no rank's file", x.Name)
			continue
		}
		delete(pieces, x.Name)
		m.sharded++
		sort.Slice(ps, func(i, j int) bool { return ps[i].rank < ps[j].rank })
		off := 0
		for i, p := range ps {
			if i > 0 && p.rank == ps[i-1].rank {
				bad("%s: rank %d wrote two pieces", x.Name, p.rank)
			}
			end := min(off+len(p.b), len(want))
			if !bytes.Equal(p.b, want[off:end]) {
				bad("%s: rank %d's piece (%d values from %d) differs from the gathered state", x.Name, p.rank, len(p.b)/2, off/2)
			}
			m.dumped[p.name] = figures(want[off:end])
			off += len(p.b)
		}
		if off != len(want) {
			bad("%s: the pieces hold %d values, the gathered state %d", x.Name, off/2, len(want)/2)
		}
	}
	for name, r := range wholeRank {
		if _, left := whole[name]; left {
			bad("%s (rank %d) is not in the gathered state", name, r)
		}
	}
	for name := range pieces {
		bad("%s, in pieces, is not in the gathered state", name)
	}
	return m, problems, nil
}

// linkStep makes a folder that holds only the given files, linked (or
// copied where a link cannot be made), for watch to read as one step.
func linkStep(t *testing.T, files []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		dst := filepath.Join(dir, filepath.Base(f))
		if os.Link(f, dst) == nil {
			continue
		}
		in, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(dst)
		if err == nil {
			_, err = io.Copy(out, in)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		in.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkWatchMerges runs lcttop watch --headless --once --json on a folder
// of one step's rank files and checks that it shows one checkpoint of all
// of them, every dumped tensor with exact figures: its elements and
// exponent histogram as the gathered state has them; lcttop open on the
// same folder shows the same checkpoint with the same figures.
func checkWatchMerges(t *testing.T, m stepMatch) {
	t.Helper()
	dir := linkStep(t, m.files)
	snap := snapshotJSON(t, "watch", "--headless", "--once", "--json", dir)
	defer checkOpenMerges(t, dir, m, snap)
	if snap.Step != m.step || snap.File == nil || snap.File.Files != m.world {
		files := -1
		if snap.File != nil {
			files = snap.File.Files
		}
		t.Fatalf("watch shows step %d from %d files, want step %d from %d", snap.Step, files, m.step, m.world)
	}
	if len(snap.Tensors) != len(m.dumped) {
		t.Errorf("step %d: watch merged %d tensors, the ranks wrote %d", m.step, len(snap.Tensors), len(m.dumped))
	}
	for _, ts := range snap.Tensors {
		want, ok := m.dumped[ts.Name]
		switch {
		case !ok:
			t.Errorf("step %d: watch shows %s, which no rank wrote", m.step, ts.Name)
		case ts.Error != "" || ts.Estimated:
			t.Errorf("step %d: %s: not measured exactly (%q)", m.step, ts.Name, ts.Error)
		case ts.Elements != want.elements || ts.Histogram != [256]uint64(want.histogram):
			t.Errorf("step %d: %s: watch counts %d elements (exponents equal: %v), the gathered state %d",
				m.step, ts.Name, ts.Elements, ts.Histogram == [256]uint64(want.histogram), want.elements)
		}
	}
}

// checkOpenMerges checks that lcttop open on a folder of one step's rank
// files shows what watch showed of it: one checkpoint of every rank's file,
// each tensor with watch's figures.
func checkOpenMerges(t *testing.T, dir string, m stepMatch, watched session.Snapshot) {
	t.Helper()
	opened := snapshotJSON(t, "open", "--headless", "--json", dir)
	if opened.File == nil || opened.File.Files != m.world {
		t.Fatalf("step %d: open shows %+v, want one checkpoint of %d files", m.step, opened.File, m.world)
	}
	if len(opened.Tensors) != len(watched.Tensors) {
		t.Errorf("step %d: open shows %d tensors, watch %d", m.step, len(opened.Tensors), len(watched.Tensors))
	}
	byName := map[string]session.TensorStats{}
	for _, ts := range watched.Tensors {
		byName[ts.Name] = ts
	}
	for _, ts := range opened.Tensors {
		w, ok := byName[ts.Name]
		if !ok {
			t.Errorf("step %d: open shows %s, which watch did not", m.step, ts.Name)
			continue
		}
		sameFigures(t, fmt.Sprintf("step %d: open's %s", m.step, ts.Name), ts, w)
	}
}

// checkShardedRun checks every state pytorch_reference.py gathered into
// fullDir against the rank files in dump, and returns how many.
func checkShardedRun(t *testing.T, dump, fullDir string) int {
	t.Helper()
	entries, err := os.ReadDir(fullDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !fullStep.MatchString(e.Name()) {
			continue
		}
		m, problems, err := compareGathered(dump, filepath.Join(fullDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		if len(problems) > 0 {
			continue
		}
		checkWatchMerges(t, m)
		t.Logf("step %d: the files of %d ranks put together are the gathered state, bit for bit: %d tensors (%d from pieces), %d bytes; watch and open merged them into one checkpoint of %d tensors with the gathered exponents",
			m.step, m.world, m.tensors, m.sharded, m.bytes, len(m.dumped))
		n++
	}
	if n == 0 {
		t.Fatalf("no gathered state (full-stepNNNNNNNN.safetensors) in %s", fullDir)
	}
	return n
}

// The device's entry (scripts/sharded_check.sh, through the test binary and
// LCTTOP_BIN): a sharded run's dump folder and the states it gathered.
func TestShardedRunFolder(t *testing.T) {
	dump, full := os.Getenv("LCTTOP_SHARDED_DUMP"), os.Getenv("LCTTOP_SHARDED_FULL")
	if dump == "" || full == "" {
		t.Skip("LCTTOP_SHARDED_DUMP and LCTTOP_SHARDED_FULL name a sharded run's folders (scripts/sharded_check.sh)")
	}
	checkShardedRun(t, dump, full)
}

// DistributedDataParallel over gloo in 2 processes, started as torchrun
// starts them (scripts/ranks.sh: Debian's torchrun does not start under
// Python 3.11), the lcttop GPT of scripts/pytorch_reference.py on the CPU:
// at both dumped steps the ranks' files are rank 0's state.
func TestRealPyTorchShardedDDP(t *testing.T) {
	py := pythonTorch(t)
	dir := t.TempDir()
	dump, full := filepath.Join(dir, "dump"), filepath.Join(dir, "full")
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "ranks.sh"), "2", py,
		filepath.Join("..", "..", "scripts", "pytorch_reference.py"), "--device", "cpu", "--ddp", "--model", "tiny",
		"--batch", "2", "--seq-len", "32", "--warmup", "1", "--steps", "3", "--dump-every", "2", "--gather-at", "2,4",
		"--dump-dir", dump, "--gather-dir", full)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pytorch_reference.py --ddp: %v\n%s", err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var sum struct {
		Parallel     string   `json:"parallel"`
		World        int      `json:"world"`
		DumpsWritten int      `json:"dumps_written"`
		DumpErrors   []string `json:"dump_errors"`
		Gathered     []int    `json:"gathered"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("pytorch_reference.py's last line: %v\n%s", err, out)
	}
	if sum.Parallel != "ddp" || sum.World != 2 || sum.DumpsWritten != 4 || len(sum.DumpErrors) > 0 || len(sum.Gathered) != 2 {
		t.Fatalf("pytorch_reference.py says %+v, want ddp on 2 ranks, 4 files written, steps 2 and 4 gathered", sum)
	}
	if n := checkShardedRun(t, dump, full); n != 2 {
		t.Errorf("%d steps checked, want 2", n)
	}
}

// The check on made files: FSDP's pieces (even and uneven) and DDP's whole
// tensors pass, and each kind of difference is found.
func TestShardedCheckFindsDifferences(t *testing.T) {
	values := func(n int, seed uint32) []byte {
		v := make([]uint16, n)
		for i := range v {
			seed = seed*1664525 + 1013904223
			v[i] = uint16(seed >> 16) // any bit pattern
		}
		return safetensors.BF16Bytes(v)
	}
	type tensor struct {
		name  string
		shape []int64
		data  []byte
	}
	full := []tensor{
		{"param.w", []int64{64, 96}, values(64*96, 1)},
		{"grad.w", []int64{64, 96}, values(64*96, 2)},
		{"exp_avg.b", []int64{5001}, values(5001, 3)}, // odd: the ranks' pieces differ in size
		{"param.e", []int64{4096}, values(4096, 4)},
	}
	// write writes the two ranks' files, mutated: w, grad.w and b in pieces
	// (rank 0 the first half, rounded up), e whole from rank 1; then the
	// gathered state.
	write := func(t *testing.T, mutate func(rank int, ts []safetensors.NewTensor) []safetensors.NewTensor) (string, string) {
		dir := t.TempDir()
		dump, fullDir := filepath.Join(dir, "dump"), filepath.Join(dir, "full")
		os.MkdirAll(dump, 0o755)
		os.MkdirAll(fullDir, 0o755)
		for rank := range 2 {
			var ts []safetensors.NewTensor
			for _, x := range full {
				if x.name == "param.e" {
					if rank == 1 {
						ts = append(ts, safetensors.NewTensor{Name: x.name, DType: "BF16", Shape: x.shape, Data: x.data})
					}
					continue
				}
				n := len(x.data) / 2
				lo, hi := 0, (n+1)/2
				if rank == 1 {
					lo, hi = hi, n
				}
				ts = append(ts, safetensors.NewTensor{Name: fmt.Sprintf("%s.shard%d", x.name, rank), DType: "BF16",
					Shape: []int64{int64(hi - lo)}, Data: bytes.Clone(x.data[2*lo : 2*hi])})
			}
			if mutate != nil {
				ts = mutate(rank, ts)
			}
			if ts == nil {
				continue
			}
			b, err := safetensors.Encode(ts, map[string]string{"format": "lcttop-dump/1", "step": "40", "rank": strconv.Itoa(rank), "world": "2"})
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dump, fmt.Sprintf("lcttop-step00000040-rank%05d-of-00002.safetensors", rank)), b)
		}
		var ts []safetensors.NewTensor
		for _, x := range full {
			ts = append(ts, safetensors.NewTensor{Name: x.name, DType: "BF16", Shape: x.shape, Data: x.data})
		}
		b, err := safetensors.Encode(ts, map[string]string{"format": "lcttop-full/1", "step": "40", "world": "2"})
		if err != nil {
			t.Fatal(err)
		}
		return dump, writeFile(t, filepath.Join(fullDir, "full-step00000040.safetensors"), b)
	}

	t.Run("equal", func(t *testing.T) {
		dump, fullFile := write(t, nil)
		if n := checkShardedRun(t, dump, filepath.Dir(fullFile)); n != 1 {
			t.Errorf("%d steps checked, want 1", n)
		}
	})
	for _, c := range []struct {
		name   string
		mutate func(rank int, ts []safetensors.NewTensor) []safetensors.NewTensor
		want   string
	}{
		{"a flipped bit", func(rank int, ts []safetensors.NewTensor) []safetensors.NewTensor {
			if rank == 1 {
				ts[0].Data[17] ^= 0x01
			}
			return ts
		}, "param.w: rank 1's piece (3072 values from 3072) differs"},
		{"a rank's file missing", func(rank int, ts []safetensors.NewTensor) []safetensors.NewTensor {
			if rank == 1 {
				return nil
			}
			return ts
		}, "1 rank files"},
		{"pieces in the wrong files", func(rank int, ts []safetensors.NewTensor) []safetensors.NewTensor {
			ts[0].Name = fmt.Sprintf("param.w.shard%d", 1-rank)
			return ts
		}, "param.w.shard1, a piece of rank 1 in the file of rank 0"},
		{"a piece short", func(rank int, ts []safetensors.NewTensor) []safetensors.NewTensor {
			if rank == 1 {
				ts[2].Data, ts[2].Shape = ts[2].Data[:len(ts[2].Data)-2], []int64{ts[2].Shape[0] - 1}
			}
			return ts
		}, "exp_avg.b: the pieces hold 5000 values, the gathered state 5001"},
		{"a tensor the state lacks", func(rank int, ts []safetensors.NewTensor) []safetensors.NewTensor {
			if rank == 0 {
				ts = append(ts, safetensors.NewTensor{Name: "exp_avg_sq.e", DType: "BF16", Shape: []int64{4}, Data: make([]byte, 8)})
			}
			return ts
		}, "exp_avg_sq.e (rank 0) is not in the gathered state"},
		{"a tensor no rank wrote", func(rank int, ts []safetensors.NewTensor) []safetensors.NewTensor {
			if rank == 1 {
				return ts[:len(ts)-1] // param.e
			}
			return ts
		}, "param.e: in no rank's file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dump, fullFile := write(t, c.mutate)
			_, problems, err := compareGathered(dump, fullFile)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(problems, "\n"), c.want) {
				t.Errorf("problems %q, want one saying %q", problems, c.want)
			}
		})
	}
}
