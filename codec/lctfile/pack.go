package lctfile

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"lcttop/codec"
	"lcttop/codec/safetensors"
)

// Options choose how Pack encodes BF16 tensors.
type Options struct {
	Preset  codec.Preset
	Dist    codec.Distribution
	Backend Backend // nil: the CPU reference codec
	// Verify decodes each LCT tensor right after encoding it and compares
	// it with the original values, so that a codec fault is caught while
	// the original file is still at hand.
	Verify bool
	// PerTensor, when set, chooses a BF16 tensor's preset and distribution
	// from its name and the file's metadata (a codec plan); Preset and Dist
	// are the choice where it says ok is false.
	PerTensor func(name string, metadata map[string]string) (p codec.Preset, d codec.Distribution, ok bool)
	// Workers is how many goroutines a streaming pack or unpack codes on
	// (0: one per core).
	Workers int
	// Progress, when set, is called as a streaming pack or unpack goes, from
	// one goroutine.
	Progress func(Progress)
	// Version is the format version pack writes: 0 (the current, Version)
	// or 3, or 2 for a reader of version 2 only (the CUDA kernels code
	// version 2).
	Version int
}

// version is the format version opt asks pack for, checked.
func (opt Options) version() (int, error) {
	switch opt.Version {
	case 0:
		return Version, nil
	case codec.FormatVersion2, codec.FormatVersion3:
		return opt.Version, nil
	}
	return 0, fmt.Errorf("format version %d: pack writes %d or %d", opt.Version, codec.FormatVersion2, codec.FormatVersion3)
}

// Pack encodes a safetensors file into an .lct file.
func Pack(st *safetensors.File, opt Options) ([]byte, error) {
	a, err := NewArchive(st, opt)
	if err != nil {
		return nil, err
	}
	return a.MarshalBinary()
}

// NewArchive cuts st's data buffer into segments (each tensor's bytes and
// the gaps around them) and encodes the BF16 tensors. Each LCT segment keeps
// its encoded Tensor, Stats included, for reporting.
func NewArchive(st *safetensors.File, opt Options) (*Archive, error) {
	version, err := opt.version()
	if err != nil {
		return nil, err
	}
	opt.Version = version
	a := &Archive{Version: uint16(version), Header: st.Header}
	segs, err := cutSegments(st.Tensors, int64(len(st.Data)))
	if err != nil {
		return nil, err
	}
	for i := range segs {
		segs[i].Payload = st.Data[segs[i].Offset : segs[i].Offset+segs[i].OriginalLen]
	}
	a.Segments = segs

	var bf16, all []int
	for i := range a.Segments {
		all = append(all, i)
		if a.Segments[i].Encoding == EncodingLCT {
			bf16 = append(bf16, i)
		}
	}
	workers := workerCount(len(bf16))
	codecs := backends(opt.Backend, workers)
	size := func(i int) int64 { return a.Segments[i].OriginalLen }
	// CRCs are cheap; the encodes are where the cores go.
	if err := runJobs(all, size, workerCount(len(all)), func(_, i int) error {
		a.Segments[i].CRC = Checksum(a.Segments[i].Payload)
		return nil
	}); err != nil {
		return nil, err
	}
	err = runJobs(bf16, size, workers, func(w, i int) error {
		s := &a.Segments[i]
		o := opt
		if opt.PerTensor != nil {
			if p, d, ok := opt.PerTensor(s.Name, st.Metadata); ok {
				o.Preset, o.Dist = p, d
			}
		}
		if err := encodeSegment(s, codecs[w], o); err != nil {
			return segmentErr(i, s, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// cutSegments cuts a data buffer of dataLen bytes into segments (without
// payloads): each tensor's bytes and the gaps around them, in file order,
// with names breaking ties between empty tensors that start at the same
// byte, so that the archive is a pure function of the file. BF16 tensors
// are marked EncodingLCT, candidates that encoding decides on.
func cutSegments(infos []safetensors.TensorInfo, dataLen int64) ([]Segment, error) {
	tensors := slices.Clone(infos)
	slices.SortFunc(tensors, func(x, y safetensors.TensorInfo) int {
		return cmp.Or(cmp.Compare(x.Begin, y.Begin), cmp.Compare(x.End, y.End), cmp.Compare(x.Name, y.Name))
	})
	var segs []Segment
	var pos int64
	addGap := func(end int64) {
		if end > pos {
			segs = append(segs, Segment{Kind: KindGap, Encoding: EncodingRaw, Offset: pos, OriginalLen: end - pos})
		}
	}
	for _, t := range tensors {
		if t.Begin < pos || t.End < t.Begin || t.End > dataLen {
			return nil, fmt.Errorf("%s: %w: bytes %d..%d overlap another tensor or leave the %d-byte data buffer", t.Name, ErrCorrupt, t.Begin, t.End, dataLen)
		}
		if len(t.Name) > maxNameLen {
			return nil, fmt.Errorf("%.40s...: name is %d bytes, more than the %d an .lct segment holds", t.Name, len(t.Name), maxNameLen)
		}
		addGap(t.Begin)
		s := Segment{Kind: KindTensor, Encoding: EncodingRaw, Name: t.Name, Offset: t.Begin, OriginalLen: t.End - t.Begin}
		if t.DType == "BF16" {
			s.Encoding = EncodingLCT
		}
		segs = append(segs, s)
		pos = t.End
	}
	addGap(dataLen)
	if len(segs) > 1<<32-1 {
		return nil, fmt.Errorf("%d segments: more than a uint32 counts", len(segs))
	}
	return segs, nil
}

// encodeSegment stores a BF16 tensor as an LCT tensor, or leaves it raw when
// that would not be smaller (a few hundred values do not pay for the header
// and codebook) or when it is too long for the format.
func encodeSegment(s *Segment, b Backend, opt Options) error {
	raw := s.Payload
	s.Encoding = EncodingRaw
	if len(raw)%2 != 0 || len(raw)/2 > codec.MaxElements || len(raw) == 0 {
		return nil
	}
	values := safetensors.BF16Values(raw)
	cb, layout, err := codec.Plan(values, codec.Options{Preset: opt.Preset, Dist: opt.Dist, Version: opt.Version})
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	t := new(codec.Tensor)
	if err := b.Encode(t, values, cb, layout); err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	t.DropEqualCapacities()
	if t.StoredBytes() >= len(raw) {
		return nil
	}
	if opt.Verify {
		got := make([]uint16, t.N)
		if err := b.Decode(t, got); err != nil {
			return fmt.Errorf("verifying: decoding what was just encoded: %w", err)
		}
		if i := firstDifference(got, values); i >= 0 {
			return fmt.Errorf("verifying: value %d decodes to 0x%04x, was 0x%04x (codec fault; nothing written)", i, got[i], values[i])
		}
	}
	payload, err := t.MarshalBinary()
	if err != nil {
		return fmt.Errorf("serialising LCT tensor: %w", err)
	}
	s.Encoding, s.Payload, s.Tensor = EncodingLCT, payload, t
	return nil
}

// firstDifference is the first index where a and b differ, or -1; the
// common case, none, is one comparison of their bytes.
func firstDifference(a, b []uint16) int {
	if len(a) == len(b) && bytes.Equal(u16Bytes(a), u16Bytes(b)) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
