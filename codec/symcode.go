package codec

import (
	"fmt"
	"math"
	"slices"
	"sync"
)

// symCode is a codebook seen over its symbols: with split k = 0 (and no
// sign) the 256 exponents and one ESC, else the 256·2^(k+sb) split symbols,
// sb = 1 where the symbol holds the sign, and an ESC for each of the
// 2^(k+sb) values of the sign and fraction bits (format.md §2).
type symCode struct {
	k    uint // fraction bits in a symbol
	sb   uint // 1 where the symbol holds the sign
	lens []uint8
	esc  [1 << MaxSplit]uint8
}

func (cb *Codebook) symCode() symCode {
	if !cb.split() {
		return symCode{lens: cb.Lengths[:], esc: [8]uint8{cb.EscLen}}
	}
	c := symCode{k: uint(cb.Split), esc: cb.SplitEscLens}
	if cb.Signed {
		c.sb = 1
	}
	c.lens = cb.SplitLengths[:c.symbols()]
	return c
}

// split says whether the codebook codes split symbols.
func (cb *Codebook) split() bool { return cb.Split != 0 || cb.Signed }

func (c *symCode) symbols() int { return 256 << (c.k + c.sb) }
func (c *symCode) escapes() int { return 1 << (c.k + c.sb) }

// symbol is value v's symbol: (sign<<8 | exponent) << k | the top k
// fraction bits, the sign only where the symbol holds it.
func (c *symCode) symbol(v uint16) int {
	if c.sb != 0 {
		return int(v) >> (7 - c.k)
	}
	return int(v&0x7FFF) >> (7 - c.k)
}

// escOf is the ESC of symbol s: its sign and fraction bits.
func (c *symCode) escOf(s int) int { return s>>(8+c.k)<<c.k | s&(1<<c.k-1) }

// expOf is the exponent of symbol s.
func (c *symCode) expOf(s int) int { return s >> c.k & 0xFF }

// fromEsc is the symbol of ESC x and exponent e.
func (c *symCode) fromEsc(x, e int) int { return (x>>c.k<<8|e)<<c.k | x&(1<<c.k-1) }

// cost is the bits symbol s takes in a stream: its code, or its ESC and
// the 8-bit exponent.
func (c *symCode) cost(s int) int {
	if l := c.lens[s]; l != 0 {
		return int(l)
	}
	return int(c.esc[c.escOf(s)]) + literalBits
}

// codes returns the canonical codes of the symbols and the ESCs: ordered by
// (length, number), ESC x numbered 256·2^(k+sb) + x, code = 0, then for
// each code <<= len − prev, assign, code++ (format.md §2).
func (c *symCode) codes(dst []uint16) (codes []uint16, esc [1 << MaxSplit]uint16) {
	codes = resize(dst, len(c.lens))
	var code uint16
	prev := 0
	first := true
	assign := func(l int) uint16 {
		if first {
			prev, first = l, false
		}
		code <<= uint(l - prev)
		prev = l
		a := code
		code++
		return a
	}
	for l := 1; l <= MaxCodeLen; l++ {
		for s, sl := range c.lens {
			if int(sl) == l {
				codes[s] = assign(l)
			}
		}
		for x := range c.escapes() {
			if int(c.esc[x]) == l {
				esc[x] = assign(l)
			}
		}
	}
	return codes, esc
}

// kraft is the Kraft sum of every code, scaled by 2^8, and how many symbols
// (ESCs aside) have codes.
func (c *symCode) kraft() (sum, coded int) {
	for _, l := range c.lens {
		if l != 0 {
			coded++
			sum += 1 << (MaxCodeLen - l)
		}
	}
	for x := range c.escapes() {
		sum += 1 << (MaxCodeLen - c.esc[x])
	}
	return sum, coded
}

