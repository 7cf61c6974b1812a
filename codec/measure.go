package codec

// Measurement helpers: how a tensor, or a set of them, compresses under one
// preset and distribution, against two bounds. cmd/lcttop and the report test
// print these; nothing here is stored.

// TensorReport is one tensor encoded under one preset and distribution.
type TensorReport struct {
	Name    string
	Options Options
	Stats   Stats // of the encoding
	// EntropyBound is 16/(8 + H), H the entropy of the full exponent histogram:
	// no code of the exponents alone does better.
	EntropyBound float64
	// OptimalBits is the expected bits per exponent of the optimal code with
	// lengths ≤ 8 plus escape fitted to the full histogram, and OptimalBound
	// 16/(8 + OptimalBits): the best any LCT codebook can do on this tensor,
	// with no stream, overflow or header overhead.
	OptimalBits, OptimalBound float64
}

// MeasureTensor encodes src with opt and reports the result beside the bounds.
func MeasureTensor(name string, src []uint16, opt Options) (TensorReport, error) {
	t, err := Encode(src, opt)
	if err != nil {
		return TensorReport{}, err
	}
	r := TensorReport{Name: name, Options: opt, Stats: t.Stats}
	full := &t.Stats.Histogram
	if len(src) > 0 {
		best := FitCodebook(Empirical, full)
		r.OptimalBits = best.ExpectedBits(full)
		r.EntropyBound = 16 / (8 + t.Stats.Entropy)
		r.OptimalBound = 16 / (8 + r.OptimalBits)
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
