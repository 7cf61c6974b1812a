package torchfile

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// MetadataFile names a torch.distributed.checkpoint folder's index.
const MetadataFile = ".metadata"

// IsFolder reports whether dir is a torch.distributed.checkpoint folder.
func IsFolder(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, MetadataFile))
	return err == nil && fi.Mode().IsRegular()
}

// chunk is one shard of a logical tensor: where it sits in the tensor and
// where its torch.save item lies.
type chunk struct {
	offsets, sizes []int64
	file           string
	at, length     int64
}

// OpenFolder reads a torch.distributed.checkpoint folder: each logical
// tensor of its .metadata from its shards in the .distcp files. Items that
// are not tensors (pickled objects) are left out.
func OpenFolder(dir string) (*Checkpoint, error) {
	mpath := filepath.Join(dir, MetadataFile)
	f, err := os.Open(mpath)
	if err != nil {
		return nil, fmt.Errorf("not a torch.distributed.checkpoint folder: %w", err)
	}
	obj, err := unpickle(f, true, nil)
	f.Close()
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			return nil, fmt.Errorf("%s: %w", MetadataFile, err)
		}
		return nil, fmt.Errorf("%s: %v", MetadataFile, err)
	}
	md, ok := obj.(*record)
	if !ok || md.class != "Metadata" {
		return nil, fmt.Errorf("%s: holds no checkpoint Metadata", MetadataFile)
	}
	where := map[string][]chunk{} // by fqn: the items' places, each at its offsets
	storage, _ := entries(md.fields["storage_data"])
	for _, e := range storage {
		idx, ok1 := e[0].(*record)
		info, ok2 := e[1].(*record)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: a storage entry of %T → %T", MetadataFile, e[0], e[1])
		}
		fqn, _ := idx.fields["fqn"].(string)
		offsets, _ := intTuple(idx.fields["offset"])
		rel, _ := info.fields["relative_path"].(string)
		at, ok3 := asInt(info.fields["offset"])
		length, ok4 := asInt(info.fields["length"])
		if fqn == "" || rel == "" || !ok3 || !ok4 || rel != filepath.Base(rel) || strings.HasPrefix(rel, ".") {
			return nil, fmt.Errorf("%s: a storage entry for %q that names no file of the folder", MetadataFile, fqn)
		}
		where[fqn] = append(where[fqn], chunk{offsets: offsets, file: filepath.Join(dir, rel), at: at, length: length})
	}
	tensorsMD, _ := entries(md.fields["state_dict_metadata"])
	cp := &Checkpoint{Metadata: map[string]string{}}
	files := map[string]bool{}
	for _, e := range tensorsMD {
		fqn := keyString(e[0])
		tm, ok := e[1].(*record)
		if !ok || tm.class != "TensorStorageMetadata" {
			continue // bytes: a pickled object, not a tensor
		}
		t, err := logicalTensor(fqn, tm, where[fqn])
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %v", fqn, err)
		}
		for _, x := range t.Extents {
			files[x.File] = true
		}
		cp.Tensors = append(cp.Tensors, t)
	}
	if len(cp.Tensors) == 0 {
		return nil, fmt.Errorf("%s: names no tensor", MetadataFile)
	}
	cp.Files = append(cp.Files, mpath)
	for f := range files {
		cp.Files = append(cp.Files, f)
	}
	sort.Strings(cp.Files[1:])
	return cp, nil
}

// logicalTensor puts a tensor together from its chunks: each chunk's item
// is read for where its bytes lie, and the tensor's rows taken, in order,
// from the chunks that hold them.
func logicalTensor(fqn string, tm *record, places []chunk) (Tensor, error) {
	props, _ := tm.fields["properties"].(*record)
	var dtype string
	if props != nil {
		if d, ok := props.fields["dtype"].(*dtypeObj); ok {
			dtype = d.dtype
		}
	}
	if dtype == "" {
		return Tensor{}, errors.New("no dtype this reader knows in its properties")
	}
	shape, ok := intTuple(tm.fields["size"])
	if !ok {
		return Tensor{}, errors.New("no size")
	}
	t := Tensor{Name: fqn, DType: dtype, Shape: shape}
	chunkList, _ := items(tm.fields["chunks"])
	var chunks []chunk
	for _, c := range chunkList {
		cr, ok := c.(*record)
		if !ok {
			return t, errors.New("a chunk that is not ChunkStorageMetadata")
		}
		offsets, ok1 := intTuple(cr.fields["offsets"])
		sizes, ok2 := intTuple(cr.fields["sizes"])
		if !ok1 || !ok2 || len(offsets) != len(shape) || len(sizes) != len(shape) {
			return t, errors.New("a chunk of another rank than the tensor")
		}
		i := slices.IndexFunc(places, func(p chunk) bool { return slices.Equal(p.offsets, offsets) || len(p.offsets) == 0 && len(places) == 1 })
		if i < 0 {
			return t, fmt.Errorf("the chunk at %v has no storage entry", offsets)
		}
		p := places[i]
		p.offsets, p.sizes = offsets, sizes
		chunks = append(chunks, p)
	}
	size := DTypeSize[dtype]
	// Each chunk's own bytes, contiguous in its item.
	own := make([][]Extent, len(chunks))
	for k, c := range chunks {
		f, err := os.Open(c.file)
		if err != nil {
			return t, err
		}
		sec := sectionAt{f: f, base: c.at}
		ts, _, err := readSave(sec, c.length, c.file, c.at, "")
		f.Close()
		if err != nil {
			return t, fmt.Errorf("its item in %s at %d: %v", filepath.Base(c.file), c.at, err)
		}
		if len(ts) != 1 || ts[0].DType != dtype || !slices.Equal(ts[0].Shape, c.sizes) {
			return t, fmt.Errorf("its item in %s at %d is not one %s tensor of shape %v", filepath.Base(c.file), c.at, dtype, c.sizes)
		}
		own[k] = ts[0].Extents
	}
	return t, assemble(&t, chunks, own, size)
}

