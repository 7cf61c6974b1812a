package filesource

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
	"lcttop/codec/torchfile"
	"lcttop/session"
	"lcttop/trainer"
)

// hfIndexSuffix ends the name of a sharded Hugging Face checkpoint's index.
const hfIndexSuffix = ".safetensors.index.json"

// tensor is one tensor of a checkpoint, where its bytes lie.
type tensor struct {
	name  string
	class session.TensorClass
	dtype string
	n     int   // elements
	bytes int64 // as a safetensors file stores it
	src   *mapping
	raw   []byte // the stored bytes, in the mapping (nil for an LCT segment)
	// lct is an .lct file's LCT segment: its serialised tensor, in the
	// mapping, parsed again when its values are needed; stored is what its
	// header says (the codec and bytes it was stored with), shown until the
	// exact pass has decoded it.
	lct    []byte
	stored session.TensorStats
}

// coded reports whether the codec takes the tensor: BF16, not empty, not
// over the format's element limit.
func (t *tensor) coded() bool {
	return t.dtype == "BF16" && t.n > 0 && t.n <= codec.MaxElements
}

// values reads elements [lo, hi) of a BF16 tensor into dst (len hi-lo).
// LCT segments are decoded whole; use decodeAll for them.
func (t *tensor) values(lo, hi int, dst []uint16) {
	b := t.raw[2*lo : 2*hi]
	for i := range dst {
		dst[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
}

// decodeAll returns a BF16 tensor's values, whole.
func (t *tensor) decodeAll() ([]uint16, error) {
	out := make([]uint16, t.n)
	if t.lct == nil {
		t.values(0, t.n, out)
		t.src.release(t.raw)
		return out, nil
	}
	ct, err := codec.ParseTensor(t.lct)
	t.src.release(t.lct)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	if ct.N != t.n {
		return nil, fmt.Errorf("%s: LCT tensor holds %d values, the header says %d", t.name, ct.N, t.n)
	}
	if err := codec.Decode(ct, out); err != nil {
		return nil, fmt.Errorf("%s: %w", t.name, err)
	}
	return out, nil
}

// checkpoint is a set of mapped files read as one model's tensors.
type checkpoint struct {
	path    string // what was opened: a file or a folder
	step    int    // from the names or the metadata; 0 when none says
	files   []*mapping
	modTime time.Time // of the newest file
	tensors []*tensor // in file order, files in name order
	index   map[string]int
	meta    map[string]string

	// stored is, for an .lct file, each class's codec and each tensor's
	// where it differs (a plan that pack applied), to start from.
	stored *session.Plan

	// bad are the files of a folder that could not be read, and why: the
	// rest is shown, these are named.
	bad []session.SkippedFile

	refs   sync.WaitGroup // readers of the mappings
	closed sync.Once
}

// close unmaps the files once every reader is done.
func (c *checkpoint) close() {
	c.closed.Do(func() {
		c.refs.Wait()
		for _, m := range c.files {
			_ = m.close()
		}
	})
}

// checkpointFiles lists the files a path holds as one checkpoint: the file
// itself; the shards an index names (the index itself, or the folder that
// holds it); or every .safetensors and .lct file of a folder.
func checkpointFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %w", path, pathReason(err))
	}
	if !fi.IsDir() {
		if strings.HasSuffix(path, hfIndexSuffix) {
			return indexFiles(path)
		}
		return []string{path}, nil
	}
	if torchfile.IsFolder(path) {
		return []string{path}, nil // a torch.distributed.checkpoint folder: read as one
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %w", path, pathReason(err))
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || hidden(name) {
			continue
		}
		if strings.HasSuffix(name, hfIndexSuffix) {
			return indexFiles(filepath.Join(path, name))
		}
		if isCheckpointFile(name) {
			files = append(files, filepath.Join(path, name))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no checkpoint in this folder (.safetensors, .lct, .pt, .pth, .bin, .ckpt, or a torch.distributed.checkpoint folder)", path)
	}
	return files, nil
}

// checkpointSuffixes end the names of the files a folder's checkpoint is
// read from: safetensors, .lct, and torch.save's usual names.
var checkpointSuffixes = []string{".safetensors", ".lct", ".pt", ".pth", ".bin", ".ckpt"}

func isCheckpointFile(name string) bool {
	for _, s := range checkpointSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// hidden names are temporary files by convention: dot files, and the
// endings writers give a file before they rename it into place.
func hidden(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") {
		return true
	}
	for _, s := range []string{".tmp", ".part", ".partial", ".incomplete", ".lock"} {
		if strings.HasSuffix(name, s) || strings.Contains(name, s+".") || strings.Contains(name, s+"-") {
			return true
		}
	}
	return false
}

// indexFiles reads a Hugging Face index (model.safetensors.index.json): its
// weight_map names the shard of every tensor.
func indexFiles(index string) ([]string, error) {
	b, err := os.ReadFile(index)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot read: %w", index, pathReason(err))
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("%s: not a safetensors index: %v", index, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: not a safetensors index: no weight_map", index)
	}
	seen := map[string]bool{}
	var files []string
	for _, shard := range idx.WeightMap {
		if shard != filepath.Base(shard) || hidden(shard) {
			return nil, fmt.Errorf("%s: weight_map names %q, not a file beside the index", index, shard)
		}
		if !seen[shard] {
			seen[shard] = true
			files = append(files, filepath.Join(filepath.Dir(index), shard))
		}
	}
	slices.Sort(files)
	return files, nil
}

// openCheckpoint maps the files and lists their tensors. step is the
// checkpoint's step when the caller knows it (watch), else -1.
func openCheckpoint(path string, files []string, step int) (*checkpoint, error) {
	return openFiles(path, files, step, false)
}

// openFiles is openCheckpoint; with tolerant (a folder of files that are
// each a checkpoint's part, no index or rank set that promises them all),
// a file that cannot be read is named in c.bad and the rest shown.
func openFiles(path string, files []string, step int, tolerant bool) (*checkpoint, error) {
	c := &checkpoint{path: path, step: max(step, 0)}
	fail := func(err error) (*checkpoint, error) {
		c.close()
		return nil, err
	}
	names := map[string]string{}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.ModTime().After(c.modTime) {
			c.modTime = fi.ModTime()
		}
		mapped := len(c.files)
		ts, meta, stored, err := c.readFile(f)
		if err != nil {
			for _, m := range c.files[mapped:] {
				_ = m.close()
			}
			c.files = c.files[:mapped]
			if tolerant { // one bad file of a folder: named, the rest shown
				c.bad = append(c.bad, session.SkippedFile{Path: f, Reason: reasonOf(err, f)})
				continue
			}
			return fail(err)
		}
		for _, t := range ts {
			if other, dup := names[t.name]; dup {
				return fail(fmt.Errorf("tensor %s is in both %s and %s: open one checkpoint at a time (lcttop watch follows a folder of several)", t.name, other, f))
			}
			names[t.name] = f
		}
		c.tensors = append(c.tensors, ts...)
		if c.meta == nil {
			c.meta = meta
		}
		if stored != nil && c.stored == nil {
			c.stored = stored
		}
	}
	if len(c.tensors) == 0 {
		if len(c.bad) > 0 {
			return fail(fmt.Errorf("%s: %s", c.bad[0].Path, c.bad[0].Reason))
		}
		return fail(fmt.Errorf("%s: holds no tensor", path))
	}
	c.index = make(map[string]int, len(c.tensors))
	for i, t := range c.tensors {
		c.index[t.name] = i
	}
	if step < 0 {
		if s, err := strconv.Atoi(cmp.Or(c.meta["lcttop.step"], c.meta["step"])); err == nil && s >= 0 {
			c.step = s
		} else if s, ok := stepOf(filepath.Base(path)); ok {
			c.step = s
		}
	}
	return c, nil
}

