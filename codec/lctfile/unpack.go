package lctfile

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"lcttop/codec/safetensors"
)

// Unpack restores the safetensors file an .lct file holds, byte for byte.
// It checks the header CRC, decodes every segment and checks its CRC-32C,
// then the whole-file CRC, and finally that the result parses as safetensors
// with the tensors where the segments say. Errors about one tensor start
// with its name.
func Unpack(lct []byte, backend Backend) ([]byte, error) {
	a, fileErr, err := parseArchive(lct)
	if err != nil {
		return nil, err
	}
	out, err := a.restore(backend)
	if err != nil {
		return nil, err
	}
	if fileErr != nil {
		return nil, fileErr
	}
	if err := a.checkLayout(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Restore is Unpack for an archive ReadArchive has already checked: it
// decodes every segment, checks every segment CRC and the layout, and
// returns the original file.
func (a *Archive) Restore(backend Backend) ([]byte, error) {
	out, err := a.restore(backend)
	if err != nil {
		return nil, err
	}
	if err := a.checkLayout(out); err != nil {
		return nil, err
	}
	return out, nil
}

// restore decodes every segment into the original file's bytes.
func (a *Archive) restore(backend Backend) ([]byte, error) {
	out := make([]byte, a.OriginalSize())
	binary.LittleEndian.PutUint64(out, uint64(len(a.Header)))
	copy(out[8:], a.Header)
	data := out[8+len(a.Header):]
	var lct, all []int
	for i := range a.Segments {
		all = append(all, i)
		if a.Segments[i].Encoding == EncodingLCT {
			lct = append(lct, i)
		}
	}
	for i := range a.Segments {
		s := &a.Segments[i]
		if s.Encoding == EncodingRaw {
			copy(data[s.Offset:], s.Payload)
		}
	}
	workers := workerCount(len(lct))
	codecs := backends(backend, workers)
	scratch := make([][]uint16, workers)
	size := func(i int) int64 { return a.Segments[i].OriginalLen }
	err := runJobs(lct, size, workers, func(w, i int) error {
		s := &a.Segments[i]
		t := s.Tensor
		if cap(scratch[w]) < t.N {
			scratch[w] = make([]uint16, t.N)
		}
		values := scratch[w][:t.N]
		if err := codecs[w].Decode(t, values); err != nil {
			return segmentErr(i, s, fmt.Errorf("%w: decoding LCT tensor: %v", ErrCorrupt, err))
		}
		dst := data[s.Offset : s.Offset+s.OriginalLen]
		for k, v := range values {
			binary.LittleEndian.PutUint16(dst[2*k:], v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = runJobs(all, size, workerCount(len(all)), func(_, i int) error {
		s := &a.Segments[i]
		if got := Checksum(data[s.Offset : s.Offset+s.OriginalLen]); got != s.CRC {
			return segmentErr(i, s, fmt.Errorf("%w: restored bytes have CRC-32C 0x%08x, the file says 0x%08x", ErrChecksum, got, s.CRC))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkLayout confirms that the restored bytes are a safetensors file whose
// tensors are the archive's tensor segments, so that an archive put together
// by hand cannot restore to something else.
func (a *Archive) checkLayout(out []byte) error {
	st, err := safetensors.Parse(out)
	if err != nil {
		return fmt.Errorf("%w: the restored file is not valid safetensors: %v", ErrCorrupt, err)
	}
	header := make(map[string]safetensors.TensorInfo, len(st.Tensors))
	for _, t := range st.Tensors {
		header[t.Name] = t
	}
	for i := range a.Segments {
		if err := checkAgainstHeader(i, &a.Segments[i], header); err != nil {
			return err
		}
	}
	if len(header) > 0 {
		name := slices.Sorted(maps.Keys(header))[0]
		return fmt.Errorf("%s: %w: the header names it, the archive holds no segment for it", name, ErrCorrupt)
	}
	return nil
}
