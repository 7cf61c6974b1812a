// Package torchfile lists the tensors of PyTorch's own checkpoint formats
// without running anything from them: torch.save files (a zip of a pickle
// and raw storages) and torch.distributed.checkpoint folders (a .metadata
// pickle and .distcp files of torch.save items, one logical tensor from its
// shards). The pickles are read with github.com/nlpodyssey/gopickle under
// an allow list: tensors, storages and plain containers (and, in a
// checkpoint folder's metadata, its dataclasses); a pickle that asks for
// anything else is refused with its name.
//
// Nested state dicts are flattened to dotted names (model.blocks.0.attn.weight),
// and an optimizer's state (optimizer.state.3.exp_avg_sq) is named after
// the parameter it belongs to through param_groups, so that the tensors
// classify as weight, adam_m, adam_v and momentum. Each tensor says where
// its bytes lie in the files, in row-major order, for a caller to map.
package torchfile

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"sort"
	"strings"
)

// Extent is a run of a tensor's bytes in a file.
type Extent struct {
	File           string
	Offset, Length int64
}

// Tensor is one tensor of a checkpoint.
type Tensor struct {
	Name  string
	DType string // as safetensors names it: BF16, F32, I64, ...
	Shape []int64
	// Extents are the tensor's bytes, row-major, in order (one for a
	// contiguous tensor).
	Extents []Extent
}

// Bytes is the tensor's size.
func (t *Tensor) Bytes() int64 {
	var n int64
	for _, e := range t.Extents {
		n += e.Length
	}
	return n
}

// Checkpoint is what a torch.save file or a checkpoint folder holds.
type Checkpoint struct {
	Tensors  []Tensor // in the order the pickle names them
	Metadata map[string]string
	Files    []string
}

// DTypeSize is the bytes of one element of each dtype.
var DTypeSize = map[string]int64{"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}

// zipMagic opens a zip archive, and so every torch.save file since 1.6.
var zipMagic = []byte("PK\x03\x04")

// IsTorchSave reports whether a file's first bytes are a zip archive's.
func IsTorchSave(head []byte) bool { return bytes.HasPrefix(head, zipMagic) }

// legacyMagic is the first opcodes of a torch.save file from before 1.6
// (a pickled magic number, not a zip).
var legacyMagic = []byte{0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8}

// IsLegacyTorchSave reports a torch.save file of the format before 1.6.
func IsLegacyTorchSave(head []byte) bool { return bytes.HasPrefix(head, legacyMagic) }

// Open reads a torch.save file (.pt, .pth, .bin, .ckpt: any name) or, for
// a folder, a torch.distributed.checkpoint folder.
func Open(p string) (*Checkpoint, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return OpenFolder(p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ts, meta, err := readSave(f, fi.Size(), p, 0, "")
	if err != nil {
		return nil, err
	}
	return &Checkpoint{Tensors: ts, Metadata: meta, Files: []string{p}}, nil
}

// readSave reads a torch.save archive held in r (size bytes, at base in
// the file named file) and flattens what its pickle holds under prefix.
func readSave(r io.ReaderAt, size int64, file string, base int64, prefix string) ([]Tensor, map[string]string, error) {
	var head [16]byte
	if n, _ := r.ReadAt(head[:], 0); IsLegacyTorchSave(head[:n]) {
		return nil, nil, errors.New("a torch.save file of the format before PyTorch 1.6: save it again with torch.save (its zip format)")
	}
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, nil, fmt.Errorf("not a torch.save file: %v", err)
	}
	records := map[string]*zip.File{}
	var pkl *zip.File
	for _, f := range z.File {
		records[f.Name] = f
		switch {
		case path.Base(f.Name) == "constants.pkl":
			return nil, nil, errors.New("a TorchScript archive (torch.jit.save), not a torch.save checkpoint")
		case path.Base(f.Name) == "data.pkl" && (pkl == nil || len(f.Name) < len(pkl.Name)):
			pkl = f
		}
	}
	if pkl == nil {
		return nil, nil, errors.New("not a torch.save file: the zip holds no data.pkl")
	}
	dir := strings.TrimSuffix(pkl.Name, "data.pkl")
	if bo, ok := records[dir+"byteorder"]; ok {
		if b, err := readRecord(bo, 16); err == nil && strings.TrimSpace(string(b)) != "little" {
			return nil, nil, fmt.Errorf("storages saved %s-endian: only little-endian files are read", strings.TrimSpace(string(b)))
		}
	}
	rc, err := pkl.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %v", pkl.Name, err)
	}
	obj, err := unpickle(rc, false, storagePersist)
	rc.Close()
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%s: %v", pkl.Name, err)
	}
	fl := &flattener{meta: map[string]string{}}
	fl.walk(prefix, obj)
	fl.nameOptimizerStates()
	var out []Tensor
	limits := recordLimits(z, size)
	for _, ft := range fl.tensors {
		t, err := locate(ft, records, limits, dir, file, base)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %s: %v", ft.name, err)
		}
		out = append(out, t)
	}
	return out, fl.meta, nil
}