// readFile maps a file of the checkpoint (or the files of a checkpoint
// folder) and lists its tensors.
func (c *checkpoint) readFile(f string) ([]*tensor, map[string]string, *session.Plan, error) {
	if fi, err := os.Stat(f); err == nil && fi.IsDir() {
		ts, meta, err := c.readTorch(f)
		return ts, meta, nil, err
	}
	m, err := mapFile(f)
	if err != nil {
		return nil, nil, nil, err
	}
	c.files = append(c.files, m)
	b := m.bytes()
	if torchfile.IsTorchSave(b) || torchfile.IsLegacyTorchSave(b) {
		ts, meta, err := c.readTorch(f)
		return ts, meta, nil, err
	}
	return readTensors(m)
}

// readTorch lists a torch.save file's or a checkpoint folder's tensors,
// each in the mapping of the file that holds it; a tensor in several runs
// (a view, or shards) is put together in memory.
func (c *checkpoint) readTorch(path string) ([]*tensor, map[string]string, error) {
	cp, err := torchfile.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	maps := map[string]*mapping{}
	for _, m := range c.files {
		maps[m.path] = m
	}
	mapped := func(file string) (*mapping, error) {
		if m, ok := maps[file]; ok {
			return m, nil
		}
		m, err := mapFile(file)
		if err != nil {
			return nil, err
		}
		maps[file] = m
		c.files = append(c.files, m)
		return m, nil
	}
	var out []*tensor
	for _, x := range cp.Tensors {
		size := torchfile.DTypeSize[x.DType]
		t := &tensor{name: x.Name, class: trainer.ClassifyTensor(x.Name, cp.Metadata), dtype: x.DType, bytes: x.Bytes(), src: &mapping{path: path}}
		if size > 0 {
			t.n = int(t.bytes / size)
		}
		for _, e := range x.Extents {
			m, err := mapped(e.File)
			if err != nil {
				return nil, nil, err
			}
			if e.Offset < 0 || e.Offset+e.Length > int64(len(m.bytes())) {
				return nil, nil, fmt.Errorf("%s: tensor %s: bytes %d..%d outside the file", e.File, x.Name, e.Offset, e.Offset+e.Length)
			}
			part := m.bytes()[e.Offset : e.Offset+e.Length]
			if len(x.Extents) == 1 {
				t.raw, t.src = part, m
				break
			}
			t.raw = append(t.raw, part...)
			m.release(part)
		}
		out = append(out, t)
	}
	return out, cp.Metadata, nil
}

