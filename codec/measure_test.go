package codec

import (
	"fmt"
	"io"
)

// Measurement helpers: how a tensor, or a set of them, compresses under one
// preset and distribution, against two bounds. The report and real-data
// tests print these; they are test code, outside the package's API.

// TensorReport is one tensor encoded under one preset and distribution.
type TensorReport struct {
	Name    string
	Options Options
	Stats   Stats  // of the encoding
	Layout  Layout // the layout chosen (AUTO's C)
	// EntropyBound is 16/(8 + H), H the entropy of the full exponent histogram:
	// no code of the exponents alone does better.
	EntropyBound float64
	// OptimalBits is the expected bits per exponent of the optimal code with
	// lengths ≤ 8 plus escape fitted to the full histogram, and OptimalBound
	// 16/(8 + OptimalBits): the best a version 2 codebook can do on this
	// tensor, with no stream, overflow or header overhead. In version 3,
	// where every value has one sign, both bounds count the sign bit it no
	// longer stores: 16/(7 + bits). (Version 3's split symbols, which code
	// fraction bits with the exponent, can pass these bounds.)
	OptimalBits, OptimalBound float64
}

// MeasureTensor encodes src with opt and reports the result beside the bounds.
func MeasureTensor(name string, src []uint16, opt Options) (TensorReport, error) {
	t, err := Encode(src, opt)
	if err != nil {
		return TensorReport{}, err
	}
	r := TensorReport{Name: name, Options: opt, Stats: t.Stats, Layout: t.Layout}
	full := &t.Stats.Histogram
	if len(src) > 0 {
		best := FitCodebookVersion(Empirical, full, FormatVersion2)
		r.OptimalBits = best.ExpectedBits(full)
		raw := 8.0
		if t.Layout.v3() && t.Layout.Sign != SignMixed {
			raw = 7
		}
		r.EntropyBound = 16 / (raw + t.Stats.Entropy)
		r.OptimalBound = 16 / (raw + r.OptimalBits)
	}
	return r, nil
}

// Summary totals reports of several tensors under one preset and distribution.
type Summary struct {
	Options          Options
	Tensors, N       int
	StoredBytes      int
	Ratio            float64 // 2·ΣN / Σ stored bytes
	EntropyBound     float64 // 16·ΣN / Σ N·(8 + H), each tensor's own entropy
	OptimalBound     float64 // 16·ΣN / Σ N·(8 + optimal bits), each tensor's own optimal code
	Spilled, Escaped int
	SpillingStreams  int
	TotalStreams     int
}

// Summarize totals reports (which should share one Options).
func Summarize(reports []TensorReport) Summary {
	var s Summary
	var entropyBits, optimalBits float64
	for i, r := range reports {
		if i == 0 {
			s.Options = r.Options
		}
		n := r.Stats.N
		s.Tensors++
		s.N += n
		s.StoredBytes += r.Stats.StoredBytes
		s.Spilled += r.Stats.Spilled
		s.Escaped += r.Stats.Escaped
		s.SpillingStreams += r.Stats.SpillingStreams
		s.TotalStreams += r.Stats.TotalStreams
		entropyBits += float64(n) * (8 + r.Stats.Entropy)
		optimalBits += float64(n) * (8 + r.OptimalBits)
	}
	if s.StoredBytes > 0 {
		s.Ratio = float64(2*s.N) / float64(s.StoredBytes)
	}
	if s.N > 0 {
		s.EntropyBound = 16 * float64(s.N) / entropyBits
		s.OptimalBound = 16 * float64(s.N) / optimalBits
	}
	return s
}

// NamedValues is one BF16 tensor of a file, for the reports below.
type NamedValues struct {
	Name   string
	Values []uint16
}

// ReportFile is a file's BF16 tensors.
type ReportFile struct {
	Name    string
	Tensors []NamedValues
}

// cleanBound is CLEAN's stream allocation bound 16/(8 + 3.125).
var cleanBound = 16 / (8 + float64(8*presetLayouts[Clean].StreamBytes)/float64(presetLayouts[Clean].BlockSize/Streams))