// recordLimits bounds where each record's data may end: before the next
// record's local header (at least 30 bytes and its name) and before the
// central directory (at least 46 bytes an entry, 22 for its end).
func recordLimits(z *zip.Reader, size int64) map[*zip.File]int64 {
	type placed struct {
		f     *zip.File
		start int64
	}
	dir := int64(22)
	var ps []placed
	for _, f := range z.File {
		dir += 46 + int64(len(f.Name)+len(f.Extra)+len(f.Comment))
		if at, err := f.DataOffset(); err == nil {
			ps = append(ps, placed{f, at})
		}
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a].start < ps[b].start })
	limits := map[*zip.File]int64{}
	for i, p := range ps {
		// A local header's extra length is untrusted: a record's data may
		// start past the file's end, and so may the next record's.
		end := size - dir
		if i+1 < len(ps) {
			end = min(end, ps[i+1].start-30-int64(len(ps[i+1].f.Name)))
		}
		limits[p.f] = end
	}
	return limits
}

// readRecord reads a small record of the archive whole.
func readRecord(f *zip.File, limit int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit))
}

// locate finds a tensor's bytes: its storage's record, stored (never
// compressed) in the archive, at the tensor's offset and strides.
func locate(ft flatTensor, records map[string]*zip.File, limits map[*zip.File]int64, dir, file string, base int64) (Tensor, error) {
	ref := ft.ref
	t := Tensor{Name: ft.name, DType: ref.storage.dtype, Shape: ref.shape}
	size := DTypeSize[t.DType]
	rec, ok := records[dir+"data/"+ref.storage.key]
	if !ok {
		return t, fmt.Errorf("its storage %q is not in the archive", ref.storage.key)
	}
	if rec.Method != zip.Store {
		return t, fmt.Errorf("its storage %q is compressed in the zip (method %d): torch.save stores them as they are", ref.storage.key, rec.Method)
	}
	if size <= 0 || ref.storage.numel > math.MaxInt64/size {
		return t, fmt.Errorf("its storage %q claims %d elements", ref.storage.key, ref.storage.numel)
	}
	if int64(rec.UncompressedSize64) < ref.storage.numel*size {
		return t, fmt.Errorf("its storage %q holds %d bytes, fewer than the %d of %d elements", ref.storage.key, rec.UncompressedSize64, ref.storage.numel*size, ref.storage.numel)
	}
	start, err := rec.DataOffset()
	if err != nil {
		return t, err
	}
	// The zip's sizes are untrusted: the bytes read must lie in the archive.
	if need, end := ref.storage.numel*size, limits[rec]; start < 0 || start > end || need > end-start {
		return t, fmt.Errorf("its storage record %q (%d bytes at %d) runs past the end of its zip record (byte %d)", ref.storage.key, need, start, end)
	}
	runs, err := elementRuns(ref.offset, ref.shape, ref.stride, ref.storage.numel)
	if err != nil {
		return t, err
	}
	for _, r := range runs {
		t.Extents = append(t.Extents, Extent{File: file, Offset: base + start + r[0]*size, Length: r[1] * size})
	}
	return t, nil
}

// elementRuns lists, in row-major order, the runs [first, count] of storage
// elements a view of offset, shape and stride reads, checked against a
// storage of numel elements.
func elementRuns(offset int64, shape, stride []int64, numel int64) ([][2]int64, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 || d > 0 && n > math.MaxInt64/d {
			return nil, fmt.Errorf("shape %v", shape)
		}
		n *= d
	}
	if n == 0 {
		return nil, nil
	}
	if n > numel {
		// Only a view that repeats elements (a stride of 0) holds more
		// than its storage; it is no checkpoint's tensor.
		return nil, fmt.Errorf("a view of %d elements of a %d-element storage (stride %v)", n, numel, stride)
	}
	// The furthest element the view reads must lie in the storage.
	last := offset
	for i, d := range shape {
		if stride[i] < 0 || stride[i] > numel {
			return nil, fmt.Errorf("stride %v for a %d-element storage", stride, numel)
		}
		last += (d - 1) * stride[i]
		if last >= numel {
			break
		}
	}
	if last >= numel || last < 0 {
		return nil, fmt.Errorf("a view of shape %v, stride %v at %d reaches element %d of a %d-element storage", shape, stride, offset, last, numel)
	}
	// Trailing dimensions laid out contiguously form one inner run.
	inner, k := int64(1), len(shape)
	for k > 0 && (shape[k-1] == 1 || stride[k-1] == inner) {
		inner *= shape[k-1]
		k--
	}
	var runs [][2]int64
	idx := make([]int64, k)
	for {
		at := offset
		for i := range k {
			at += idx[i] * stride[i]
		}
		if m := len(runs); m > 0 && runs[m-1][0]+runs[m-1][1] == at {
			runs[m-1][1] += inner
		} else {
			runs = append(runs, [2]int64{at, inner})
		}
		i := k - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return runs, nil
		}
	}
}