// readTensors lists a mapped file's tensors: a safetensors file, or an .lct
// file (told by its magic).
func readTensors(m *mapping) ([]*tensor, map[string]string, *session.Plan, error) {
	b := m.bytes()
	if bytes.HasPrefix(b, []byte(lctfile.Magic)) {
		return readLCT(m)
	}
	st, err := safetensors.Parse(b)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", m.path, err)
	}
	var out []*tensor
	for _, ti := range st.Tensors {
		out = append(out, &tensor{
			name: ti.Name, class: trainer.ClassifyTensor(ti.Name, st.Metadata), dtype: ti.DType,
			n: int(ti.Elements()), bytes: ti.End - ti.Begin, src: m, raw: st.Bytes(ti),
		})
	}
	return out, st.Metadata, nil, nil
}

// readLCT lists an .lct file's tensors. The archive is checked whole (the
// container's CRCs); the codec's parser copies each LCT tensor, so those
// copies are dropped at once and each tensor is parsed again from the
// mapping when its values are needed.
func readLCT(m *mapping) ([]*tensor, map[string]string, *session.Plan, error) {
	a, err := lctfile.ReadArchive(m.bytes())
	m.release(m.bytes())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", m.path, err)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimRight(a.Header, " "), &header); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: safetensors header: %v", m.path, err)
	}
	var meta map[string]string
	if raw, ok := header["__metadata__"]; ok {
		_ = json.Unmarshal(raw, &meta) // ReadArchive's layout check accepted the header
	}
	// Which codec each class was stored with, most often; tensors stored
	// otherwise keep theirs as overrides.
	counts := map[session.TensorClass]map[session.ClassCodec]int{}
	storedAs := map[string]session.ClassCodec{}
	var out []*tensor
	for i := range a.Segments {
		s := &a.Segments[i]
		if s.Kind != lctfile.KindTensor {
			continue
		}
		var entry struct {
			DType string  `json:"dtype"`
			Shape []int64 `json:"shape"`
		}
		if err := json.Unmarshal(header[s.Name], &entry); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: tensor %s: header entry: %v", m.path, s.Name, err)
		}
		size := safetensors.DTypeSize[entry.DType]
		if size == 0 {
			return nil, nil, nil, fmt.Errorf("%s: tensor %s: unknown dtype %q", m.path, s.Name, entry.DType)
		}
		t := &tensor{
			name: s.Name, class: trainer.ClassifyTensor(s.Name, meta), dtype: entry.DType,
			n: int(s.OriginalLen / size), bytes: s.OriginalLen, src: m,
		}
		if s.Encoding == lctfile.EncodingLCT {
			t.lct = s.Payload
			t.stored = storedStats(t, s.Tensor, len(s.Payload))
			cc := session.ClassCodec{Preset: s.Tensor.Layout.Preset, Dist: s.Tensor.Codebook.Dist}
			storedAs[t.name] = cc
			if counts[t.class] == nil {
				counts[t.class] = map[session.ClassCodec]int{}
			}
			counts[t.class][cc]++
		} else {
			t.raw = s.Payload
		}
		out = append(out, t)
	}
	plan := &session.Plan{Classes: map[session.TensorClass]session.ClassCodec{}, Tensors: map[string]session.ClassCodec{}}
	for c, byCodec := range counts {
		best, bestN := session.ClassCodec{}, -1
		for cc, k := range byCodec {
			if k > bestN || k == bestN && cc.String() < best.String() {
				best, bestN = cc, k
			}
		}
		plan.Classes[c] = best
	}
	for _, t := range out {
		if cc, ok := storedAs[t.name]; ok && cc != plan.Classes[t.class] {
			plan.Tensors[t.name] = cc
		}
	}
	return out, meta, plan, nil
}

// storedStats are an LCT segment's figures from its header alone: its
// codec, codebook and stored bytes; the histogram and rates wait for the
// exact pass to decode it.
func storedStats(t *tensor, ct *codec.Tensor, stored int) session.TensorStats {
	n := float64(t.n)
	return session.TensorStats{
		Name: t.name, Class: t.class, Elements: t.n, DType: t.dtype, Estimated: true,
		Preset: ct.Layout.Preset, Distribution: ct.Codebook.Dist,
		StoredBytes: stored, Ratio: 2 * n / float64(stored), AllocatedBits: 8 * float64(stored-t.n) / n,
		CodeLengths: ct.Codebook.Lengths, EscapeLength: ct.Codebook.EscLen,
	}
}

// reasonOf is err without the path f it starts with.
func reasonOf(err error, f string) string {
	return strings.TrimPrefix(err.Error(), f+": ")
}

// pathReason drops the operation and path that *fs.PathError repeats.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