// versions are the format versions the reports compare, older first.
var versions = [...]int{FormatVersion2, FormatVersion3}

// WriteTotals prints, for each file and each preset × distribution, the total
// ratio of format versions 2 and 3 beside the entropy bound and the
// optimal-code bound (version 3's), and version 3's spill and escape rates
// (table (a)).
func WriteTotals(w io.Writer, files []ReportFile) error {
	fmt.Fprintf(w, "%-28s %-7s %-10s %8s %8s %8s %8s %9s %9s %9s\n",
		"file", "preset", "dist", "v2", "v3", "H-bound", "opt-bnd", "spilled%", "escaped%", "spillstr%")
	for _, f := range files {
		for _, p := range Presets {
			for _, d := range Distributions {
				var s [len(versions)]Summary
				for i, v := range versions {
					reps, err := measureAll(f, Options{Preset: p, Dist: d, Version: v})
					if err != nil {
						return err
					}
					s[i] = Summarize(reps)
				}
				v3 := s[1]
				fmt.Fprintf(w, "%-28s %-7v %-10v %8.4f %8.4f %8.4f %8.4f %9.4f %9.4f %9.4f\n", f.Name, p, d, s[0].Ratio, v3.Ratio,
					v3.EntropyBound, v3.OptimalBound, percent(v3.Spilled, v3.N), percent(v3.Escaped, v3.N), percent(v3.SpillingStreams, v3.TotalStreams))
			}
		}
	}
	return nil
}

// WriteCleanVsBound prints CLEAN's ratio per tensor of at least minElements
// elements against CLEAN's 16/(8 + 3.125) bound, per distribution (table (b)).
func WriteCleanVsBound(w io.Writer, f ReportFile, minElements int) error {
	fmt.Fprintf(w, "CLEAN bound %.4f; %% of bound per distribution (spilled %%); optimal bits of the full histogram\n", cleanBound)
	fmt.Fprintf(w, "%-30s %7s", "tensor", "N")
	for _, d := range Distributions {
		fmt.Fprintf(w, " %20v", d)
	}
	fmt.Fprintf(w, " %8s\n", "opt-bits")
	for _, nt := range f.Tensors {
		if len(nt.Values) < minElements {
			continue
		}
		fmt.Fprintf(w, "%-30s %7d", nt.Name, len(nt.Values))
		var opt float64
		for _, d := range Distributions {
			r, err := MeasureTensor(nt.Name, nt.Values, Options{Preset: Clean, Dist: d})
			if err != nil {
				return err
			}
			opt = r.OptimalBits
			fmt.Fprintf(w, " %.4f %6.2f%% (%4.2f)", r.Stats.Ratio, 100*r.Stats.Ratio/cleanBound, 100*r.Stats.OverflowRate)
		}
		fmt.Fprintf(w, " %8.3f\n", opt)
	}
	return nil
}

// AutoShortfall is one tensor's AUTO result against its optimal-code bound,
// in format versions 2 and 3.
type AutoShortfall struct {
	File string
	// Reports and Shortfalls are indexed like versions: version 2, then 3.
	Reports [2]TensorReport
	// Shortfall is 1 − ratio/OptimalBound.
	Shortfalls [2]float64
}