// validateSplit checks a version 3 empirical codebook's symbol lengths:
// 0..8, every ESC coded, a complete code (or, unsplit with nothing coded,
// escLen 1), and for a split one the exponent view.
func (cb *Codebook) validateSplit() error {
	if cb.Split > MaxSplit || cb.Signed && cb.Split > MaxSplit-1 {
		return fmt.Errorf("codebook: split %d (signed %v) out of range 0..%d (0..%d signed)", cb.Split, cb.Signed, MaxSplit, MaxSplit-1)
	}
	c := cb.symCode()
	for x := range c.escapes() {
		if c.esc[x] < 1 || c.esc[x] > MaxCodeLen {
			return fmt.Errorf("codebook: length of ESC %d is %d, out of range 1..%d", x, c.esc[x], MaxCodeLen)
		}
	}
	for s, l := range c.lens {
		if l > MaxCodeLen {
			return fmt.Errorf("codebook: length of symbol %d is %d, above %d", s, l, MaxCodeLen)
		}
	}
	sum, coded := c.kraft()
	if sum > 1<<MaxCodeLen {
		return fmt.Errorf("codebook: Kraft sum %d/256 exceeds 1", sum)
	}
	if !cb.split() && coded == 0 {
		if cb.EscLen != 1 {
			return fmt.Errorf("codebook: empirical codebook codes nothing but escLen is %d, want 1", cb.EscLen)
		}
		return nil
	}
	if sum != 1<<MaxCodeLen {
		return fmt.Errorf("codebook: empirical code is incomplete (Kraft sum %d/256, want 256/256)", sum)
	}
	if cb.split() {
		for e := range cb.Lengths {
			if cb.Lengths[e] != splitView(&c, e) {
				return fmt.Errorf("codebook: exponent %d shows length %d, its shortest symbol code is %d", e, cb.Lengths[e], splitView(&c, e))
			}
		}
		if esc := slices.Min(c.esc[:c.escapes()]); cb.EscLen != esc {
			return fmt.Errorf("codebook: escLen %d, the shortest ESC is %d", cb.EscLen, esc)
		}
		for s := c.symbols(); s < len(cb.SplitLengths); s++ {
			if cb.SplitLengths[s] != 0 {
				return fmt.Errorf("codebook: split %d (signed %v) codes symbol %d, beyond its %d", cb.Split, cb.Signed, s, c.symbols())
			}
		}
		for x := c.escapes(); x < len(cb.SplitEscLens); x++ {
			if cb.SplitEscLens[x] != 0 {
				return fmt.Errorf("codebook: split %d (signed %v) has an ESC %d", cb.Split, cb.Signed, x)
			}
		}
	}
	return nil
}

// splitView is exponent e's shortest symbol code, 0 if all are escaped.
func splitView(c *symCode, e int) uint8 {
	var m uint8
	for x := range c.escapes() {
		if l := c.lens[c.fromEsc(x, e)]; l != 0 && (m == 0 || l < m) {
			m = l
		}
	}
	return m
}

// setSplitView fills Lengths and EscLen of a split codebook from its symbols.
func (cb *Codebook) setSplitView() {
	c := cb.symCode()
	for e := range cb.Lengths {
		cb.Lengths[e] = splitView(&c, e)
	}
	cb.EscLen = slices.Min(c.esc[:c.escapes()])
}

// symEntry is a decode table entry: the symbol (or ESC t, with symEsc) in
// the low 16 bits, the code length in bits 16..23; length 0 marks an
// invalid prefix.
type symEntry uint32

// symEsc marks a symEntry as ESC t.
const symEsc = 1 << 12

func (e symEntry) length() uint32 { return uint32(e) >> 16 & 0xFF }

// decodeTable maps the next 8 bits of a stream to the symbol (or ESC) whose
// code prefixes them.
func (c *symCode) decodeTable(codes []uint16, esc [1 << MaxSplit]uint16) (t [256]symEntry) {
	fill := func(v uint32, code uint16, l uint8) {
		if l == 0 {
			return
		}
		lo := int(code) << (MaxCodeLen - l)
		hi := (int(code) + 1) << (MaxCodeLen - l)
		for i := lo; i < hi && i < len(t); i++ {
			t[i] = symEntry(v | uint32(l)<<16)
		}
	}
	for s, l := range c.lens {
		fill(uint32(s), codes[s], l)
	}
	for x := range c.escapes() {
		fill(uint32(x)|symEsc, esc[x], c.esc[x])
	}
	return t
}

// SplitHistogram counts a tensor's values by sign, exponent and top 3
// fraction bits, bin v >> 4: what a version 3 codebook of any split is
// fitted from.
type SplitHistogram [512 << MaxSplit]uint64

// FullSplitHistogram is the split histogram of every value of src.
func FullSplitHistogram(src []uint16) SplitHistogram {
	var h SplitHistogram
	h.add(src)
	return h
}

// add counts src's values into h.
func (h *SplitHistogram) add(src []uint16) {
	if len(src) < splitLanesMin {
		for _, v := range src {
			h[v>>4]++
		}
		return
	}
	for len(src) > 0 {
		n := min(len(src), splitLanesMax)
		h.addLanes(src[:n])
		src = src[n:]
	}
}

