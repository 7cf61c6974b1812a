package main

import (
	"fmt"

	"lcttop/codec"
	"lcttop/codec/lctfile"
	"lcttop/codec/safetensors"
)

// report is what inspect prints: per tensor and in total, for a
// safetensors file encoded in memory or an .lct file as stored.
type report struct {
	File   string `json:"file"`
	Format string `json:"format"` // "safetensors" or "lct"
	// FormatVersion is the .lct file's version, or for a safetensors file
	// the one its tensors were encoded in (docs/format.md §3).
	FormatVersion int            `json:"format_version"`
	Preset        string         `json:"preset"`
	Distribution  string         `json:"distribution"`
	Tensors       []tensorReport `json:"tensors"`
	Gaps          []gapReport    `json:"gaps"`
	Total         totalReport    `json:"total"`
}

// tensorReport describes one tensor. The codec figures are per exponent
// and exist for BF16 tensors only (null otherwise); a BF16 tensor stored
// raw spends 8 bits on each exponent.
type tensorReport struct {
	Name          string  `json:"name"`
	DType         string  `json:"dtype"`
	Shape         []int64 `json:"shape"`
	Elements      int64   `json:"elements"`
	Encoding      string  `json:"encoding"` // "lct" or "raw"
	OriginalBytes int64   `json:"original_bytes"`
	StoredBytes   int64   `json:"stored_bytes"` // the segment's payload
	Ratio         float64 `json:"ratio"`

	Entropy         *float64 `json:"entropy"`        // bits per exponent, full histogram
	ExpectedBits    *float64 `json:"expected_bits"`  // the codebook's, under the full histogram
	AllocatedBits   *float64 `json:"allocated_bits"` // 8*(stored-N)/N
	UsedBits        *float64 `json:"used_bits"`      // code bits written plus 8 per spilled exponent, per N
	EscapeRate      *float64 `json:"escape_rate"`
	OverflowRate    *float64 `json:"overflow_rate"`     // spilled exponents / N
	SpillStreamRate *float64 `json:"spill_stream_rate"` // spilling streams / streams

	*LCTLayout
}

// LCTLayout is how an LCT tensor was coded (exported so that tests can
// decode the JSON into a report).
type LCTLayout struct {
	Preset       string `json:"preset"`
	Distribution string `json:"distribution"`
	Shift        int    `json:"shift"`
	EscLen       int    `json:"esc_len"`
	BlockSize    int    `json:"block_size"`
	StreamBytes  int    `json:"stream_bytes"` // C; with capacities per block, the largest
	// BlockStreamBytes is each block's C where AUTO chose one per block.
	BlockStreamBytes []uint16 `json:"block_stream_bytes,omitempty"`
	Escaped          int      `json:"escaped"`
	Spilled          int      `json:"spilled"`
	SpillingStreams  int      `json:"spilling_streams"`
	TotalStreams     int      `json:"total_streams"`
}

type gapReport struct {
	Offset        int64 `json:"offset"`
	OriginalBytes int64 `json:"original_bytes"`
	StoredBytes   int64 `json:"stored_bytes"`
}

// totalReport sums the file. original_bytes is the safetensors file's
// size and stored_bytes the .lct file's: container_bytes plus every
// tensor's and gap's stored bytes. The bf16_ and per-exponent figures
// cover the BF16 tensors, weighted by elements.
type totalReport struct {
	Ratio          float64 `json:"ratio"`
	OriginalBytes  int64   `json:"original_bytes"`
	StoredBytes    int64   `json:"stored_bytes"`
	HeaderBytes    int64   `json:"header_bytes"`    // the safetensors JSON header
	ContainerBytes int64   `json:"container_bytes"` // .lct fields, header included
	Tensors        int     `json:"tensors"`
	LCTTensors     int     `json:"lct_tensors"`
	RawTensors     int     `json:"raw_tensors"`

	BF16Elements      int64   `json:"bf16_elements"`
	BF16OriginalBytes int64   `json:"bf16_original_bytes"`
	BF16StoredBytes   int64   `json:"bf16_stored_bytes"`
	BF16Ratio         float64 `json:"bf16_ratio"`
	Entropy           float64 `json:"entropy"`
	EntropyBound      float64 `json:"entropy_bound"` // 16/(8+entropy): no exponent code beats it
	ExpectedBits      float64 `json:"expected_bits"`
	AllocatedBits     float64 `json:"allocated_bits"`
	UsedBits          float64 `json:"used_bits"`
	EscapeRate        float64 `json:"escape_rate"`
	OverflowRate      float64 `json:"overflow_rate"`
	SpillStreamRate   float64 `json:"spill_stream_rate"`
}