// assemble lays the tensor's bytes out row by row (a row: the last
// dimension), each part from the chunk that covers it.
func assemble(t *Tensor, chunks []chunk, own [][]Extent, size int64) error {
	rank := len(t.Shape)
	var total int64 = 1
	for _, d := range t.Shape {
		if d < 0 || d > 0 && total > math.MaxInt64/d {
			return fmt.Errorf("shape %v", t.Shape)
		}
		total *= d
	}
	if total == 0 {
		return nil
	}
	if rank == 0 {
		if len(chunks) != 1 {
			return errors.New("a scalar in several chunks")
		}
		t.Extents = own[0]
		return nil
	}
	var covered int64
	for _, c := range chunks {
		n := int64(1)
		for i, s := range c.sizes {
			if c.offsets[i] < 0 || s < 0 || c.offsets[i] > t.Shape[i]-s {
				return fmt.Errorf("a chunk at %v of size %v outside the tensor's %v", c.offsets, c.sizes, t.Shape)
			}
			n *= s // within the tensor's shape, so no overflow
		}
		covered += n
	}
	if covered != total {
		return fmt.Errorf("its chunks hold %d elements, the tensor %d", covered, total)
	}
	last := t.Shape[rank-1]
	idx := make([]int64, rank-1)
	for {
		// Row idx: the chunks covering it, by where they start in the row.
		var parts []int
		for k, c := range chunks {
			in := true
			for i := range rank - 1 {
				if idx[i] < c.offsets[i] || idx[i] >= c.offsets[i]+c.sizes[i] {
					in = false
					break
				}
			}
			if in {
				parts = append(parts, k)
			}
		}
		sort.Slice(parts, func(a, b int) bool { return chunks[parts[a]].offsets[rank-1] < chunks[parts[b]].offsets[rank-1] })
		var col int64
		for _, k := range parts {
			c := chunks[k]
			if c.offsets[rank-1] != col {
				return fmt.Errorf("row %v: its chunks leave a gap or overlap at column %d", idx, col)
			}
			// The chunk's local row: its index within the chunk, row-major.
			var local int64
			for i := range rank - 1 {
				local = local*c.sizes[i] + (idx[i] - c.offsets[i])
			}
			appendBytes(t, own[k], local*c.sizes[rank-1]*size, c.sizes[rank-1]*size)
			col += c.sizes[rank-1]
		}
		if col != last {
			return fmt.Errorf("row %v: its chunks cover %d of %d columns", idx, col, last)
		}
		i := rank - 2
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < t.Shape[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return nil
		}
	}
}

// appendBytes appends n bytes starting at byte from of a chunk's own
// extents, merging with the last extent where they continue it.
func appendBytes(t *Tensor, own []Extent, from, n int64) {
	for _, e := range own {
		if n == 0 {
			return
		}
		if from >= e.Length {
			from -= e.Length
			continue
		}
		take := min(e.Length-from, n)
		x := Extent{File: e.File, Offset: e.Offset + from, Length: take}
		if m := len(t.Extents); m > 0 && t.Extents[m-1].File == x.File && t.Extents[m-1].Offset+t.Extents[m-1].Length == x.Offset {
			t.Extents[m-1].Length += take
		} else {
			t.Extents = append(t.Extents, x)
		}
		n -= take
		from = 0
	}
}

// sectionAt reads a file from base on, as a torch.save item's zip.
type sectionAt struct {
	f    *os.File
	base int64
}

func (s sectionAt) ReadAt(p []byte, off int64) (int, error) { return s.f.ReadAt(p, s.base+off) }