// WriteAutoVsOptimal prints, per tensor of at least minElements elements,
// the ratio of AUTO with distribution d in format versions 2 and 3 against
// 16/(8 + optimal bits of the tensor's full histogram), version 3's bound
// counting the sign bit a tensor of one sign does not store (table (c)),
// and returns the rows.
func WriteAutoVsOptimal(w io.Writer, files []ReportFile, d Distribution, minElements int) ([]AutoShortfall, error) {
	fmt.Fprintf(w, "%-28s %-30s %7s %8s %9s %9s %9s %8s %8s %8s\n", "file", "tensor", "N", "bound v3",
		"C v2/v3", "ratio v2", "ratio v3", "short2%", "short3%", "spill3%")
	var rows []AutoShortfall
	for _, f := range files {
		for _, nt := range f.Tensors {
			if len(nt.Values) < minElements {
				continue
			}
			row := AutoShortfall{File: f.Name}
			for i, v := range versions {
				r, err := MeasureTensor(nt.Name, nt.Values, Options{Preset: Auto, Dist: d, Version: v})
				if err != nil {
					return nil, err
				}
				row.Reports[i], row.Shortfalls[i] = r, 1-r.Stats.Ratio/r.OptimalBound
			}
			rows = append(rows, row)
			r2, r3 := &row.Reports[0], &row.Reports[1]
			fmt.Fprintf(w, "%-28s %-30s %7d %8.4f %4d/%-4d %9.4f %9.4f %8.3f %8.3f %8.4f\n", f.Name, nt.Name, r3.Stats.N, r3.OptimalBound,
				r2.Layout.StreamBytes, r3.Layout.StreamBytes, r2.Stats.Ratio, r3.Stats.Ratio,
				100*row.Shortfalls[0], 100*row.Shortfalls[1], 100*r3.Stats.OverflowRate)
		}
	}
	return rows, nil
}

// FamilyShortfall counts, for one preset and parametric family, the tensors
// whose ratio is more than a margin below empirical's, per format version.
type FamilyShortfall struct {
	Options Options
	// Misses, Worst and WorstTensor are indexed like versions.
	Misses, Tensors [2]int
	Worst           [2]float64 // largest 1 − ratio/empirical ratio
	WorstTensor     [2]string
}

// WriteFamiliesVsEmpirical prints, per preset and parametric family, how
// many tensors of at least minElements elements it packs more than margin
// (a fraction) below empirical under the same preset, in format versions 2
// and 3, and the worst (table (d)). (Version 3's empirical codebooks code
// fraction bits and signs with the exponent where that pays; the families
// do not, so their gap widens.)
func WriteFamiliesVsEmpirical(w io.Writer, files []ReportFile, margin float64, minElements int) ([]FamilyShortfall, error) {
	fmt.Fprintf(w, "%-7s %-9s %10s %10s %9s %9s  %s\n", "preset", "family", "misses v2", "misses v3", "worst2%", "worst3%", "worst tensor (v3)")
	var rows []FamilyShortfall
	for _, p := range Presets {
		for _, d := range []Distribution{Gaussian, Laplace, PowerLaw} {
			row := FamilyShortfall{Options: Options{Preset: p, Dist: d}}
			for _, f := range files {
				for _, nt := range f.Tensors {
					if len(nt.Values) < minElements {
						continue
					}
					for i, v := range versions {
						emp, err := Encode(nt.Values, Options{Preset: p, Dist: Empirical, Version: v})
						if err != nil {
							return nil, err
						}
						fam, err := Encode(nt.Values, Options{Preset: p, Dist: d, Version: v})
						if err != nil {
							return nil, err
						}
						short := 1 - fam.Stats.Ratio/emp.Stats.Ratio
						row.Tensors[i]++
						if short > margin {
							row.Misses[i]++
						}
						if short > row.Worst[i] {
							row.Worst[i], row.WorstTensor[i] = short, f.Name+":"+nt.Name
						}
					}
				}
			}
			rows = append(rows, row)
			fmt.Fprintf(w, "%-7v %-9v %4d of %-3d %4d of %-3d %9.2f %9.2f  %s\n", p, d, row.Misses[0], row.Tensors[0],
				row.Misses[1], row.Tensors[1], 100*row.Worst[0], 100*row.Worst[1], row.WorstTensor[1])
		}
	}
	return rows, nil
}

func measureAll(f ReportFile, opt Options) ([]TensorReport, error) {
	reps := make([]TensorReport, 0, len(f.Tensors))
	for _, nt := range f.Tensors {
		r, err := MeasureTensor(nt.Name, nt.Values, opt)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", f.Name, nt.Name, err)
		}
		reps = append(reps, r)
	}
	return reps, nil
}

func percent(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