// addLanes counts src's values into h over four 32-bit sub-histograms, a
// value to each in turn: they break the store-to-load dependency when the
// same bin repeats, and take half the cache of 64-bit ones.
func (h *SplitHistogram) addLanes(src []uint16) {
	var c0, c1, c2, c3 [len(SplitHistogram{})]uint32
	i := 0
	for ; i+4 <= len(src); i += 4 {
		s := src[i : i+4 : i+4]
		c0[s[0]>>4]++
		c1[s[1]>>4]++
		c2[s[2]>>4]++
		c3[s[3]>>4]++
	}
	for _, v := range src[i:] {
		c0[v>>4]++
	}
	for b := range h {
		h[b] += uint64(c0[b]) + uint64(c1[b]) + uint64(c2[b]) + uint64(c3[b])
	}
}

// splitLanesMin is where add's sub-histograms pay for their clearing and
// merging; splitLanesMax keeps their counts within 32 bits.
const (
	splitLanesMin = 4096
	splitLanesMax = 1 << 30
)

// SampleSplitHistogram is the split histogram of the sample of src that
// SampleHistogram counts.
func SampleSplitHistogram(src []uint16) SplitHistogram {
	var h SplitHistogram
	n := len(src)
	if n <= SampleSize {
		h.add(src)
		return h
	}
	for k := range SampleSize {
		h[src[sampleIndex(k, n)]>>4]++
	}
	return h
}

// Sign is the sign of the values h counts (SignOf): plus where none has
// its sign bit set, minus where all have and there are some, else mixed.
func (h *SplitHistogram) Sign() Sign {
	var plus, minus uint64
	for b, c := range h {
		if b < len(h)/2 {
			plus += c
		} else {
			minus += c
		}
	}
	switch {
	case minus == 0:
		return SignPlus
	case plus == 0:
		return SignMinus
	}
	return SignMixed
}

// Exponents is the exponent histogram h counts.
func (h *SplitHistogram) Exponents() Histogram {
	var e Histogram
	for b, c := range h {
		e[b>>MaxSplit&0xFF] += c
	}
	return e
}

// symbolOfBin is the symbol of bin b (a value's top 12 bits) under c.
func (c *symCode) symbolOfBin(b int) int {
	if c.sb != 0 {
		return b >> (MaxSplit - c.k)
	}
	return b & 0x7FF >> (MaxSplit - c.k)
}

// weights is h as weights per symbol of c.
func (h *SplitHistogram) weights(dst []float64, c *symCode) []float64 {
	dst = resize(dst, c.symbols())
	clear(dst)
	for b, n := range h {
		if n != 0 {
			dst[c.symbolOfBin(b)] += float64(n)
		}
	}
	return dst
}

// binWeights is weights from bins, the bins of h that count something, in
// order: the same sums, without a pass over every bin.
func (h *SplitHistogram) binWeights(dst []float64, bins []int, c *symCode) []float64 {
	dst = resize(dst, c.symbols())
	clear(dst)
	for _, b := range bins {
		dst[c.symbolOfBin(b)] += float64(h[b])
	}
	return dst
}

// FitSplitCodebook is format version 3's empirical codebook for a split
// histogram of values of sign s: for each split k = 0..3, and where the
// values' signs differ for k = 0..2 with the sign in the symbol too, the
// optimal construction over its symbols (format.md §2), and of those the
// one that stores the values in the fewest bits, codes, residues and the
// codebook's own bytes together (ties: unsigned first, then the smaller k).
func FitSplitCodebook(h *SplitHistogram, s Sign) Codebook {
	f := splitFitters.Get().(*splitFitter)
	defer splitFitters.Put(f)
	return f.fitBest(h, s)
}

// splitFitters keeps fitters' scratch between the fits of a checkpoint's
// many tensors, or of a trainer's chunks.
var splitFitters = sync.Pool{New: func() any { return new(splitFitter) }}

// FitSplitCodebookK is FitSplitCodebook with the split fixed at k and the
// sign in the symbol where signed.
func FitSplitCodebookK(h *SplitHistogram, k uint8, signed bool) Codebook {
	f := splitFitters.Get().(*splitFitter)
	defer splitFitters.Put(f)
	cb, _ := f.fitK(h, uint(k), signed)
	return cb
}

