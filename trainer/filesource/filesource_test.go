package filesource

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
	"lcttop/session"
)

// The sampled indices give the histogram the codec samples.
func TestSampleIndicesMatchCodec(t *testing.T) {
	for _, n := range []int{1, 100, codec.SampleSize, codec.SampleSize + 1, 10_000, 3*65536 + 17, 1 << 20} {
		vals := adamV(uint64(n), n)
		want := codec.SampleSplitHistogram(vals)
		tn := &tensor{name: "x", dtype: "BF16", n: n, raw: safetensors.BF16Bytes(vals), src: &mapping{}}
		got := sampleHistogram(tn)
		if got != want {
			t.Fatalf("n = %d: sampled histogram differs from codec.SampleSplitHistogram", n)
		}
		if got.Exponents() != codec.SampleHistogram(vals) {
			t.Fatalf("n = %d: sampled exponents differ from codec.SampleHistogram", n)
		}
	}
}

// packed returns what lcttop pack stores for every tensor of a file, by
// name (0 for a tensor kept as it is).
func packed(t *testing.T, file []byte, opt lctfile.Options) map[string]*codec.Tensor {
	t.Helper()
	st, err := safetensors.Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lctfile.NewArchive(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*codec.Tensor{}
	for _, s := range a.Segments {
		if s.Kind == lctfile.KindTensor {
			out[s.Name] = s.Tensor
		}
	}
	return out
}

// Opening a file gives estimates at once, then the exact figures: the bytes
// lcttop pack stores for each tensor, and the codec's own figures.
func TestOpenExactMatchesPack(t *testing.T) {
	dir := t.TempDir()
	file := encode(t, modelTensors(1), nil)
	path := filepath.Join(dir, "model.safetensors")
	writeFile(t, path, file)
	for _, cc := range []session.ClassCodec{{Preset: codec.Auto, Dist: codec.Empirical}, {Preset: codec.Clean, Dist: codec.Gaussian}, {Preset: codec.High, Dist: codec.Laplace}} {
		s, err := Open(path, Options{Codec: &cc, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		first := <-s.Snapshots()
		if first.File == nil || len(first.Tensors) != 7 || first.File.Mode != "open" {
			t.Fatalf("first snapshot: %+v", first.File)
		}
		snap := first
		if !exact(snap) {
			snap = waitFor(t, s, "exact figures", exact)
		}
		s.Stop()
		want := packed(t, file, lctfile.Options{Preset: cc.Preset, Dist: cc.Dist})
		st, _ := safetensors.Parse(file)
		var fileBytes, lctBytes int64
		for _, ts := range snap.Tensors {
			if ts.Estimated {
				t.Errorf("%s: still estimated after the exact pass", ts.Name)
			}
			var info safetensors.TensorInfo
			for _, ti := range st.Tensors {
				if ti.Name == ts.Name {
					info = ti
				}
			}
			fileBytes += info.End - info.Begin
			lctBytes += int64(ts.StoredBytes)
			w := want[ts.Name]
			switch {
			case info.DType != "BF16":
				if !ts.Raw || ts.DType != info.DType || int64(ts.StoredBytes) != info.End-info.Begin {
					t.Errorf("%s (%s): %+v, want stored as it is", ts.Name, info.DType, ts)
				}
			case w == nil:
				if !ts.Raw || int64(ts.StoredBytes) != info.End-info.Begin {
					t.Errorf("%s: pack keeps it as it is, the session says %d bytes (raw %v)", ts.Name, ts.StoredBytes, ts.Raw)
				}
			default:
				if ts.StoredBytes != w.StoredBytes() || ts.Preset != cc.Preset || ts.Distribution != cc.Dist {
					t.Errorf("%s %s: %d bytes, pack stores %d", ts.Name, cc, ts.StoredBytes, w.StoredBytes())
				}
				ws := w.Stats
				if ts.EscapeRate != ws.EscapeRate || ts.OverflowRate != ws.OverflowRate || ts.SpillStreamRate != ws.SpillStreamRate ||
					ts.Histogram != ws.Histogram || ts.Entropy != ws.Entropy || ts.CodeLengths != w.Codebook.Lengths {
					t.Errorf("%s %s: figures differ from the codec's whole-tensor encode", ts.Name, cc)
				}
				if d := ts.UsedBits - ws.UsedBits; d > 1e-12 || d < -1e-12 {
					t.Errorf("%s: used bits %v, the codec says %v", ts.Name, ts.UsedBits, ws.UsedBits)
				}
			}
		}
		f := snap.File
		if f.FileBytes != fileBytes || f.LCTBytes != lctBytes || f.Files != 1 {
			t.Errorf("file %d → %d bytes (%d files), tensors sum to %d → %d", f.FileBytes, f.LCTBytes, f.Files, fileBytes, lctBytes)
		}
		p := f.Progress
		if p.Tensors != 5 || p.TensorsDone != 5 || p.BytesDone != p.Bytes {
			t.Errorf("progress %+v", p)
		}
		classes := map[session.TensorClass]int{}
		for _, c := range f.Classes {
			classes[c.Class] = c.Tensors
		}
		if classes[session.ClassWeight] != 3 || classes[session.ClassAdamM] != 1 || classes[session.ClassAdamV] != 1 || classes[session.ClassOther] != 2 {
			t.Errorf("classes %+v", f.Classes)
		}
		if len(f.DTypes) != 3 || f.DTypes[0].DType != "BF16" {
			t.Errorf("dtypes %+v", f.DTypes)
		}
	}
}

// The first snapshot's estimates are near the exact figures.
func TestEstimatesAreClose(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	writeFile(t, path, encode(t, modelTensors(2), nil))
	s, err := Open(path, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	first := <-s.Snapshots()
	last := waitFor(t, s, "exact figures", exact)
	est, ex := byName(first.Tensors), byName(last.Tensors)
	for name, e := range est {
		if e.DType != "BF16" || e.Raw {
			continue
		}
		if !e.Estimated {
			t.Errorf("%s: first snapshot not marked estimated", name)
		}
		if r := e.Ratio / ex[name].Ratio; r < 0.97 || r > 1.03 {
			t.Errorf("%s: estimated ratio %.4f, exact %.4f", name, e.Ratio, ex[name].Ratio)
		}
	}
}

// A sharded Hugging Face checkpoint opens from its folder or its index,
// every shard's tensors together.
func TestOpenTwoShardHFLayout(t *testing.T) {
	dir := t.TempDir()
	ts := modelTensors(3)
	shards := [][]safetensors.NewTensor{ts[:3], ts[3:]}
	weightMap := map[string]string{}
	for k, part := range shards {
		name := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[k]
		writeFile(t, filepath.Join(dir, name), encode(t, part, map[string]string{"format": "pt"}))
		for _, x := range part {
			weightMap[x.Name] = name
		}
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 1}, "weight_map": weightMap})
	writeFile(t, filepath.Join(dir, "model.safetensors.index.json"), idx)
	for _, path := range []string{dir, filepath.Join(dir, "model.safetensors.index.json")} {
		s, err := Open(path, Options{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		snap := waitFor(t, s, "exact figures", exact)
		s.Stop()
		if snap.File.Files != 2 || len(snap.Tensors) != len(ts) {
			t.Fatalf("%s: %d files, %d tensors", path, snap.File.Files, len(snap.Tensors))
		}
		got := byName(snap.Tensors)
		for _, x := range ts {
			if _, ok := got[x.Name]; !ok {
				t.Errorf("%s: tensor %s missing", path, x.Name)
			}
		}
	}
	// A shard the index names that is not there is an error that says so.
	os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors"))
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "model-00002-of-00002.safetensors") {
		t.Fatalf("missing shard: %v", err)
	}
}

// An .lct file opens with the codecs it was stored with, its values and
// blocks decoded from the file.
func TestOpenLCT(t *testing.T) {
	dir := t.TempDir()
	file := encode(t, modelTensors(4), nil)
	st, _ := safetensors.Parse(file)
	lct, err := lctfile.Pack(st, lctfile.Options{Preset: codec.High, Dist: codec.Laplace})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "model.lct")
	writeFile(t, path, lct)
	s, err := Open(path, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if got := s.ClassCodec(session.ClassWeight); got != (session.ClassCodec{Preset: codec.High, Dist: codec.Laplace}) {
		t.Fatalf("weight class starts on %s, the file was stored with high/laplace", got)
	}
	first := <-s.Snapshots()
	if e := byName(first.Tensors)["model.layers.0.fc.weight"]; !e.Estimated || e.Preset != codec.High {
		t.Fatalf("before the exact pass: %+v", e)
	}
	snap := waitFor(t, s, "exact figures", exact)
	want := packed(t, file, lctfile.Options{Preset: codec.High, Dist: codec.Laplace})
	for _, ts := range snap.Tensors {
		if w := want[ts.Name]; w != nil && ts.StoredBytes != w.StoredBytes() {
			t.Errorf("%s: %d bytes, the file stores %d", ts.Name, ts.StoredBytes, w.StoredBytes())
		}
	}
	for _, x := range modelTensors(4) {
		if x.DType != "BF16" {
			if _, err := s.Values(x.Name); err == nil {
				t.Errorf("%s (%s): values given", x.Name, x.DType)
			}
			continue
		}
		got, err := s.Values(x.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(safetensors.BF16Bytes(got), x.Data) {
			t.Errorf("%s: values differ from the original", x.Name)
		}
	}
	d, err := s.Detail("model.layers.0.fc.weight", 1)
	if err != nil {
		t.Fatal(err)
	}
	orig := safetensors.BF16Values(modelTensors(4)[1].Data)
	bs := d.Layout.BlockSize
	if d.Block != 1 || d.Blocks != (len(orig)+bs-1)/bs || d.N != len(orig) || !slices.Equal(d.Values, orig[bs:2*bs]) ||
		d.Layout.Preset != codec.High || d.Codebook.Dist != codec.Laplace {
		t.Fatalf("detail: block %d of %d, N %d, %s/%s", d.Block, d.Blocks, d.N, d.Layout.Preset, d.Codebook.Dist)
	}
	if _, err := s.Detail("model.layers.0.fc.weight", d.Blocks); err == nil {
		t.Fatal("a block past the end given")
	}
}

// Changing a class's or a tensor's codec codes the tensors again, and the
// exact figures are pack's under the new choice.
func TestCodecChangesRecode(t *testing.T) {
	dir := t.TempDir()
	file := encode(t, modelTensors(5), nil)
	path := filepath.Join(dir, "m.safetensors")
	writeFile(t, path, file)
	s, err := Open(path, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	waitFor(t, s, "exact figures", exact)
	high := session.ClassCodec{Preset: codec.High, Dist: codec.Gaussian}
	if err := s.SetClassCodec(session.ClassWeight, high); err != nil {
		t.Fatal(err)
	}
	const own = "model.layers.0.fc.weight"
	clean := session.ClassCodec{Preset: codec.Clean, Dist: codec.PowerLaw}
	if err := s.SetTensorCodec(own, clean); err != nil {
		t.Fatal(err)
	}
	snap := waitFor(t, s, "exact figures under the new codecs", func(sn session.Snapshot) bool {
		return exact(sn) && byName(sn.Tensors)[own].Distribution == codec.PowerLaw && byName(sn.Tensors)["model.embed.weight"].Preset == codec.High
	})
	highPack := packed(t, file, lctfile.Options{Preset: high.Preset, Dist: high.Dist})
	cleanPack := packed(t, file, lctfile.Options{Preset: clean.Preset, Dist: clean.Dist})
	autoPack := packed(t, file, lctfile.Options{Preset: codec.Auto, Dist: codec.Empirical})
	got := byName(snap.Tensors)
	for name, want := range map[string]*codec.Tensor{
		"model.embed.weight": highPack["model.embed.weight"],
		own:                  cleanPack[own],
		"optimizer.exp_avg.model.layers.0.fc.weight": autoPack["optimizer.exp_avg.model.layers.0.fc.weight"],
	} {
		if got[name].StoredBytes != want.StoredBytes() {
			t.Errorf("%s: %d bytes, pack stores %d", name, got[name].StoredBytes, want.StoredBytes())
		}
	}
	if cc, ok := s.TensorCodec(own); !ok || cc != clean {
		t.Fatalf("TensorCodec = %v %v", cc, ok)
	}
	if err := s.SetTensorCodec("rotary.inv_freq", clean); err == nil {
		t.Fatal("an F32 tensor accepted a codec")
	}
	if err := s.SetTensorCodec("nope", clean); err == nil {
		t.Fatal("an unknown tensor accepted a codec")
	}
	if err := s.SetClassCodec("bias", clean); err == nil {
		t.Fatal("an unknown class accepted")
	}
	if err := s.ClearTensorCodec(own); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, "the override removed", func(sn session.Snapshot) bool {
		return exact(sn) && byName(sn.Tensors)[own].StoredBytes == highPack[own].StoredBytes()
	})
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notST := filepath.Join(dir, "x.safetensors")
	os.WriteFile(notST, []byte("hello world, not a tensor file"), 0o644)
	dup := filepath.Join(dir, "dup")
	os.Mkdir(dup, 0o755)
	ts := modelTensors(6)[:2]
	writeFile(t, filepath.Join(dup, "a.safetensors"), encode(t, ts, nil))
	writeFile(t, filepath.Join(dup, "b.safetensors"), encode(t, ts, nil))
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for path, want := range map[string]string{
		filepath.Join(dir, "missing"): "no such file",
		notST:                         "not a safetensors file",
		dup:                           "is in both",
		empty:                         "no checkpoint in this folder",
	} {
		if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), filepath.Base(path)) && want != "is in both" {
			t.Errorf("Open(%s): %v, want an error naming it with %q", path, err, want)
		}
	}
}
