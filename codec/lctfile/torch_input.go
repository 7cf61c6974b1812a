package lctfile

import (
	"fmt"
	"io"
	"os"

	"github.com/edsrzf/mmap-go"

	"lcttop/codec/safetensors"
	"lcttop/codec/torchfile"
)

// part is a run of a virtual input's bytes: the safetensors header made for
// a PyTorch checkpoint, or a run of a tensor's bytes in a mapped file.
type part struct {
	b []byte
	m mmap.MMap // the mapping b lies in; nil for the header
}

// OpenTorchInput reads a torch.save file or a torch.distributed.checkpoint
// folder as the safetensors file of its tensors (flattened names, in the
// pickle's order, back to back), so that pack stores PyTorch's checkpoints
// as it stores safetensors: unpack then restores that safetensors file.
func OpenTorchInput(path string) (*Input, error) {
	cp, err := torchfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var tensors []safetensors.NewTensor
	for _, t := range cp.Tensors {
		tensors = append(tensors, safetensors.NewTensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Size: t.Bytes()})
	}
	meta := map[string]string{"format": "pt"}
	for k, v := range cp.Metadata {
		meta[k] = v
	}
	header, err := safetensors.EncodeHeader(tensors, meta)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	in := &Input{name: path, parts: []part{{b: header}}}
	maps := map[string]mmap.MMap{}
	fail := func(err error) (*Input, error) {
		in.Close()
		return nil, err
	}
	for _, t := range cp.Tensors {
		for _, e := range t.Extents {
			m, ok := maps[e.File]
			if !ok {
				f, err := os.Open(e.File)
				if err != nil {
					return fail(fmt.Errorf("%s: cannot read: %w", e.File, pathReason(err)))
				}
				m, err = mmap.Map(f, mmap.RDONLY, 0)
				f.Close()
				if err != nil {
					return fail(fmt.Errorf("%s: cannot map: %w", e.File, err))
				}
				maps[e.File] = m
				in.maps = append(in.maps, m)
			}
			if e.Offset < 0 || e.Offset+e.Length > int64(len(m)) {
				return fail(fmt.Errorf("%s: tensor %s: bytes %d..%d outside the file", e.File, t.Name, e.Offset, e.Offset+e.Length))
			}
			in.parts = append(in.parts, part{b: m[e.Offset : e.Offset+e.Length : e.Offset+e.Length], m: m})
		}
	}
	for _, p := range in.parts {
		in.size += int64(len(p.b))
	}
	return in, nil
}

// nextParts is Next for a virtual input: a part itself where the bytes lie
// in one, else a copy.
func (in *Input) nextParts(n int64) ([]byte, error) {
	if n > in.size-in.off {
		return nil, io.ErrUnexpectedEOF
	}
	in.off += n
	for len(in.parts) > 0 && in.partOff == int64(len(in.parts[0].b)) {
		in.parts, in.partOff = in.parts[1:], 0
	}
	if n == 0 {
		return nil, nil
	}
	if p := in.parts[0].b; int64(len(p))-in.partOff >= n {
		b := p[in.partOff : in.partOff+n : in.partOff+n]
		in.partOff += n
		return b, nil
	}
	out := make([]byte, 0, n)
	for int64(len(out)) < n {
		for in.partOff == int64(len(in.parts[0].b)) {
			in.parts, in.partOff = in.parts[1:], 0
		}
		p := in.parts[0].b[in.partOff:]
		take := min(int64(len(p)), n-int64(len(out)))
		out = append(out, p[:take]...)
		in.partOff += take
		in.releaseIn(p[:take])
	}
	return out, nil
}

// releaseIn releases b's pages in whichever mapping of a virtual input
// holds it.
func (in *Input) releaseIn(b []byte) {
	for _, m := range in.maps {
		if inside(m, b) {
			dontNeed(m, b)
			return
		}
	}
}

// ReadCheckpoint reads a whole input as ReadInput does, a PyTorch
// checkpoint (a torch.save file, a torch.distributed.checkpoint folder) as
// the safetensors file of its tensors that pack stores.
func ReadCheckpoint(path string) ([]byte, error) {
	in, err := openPackInput(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if in.parts == nil {
		return ReadInput(path)
	}
	b, err := in.Next(in.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return append([]byte(nil), b...), nil
}