// splitFitter keeps the optimal construction's scratch between fits.
type splitFitter struct {
	w     []float64
	hist  *SplitHistogram               // a block's, where the caller gave none
	bins  []int                         // the histogram's bins that count something
	candW [2 * (MaxSplit + 1)][]float64 // fitBest: each alphabet's weights
	order []int
	rest  [1 << MaxSplit][]float64
	items []float64
	best  []uint8
	keys  []uint64
	lens  []uint8 // optimal's result, reused by the next fit
	pm    *packageMerge
	// huffman's scratch.
	hIdx, hParent, hDepth []int
	hW                    []float64
	hLens                 []uint8
	escIdx                []int
}

func (f *splitFitter) fitBest(h *SplitHistogram, s Sign) Codebook {
	var total uint64
	for _, c := range h {
		total += c
	}
	// No code of an alphabet takes fewer bits than its entropy, and its
	// codebook at least a nibble for each symbol of its exponents' range:
	// alphabets are fitted in the order of that bound, and one whose bound
	// is already above the best fit's bits is not fitted at all (the many
	// small tensors of a checkpoint do not pay for the large alphabets'
	// codebooks).
	type cand struct {
		k      uint
		signed bool
		bound  float64
		w      int // its weights, in candW
	}
	var cands [2 * (MaxSplit + 1)]cand
	n := 0
	lo, hi := 255, 0
	f.bins = nonzeroBins(f.bins, h) // every alphabet's weights come from them
	for _, b := range f.bins {
		e := b >> MaxSplit & 0xFF
		lo, hi = min(lo, e), max(hi, e)
	}
	for _, signed := range []bool{false, true} {
		if signed && s != SignMixed {
			break
		}
		for k := uint(0); k <= MaxSplit; k++ {
			if signed && k == MaxSplit {
				break
			}
			cb := Codebook{Split: uint8(k), Signed: signed}
			c := cb.symCode()
			f.candW[n] = h.binWeights(f.candW[n], f.bins, &c)
			bound := float64(total) * float64(ResidueBits(&cb, s))
			for _, x := range f.candW[n] {
				if x > 0 {
					bound -= x * math.Log2(x/float64(total))
				}
			}
			if hi >= lo {
				bound += float64(8 * (2 + (((hi-lo+1)<<(k+c.sb))+c.escapes()+1)/2))
			}
			cands[n] = cand{k, signed, bound, n}
			n++
		}
	}
	slices.SortStableFunc(cands[:n], func(a, b cand) int { return cmpFloat(a.bound, b.bound) })
	var best Codebook
	bestBits := math.Inf(1)
	for _, c := range cands[:n] {
		if c.bound >= bestBits {
			continue
		}
		cb, bits := f.fitWeights(f.candW[c.w], c.k, c.signed)
		bits += float64(total)*float64(ResidueBits(&cb, s)) + float64(8*codebookBytes3(&cb))
		if bits < bestBits || bits == bestBits && (c.k < uint(best.Split) || !c.signed && best.Signed) {
			best, bestBits = cb, bits
		}
	}
	return best
}

// fitK is the optimal construction under split k (signed: the sign in the
// symbol) and the bits its codes take.
func (f *splitFitter) fitK(h *SplitHistogram, k uint, signed bool) (Codebook, float64) {
	c := (&Codebook{Split: uint8(k), Signed: signed}).symCode()
	f.w = h.weights(f.w, &c)
	return f.fitWeights(f.w, k, signed)
}

// fitWeights is fitK with the histogram's weights per symbol of split k
// (signed: the sign in the symbol) given.
func (f *splitFitter) fitWeights(w []float64, k uint, signed bool) (Codebook, float64) {
	cb := Codebook{Dist: Empirical, Split: uint8(k), Signed: signed}
	c := cb.symCode()
	lens, esc, bits := f.optimal(w, &c)
	if !cb.split() {
		copy(cb.Lengths[:], lens)
		cb.EscLen = esc[0]
		return cb, bits
	}
	copy(cb.SplitLengths[:], lens)
	copy(cb.SplitEscLens[:], esc[:c.escapes()])
	cb.setSplitView()
	return cb, bits
}