// buildReport describes archive a of file st. LCT segments must carry
// their Stats (from encoding, or ComputeStats after parsing).
func buildReport(path, format string, st *safetensors.File, a *lctfile.Archive) report {
	infos := make(map[string]safetensors.TensorInfo, len(st.Tensors))
	for _, t := range st.Tensors {
		infos[t.Name] = t
	}
	r := report{File: path, Format: format, FormatVersion: int(a.Version), Tensors: []tensorReport{}, Gaps: []gapReport{}}
	tot := &r.Total
	var entropyBits, expectedBits, usedBits float64
	var escaped, spilled, spilling, streams int64
	presets, dists := map[string]bool{}, map[string]bool{}
	for i := range a.Segments {
		s := &a.Segments[i]
		stored := int64(len(s.Payload))
		if s.Kind == lctfile.KindGap {
			r.Gaps = append(r.Gaps, gapReport{Offset: s.Offset, OriginalBytes: s.OriginalLen, StoredBytes: stored})
			continue
		}
		info := infos[s.Name]
		tr := tensorReport{
			Name: s.Name, DType: info.DType, Shape: info.Shape, Elements: info.Elements(),
			Encoding: "raw", OriginalBytes: s.OriginalLen, StoredBytes: stored, Ratio: ratio(s.OriginalLen, stored),
		}
		if tr.Shape == nil {
			tr.Shape = []int64{}
		}
		tot.Tensors++
		switch {
		case s.Encoding == lctfile.EncodingLCT:
			t := s.Tensor
			stats := &t.Stats
			tr.Encoding = "lct"
			tr.Entropy, tr.ExpectedBits = num(stats.Entropy), num(stats.ExpectedBits)
			tr.AllocatedBits, tr.UsedBits = num(stats.AllocatedBits), num(stats.UsedBits)
			tr.EscapeRate, tr.OverflowRate, tr.SpillStreamRate = num(stats.EscapeRate), num(stats.OverflowRate), num(stats.SpillStreamRate)
			tr.LCTLayout = &LCTLayout{
				Preset: t.Layout.Preset.String(), Distribution: t.Codebook.Dist.String(),
				Shift: int(t.Codebook.Shift), EscLen: int(t.Codebook.EscLen),
				BlockSize: t.Layout.BlockSize, StreamBytes: t.Layout.StreamBytes, BlockStreamBytes: t.BlockBytes,
				Escaped: stats.Escaped, Spilled: stats.Spilled, SpillingStreams: stats.SpillingStreams, TotalStreams: stats.TotalStreams,
			}
			presets[tr.Preset], dists[tr.Distribution] = true, true
			tot.LCTTensors++
			escaped += int64(stats.Escaped)
			spilled += int64(stats.Spilled)
			spilling += int64(stats.SpillingStreams)
			streams += int64(stats.TotalStreams)
		case info.DType == "BF16":
			// Stored raw: the exponent keeps its 8 bits.
			h := codec.FullHistogram(safetensors.BF16Values(s.Payload))
			eight, zero := 8.0, 0.0
			tr.Entropy, tr.ExpectedBits = num(h.Entropy()), &eight
			tr.AllocatedBits, tr.UsedBits = &eight, &eight
			tr.EscapeRate, tr.OverflowRate, tr.SpillStreamRate = &zero, &zero, &zero
			tot.RawTensors++
		default:
			tot.RawTensors++
		}
		if info.DType == "BF16" {
			n := float64(tr.Elements)
			tot.BF16Elements += tr.Elements
			tot.BF16OriginalBytes += s.OriginalLen
			tot.BF16StoredBytes += stored
			entropyBits += *tr.Entropy * n
			expectedBits += *tr.ExpectedBits * n
			usedBits += *tr.UsedBits * n
		}
		r.Tensors = append(r.Tensors, tr)
	}
	tot.OriginalBytes = a.OriginalSize()
	tot.StoredBytes = a.Size()
	tot.HeaderBytes = int64(len(a.Header))
	tot.ContainerBytes = int64(a.ContainerBytes())
	tot.Ratio = ratio(tot.OriginalBytes, tot.StoredBytes)
	tot.BF16Ratio = ratio(tot.BF16OriginalBytes, tot.BF16StoredBytes)
	if n := float64(tot.BF16Elements); n > 0 {
		tot.Entropy = entropyBits / n
		tot.EntropyBound = 16 / (8 + tot.Entropy)
		tot.ExpectedBits = expectedBits / n
		tot.AllocatedBits = 8 * float64(tot.BF16StoredBytes-tot.BF16Elements) / n
		tot.UsedBits = usedBits / n
		tot.EscapeRate = float64(escaped) / n
		tot.OverflowRate = float64(spilled) / n
	}
	if streams > 0 {
		tot.SpillStreamRate = float64(spilling) / float64(streams)
	}
	r.Preset, r.Distribution = label(presets), label(dists)
	return r
}

// ratio is original/stored; an empty tensor neither gains nor loses.
func ratio(original, stored int64) float64 {
	if stored == 0 {
		return 1
	}
	return float64(original) / float64(stored)
}

func num(v float64) *float64 { return &v }

// label names the one preset (or distribution) the LCT tensors share.
func label(set map[string]bool) string {
	switch len(set) {
	case 0:
		return "none"
	case 1:
		for k := range set {
			return k
		}
	}
	return fmt.Sprintf("mixed (%d)", len(set))
}