// optimal is the optimal construction over the symbols of c weighted w
// with c's ESCs, ESC x weighing the escaped symbols of its sign and
// fraction bits: the top K symbols (weight descending, ties to the smaller
// symbol) and the ESCs get Huffman lengths (package-merge's where Huffman's
// pass 8 bits), and the cheapest K wins (ties: the larger K). K is tried
// from where a symbol's own code stops paying (probability 2^-10) up and
// down while the cost falls, so that a fit costs a few constructions
// rather than one per symbol (version 3 fits a codebook per block). With no nonzero weight
// nothing is coded: escLen 1 unsplit, else every ESC as long as their
// count needs. lens is reused by the next call.
func (f *splitFitter) optimal(w []float64, c *symCode) (lens []uint8, esc [1 << MaxSplit]uint8, bits float64) {
	nesc := c.escapes()
	// Rank the symbols by weight descending, ties to the smaller symbol:
	// one sort of keys weight << 12 | (4095 − symbol) (weights are counts).
	f.keys = f.keys[:0]
	for s, x := range w {
		if x > 0 {
			f.keys = append(f.keys, uint64(x)<<12|uint64(4095-s))
		}
	}
	f.lens = resize(f.lens, len(w))
	lens = f.lens
	clear(lens)
	if len(f.keys) == 0 {
		for x := range nesc {
			esc[x] = uint8(max(c.k+c.sb, 1))
		}
		return lens, esc, 0
	}
	slices.Sort(f.keys)
	f.order = f.order[:0]
	for i := len(f.keys) - 1; i >= 0; i-- {
		f.order = append(f.order, 4095-int(f.keys[i]&4095))
	}
	maxK := min(len(f.order), 1<<MaxCodeLen-nesc)
	// rest[x][K]: the weight of the symbols ranked K and below under ESC x,
	// summed from the lightest up.
	for x := range nesc {
		f.rest[x] = resize(f.rest[x], len(f.order)+1)
		f.rest[x][len(f.order)] = 0
	}
	for i := len(f.order) - 1; i >= 0; i-- {
		s := f.order[i]
		for x := range nesc {
			f.rest[x][i] = f.rest[x][i+1]
		}
		f.rest[c.escOf(s)][i] += w[s]
	}
	if f.pm == nil {
		f.pm = newPackageMerge(1<<MaxCodeLen, MaxCodeLen)
	}
	best := math.Inf(1)
	bestK := 0
	try := func(K int) bool {
		f.items = f.items[:0]
		for _, s := range f.order[:K] {
			f.items = append(f.items, w[s])
		}
		for x := range nesc {
			f.items = append(f.items, f.rest[x][K]) // the ESCs rank last: they are the highest symbols
		}
		f.ascending(K, nesc)
		l, ok, huffBits := f.huffman(f.items, f.pm.leaves)
		if !ok {
			// No code of these items takes fewer bits than Huffman's: a K
			// whose Huffman code already costs more than the best cannot
			// win, and needs no package-merge.
			lower := huffBits
			for x := range nesc {
				lower += f.rest[x][K] * literalBits
			}
			if lower > best {
				return false
			}
			l = f.pm.lengthsSorted(f.items)
		}
		cost := 0.0
		for i, s := range f.order[:K] {
			cost += w[s] * float64(l[i])
		}
		for x := range nesc {
			cost += f.rest[x][K] * float64(int(l[K+x])+literalBits)
		}
		if cost < best || cost == best && K > bestK {
			best, bestK = cost, K
			f.best = append(f.best[:0], l...)
			return true
		}
		return false
	}
	// Start where a symbol's own code would no longer be shorter than an
	// escape's (probability 2^-10 and above), then walk up and down from
	// there while the cost falls, fitPatience steps past the best.
	total := f.rest[0][0]
	for x := 1; x < nesc; x++ {
		total += f.rest[x][0]
	}
	start := 1
	for start < maxK && w[f.order[start]] >= total/1024 {
		start++
	}
	try(start)
	for K, worse := start+1, 0; K <= maxK && worse < fitPatience; K++ {
		if try(K) {
			worse = 0
		} else {
			worse++
		}
	}
	for K, worse := start-1, 0; K >= 1 && worse < fitPatience; K-- {
		if try(K) {
			worse = 0
		} else {
			worse++
		}
	}
	for i, s := range f.order[:bestK] {
		lens[s] = f.best[i]
	}
	for x := range nesc {
		esc[x] = f.best[bestK+x]
	}
	return lens, esc, best
}

// fitPatience is how many K in a row optimal tries past the best.
const fitPatience = 2

// ascending sets f.pm.leaves to the indices of f.items by weight
// ascending: the top K symbols come heaviest first, so reversed they
// ascend, and the nesc ESCs after them are merged in.
func (f *splitFitter) ascending(K, nesc int) {
	leaves := f.pm.leaves[:0]
	f.escIdx = f.escIdx[:0]
	for x := range nesc {
		f.escIdx = append(f.escIdx, K+x)
	}
	slices.SortStableFunc(f.escIdx, func(a, b int) int { return cmpFloat(f.items[a], f.items[b]) })
	e := 0
	for i := K - 1; i >= 0; i-- {
		for e < nesc && f.items[f.escIdx[e]] <= f.items[i] {
			leaves = append(leaves, f.escIdx[e])
			e++
		}
		leaves = append(leaves, i)
	}
	f.pm.leaves = append(leaves, f.escIdx[e:]...)
}

// huffman is the Huffman code lengths of items (weights, at least two)
// whose indices by weight ascending are idx, and whether none is above
// MaxCodeLen: then they are optimal with or without the limit, and
// package-merge is not needed. bits is the code's Σ weight·length either
// way. The result is reused by the next call.
func (f *splitFitter) huffman(items []float64, idx []int) (lens []uint8, ok bool, bits float64) {
	n := len(items)
	f.hIdx = append(f.hIdx[:0], idx...)
	// Two queues: the leaves by weight, and the merged nodes in the order
	// they are made (their weights only grow).
	f.hW = resize(f.hW, 2*n)
	f.hParent = resize(f.hParent, 2*n)
	for i, s := range f.hIdx {
		f.hW[i] = items[s]
	}
	leaf, node, next := 0, n, n
	pop := func() int {
		if leaf < n && (node >= next || f.hW[leaf] <= f.hW[node]) {
			leaf++
			return leaf - 1
		}
		node++
		return node - 1
	}
	for next < 2*n-1 {
		a, b := pop(), pop()
		f.hW[next] = f.hW[a] + f.hW[b]
		f.hParent[a], f.hParent[b] = next, next
		next++
	}
	f.hDepth = resize(f.hDepth, 2*n)
	f.hDepth[2*n-2] = 0
	for i := 2*n - 3; i >= 0; i-- {
		f.hDepth[i] = f.hDepth[f.hParent[i]] + 1
	}
	f.hLens = resize(f.hLens, n)
	ok = true
	for i, s := range f.hIdx {
		d := f.hDepth[i]
		bits += items[s] * float64(d)
		if d > MaxCodeLen {
			ok = false
		}
		f.hLens[s] = uint8(d)
	}
	if !ok {
		return nil, false, bits
	}
	return f.hLens, true, bits
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ValueCost is the bits value v's code takes in a stream: its symbol's
// (exponent and, with Split > 0, the top fraction bits) code length, or its
// ESC's plus the 8-bit exponent.
func (cb *Codebook) ValueCost(v uint16) int {
	c := cb.symCode()
	return c.cost(c.symbol(v))
}

// Escapes says whether value v is coded as an ESC and its exponent.
func (cb *Codebook) Escapes(v uint16) bool {
	c := cb.symCode()
	return c.lens[c.symbol(v)] == 0
}

// CodeTable is the code of every symbol of cb, as the encoder writes it:
// code << 5 | length in bits, the code of an escaped symbol being its ESC
// followed by the 8-bit exponent. SymbolOf gives a value's symbol.
func (cb *Codebook) CodeTable() []uint32 {
	var s encoder3
	c := cb.symCode()
	return s.encodeTable(nil, cb)[:c.symbols()]
}

// SymbolOf is value v's symbol under cb: its exponent (split 0), or the
// exponent with the top Split fraction bits and, where Signed, the sign
// (format.md §7.1).
func (cb *Codebook) SymbolOf(v uint16) int {
	c := cb.symCode()
	return c.symbol(v)
}

// SymbolDecodeTable maps the next 8 bits of a version 3 stream coded with
// cb to what its code prefixes, for a decoder outside this package (the
// GPU's): the symbol, or for ESC x the x, in bits 0–11, bit 12 set for an
// ESC, the code length in bits 16–23, 0 for an invalid prefix (format.md
// §7.2). cb must be valid.
func (cb *Codebook) SymbolDecodeTable() [256]uint32 {
	c := cb.symCode()
	codes, esc := c.codes(nil)
	dt := c.decodeTable(codes, esc)
	var t [256]uint32
	for i, e := range dt {
		t[i] = uint32(e)
	}
	return t
}
