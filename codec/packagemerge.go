package codec

import (
	"fmt"
	"math"
	"slices"
)

// OptimalLengths is the optimal construction of format.md §2: over the
// symbols 0..len(weights)-1 plus ESC, it chooses which symbols get a code and
// their lengths (at most maxLen bits, ESC included) so that
// Σ w·len + (weight of the escaped symbols)·(escLen + 8) is least.
//
// Symbols are ranked by weight descending (ties: smaller symbol first) and
// zero weights dropped. For each K = 1..min(255, nonzero, 2^maxLen − 1), the
// top K symbols plus ESC (weighing the rest) get package-merge lengths; the
// cheapest K wins, ties going to the smaller K. lengths[s] is 0 for an escaped
// symbol. With no nonzero weight nothing is coded and escLen is 1.
func OptimalLengths(weights []float64, maxLen int) (lengths []uint8, escLen uint8, err error) {
	if maxLen < 1 || maxLen > MaxCodeLen {
		return nil, 0, fmt.Errorf("codec: OptimalLengths: maxLen %d out of range 1..%d", maxLen, MaxCodeLen)
	}
	order := make([]int, 0, len(weights))
	for s, w := range weights {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return nil, 0, fmt.Errorf("codec: OptimalLengths: weight of symbol %d is %v, want finite and >= 0", s, w)
		}
		if w > 0 {
			order = append(order, s)
		}
	}
	lengths = make([]uint8, len(weights))
	if len(order) == 0 {
		return lengths, 1, nil
	}
	// Descending weight, ties to the smaller symbol (order is already ascending by symbol).
	slices.SortStableFunc(order, func(a, b int) int {
		switch wa, wb := weights[a], weights[b]; {
		case wa > wb:
			return -1
		case wa < wb:
			return 1
		}
		return 0
	})
	maxK := min(255, len(order), 1<<maxLen-1)

	// rest[K] is the weight of the symbols ranked K and below, summed from
	// the lightest up so that every K uses one well-defined float order.
	rest := make([]float64, len(order)+1)
	for k := len(order) - 1; k >= 0; k-- {
		rest[k] = rest[k+1] + weights[order[k]]
	}

	pm := newPackageMerge(maxK+1, maxLen)
	best := math.Inf(1)
	bestK := 0
	var bestLens []uint8
	items := make([]float64, 0, maxK+1)
	for k := 1; k <= maxK; k++ {
		items = items[:0]
		for _, s := range order[:k] {
			items = append(items, weights[s])
		}
		items = append(items, rest[k]) // ESC, ranked last (it is symbol 256)
		lens := pm.lengths(items)
		cost := 0.0
		for i, s := range order[:k] {
			cost += float64(weights[s] * float64(lens[i]))
		}
		cost += float64(rest[k] * float64(int(lens[k])+literalBits))
		if cost < best {
			best, bestK = cost, k
			bestLens = append(bestLens[:0], lens...)
		}
	}
	for i, s := range order[:bestK] {
		lengths[s] = bestLens[i]
	}
	return lengths, bestLens[bestK], nil
}

// packageMerge computes length-limited Huffman code lengths (Larmore and
// Hirschberg's package-merge) with scratch reused across calls.
type packageMerge struct {
	maxLen int
	leaves []int     // item indices by weight ascending
	leafW  []float64 // the leaves' weights, ascending
	list   []float64 // current level's merged weights
	next   []float64
	isLeaf [][]bool // per level: which entries of the merged list are leaves
	lens   []uint8
}

func newPackageMerge(maxItems, maxLen int) *packageMerge {
	pm := &packageMerge{maxLen: maxLen, isLeaf: make([][]bool, maxLen)}
	for d := range pm.isLeaf {
		pm.isLeaf[d] = make([]bool, 0, 2*maxItems)
	}
	return pm
}

// lengths returns code lengths for items (weights in rank order, heaviest
// first; at least 2 and at most 2^maxLen of them). The result is reused by
// the next call.
//
// The exact procedure (it fixes ties, so it is part of the format): leaves are
// sorted by weight ascending, equal weights ranked later (lighter rank) first.
// The deepest level's list is the leaves. Each level up pairs consecutive
// entries of the list below into packages (an odd last entry is dropped) and
// merges them with the leaves, a leaf before a package of equal weight. The
// first 2n−2 entries of the top level are selected; selecting a package
// selects the two entries it was made of. A leaf's length is the number of
// levels at which it is selected.
func (pm *packageMerge) lengths(items []float64) []uint8 {
	n := len(items)
	pm.leaves = pm.leaves[:0]
	for i := n - 1; i >= 0; i-- {
		pm.leaves = append(pm.leaves, i)
	}
	// Stable sort of the reversed rank order: equal weights keep lighter rank first.
	slices.SortStableFunc(pm.leaves, func(a, b int) int {
		switch wa, wb := items[a], items[b]; {
		case wa < wb:
			return -1
		case wa > wb:
			return 1
		}
		return 0
	})
	return pm.lengthsSorted(items)
}

// lengthsSorted is lengths with pm.leaves already the items' indices by
// weight ascending.
func (pm *packageMerge) lengthsSorted(items []float64) []uint8 {
	n := len(items)
	L := pm.maxLen
	// The leaves' weights ascending, once: every level merges them again.
	pm.leafW = slices.Grow(pm.leafW[:0], n)[:n]
	leafW := pm.leafW
	for k, i := range pm.leaves[:n] {
		leafW[k] = items[i]
	}
	// Deepest level (index L-1): leaves only.
	pm.list = append(pm.list[:0], leafW...)
	deep := slices.Grow(pm.isLeaf[L-1][:0], n)[:n]
	for k := range deep {
		deep[k] = true
	}
	pm.isLeaf[L-1] = deep
	for d := L - 2; d >= 0; d-- {
		list := pm.list
		npk := len(list) / 2
		m := n + npk
		next := slices.Grow(pm.next[:0], m)[:m]
		lvl := slices.Grow(pm.isLeaf[d][:0], m)[:m]
		li, pi, o := 0, 0, 0
		for ; li < n && pi < npk; o++ {
			pw := float64(list[2*pi] + list[2*pi+1])
			if pw < leafW[li] {
				next[o], lvl[o] = pw, false
				pi++
			} else {
				next[o], lvl[o] = leafW[li], true
				li++
			}
		}
		for ; pi < npk; o++ {
			next[o], lvl[o] = float64(list[2*pi]+list[2*pi+1]), false
			pi++
		}
		for ; li < n; o++ {
			next[o], lvl[o] = leafW[li], true
			li++
		}
		pm.isLeaf[d] = lvl
		pm.list, pm.next = next, list
	}
	pm.lens = slices.Grow(pm.lens[:0], n)[:n]
	clear(pm.lens)
	// Walk down from the top: the selected entries of each level are a prefix,
	// and the leaves within a prefix are a prefix of the ascending leaves.
	sel := 2*n - 2
	for d := 0; d < L && sel > 0; d++ {
		lvl := pm.isLeaf[d]
		leaves := 0
		for _, leaf := range lvl[:sel] {
			if leaf {
				leaves++
			}
		}
		for _, i := range pm.leaves[:leaves] {
			pm.lens[i]++
		}
		sel = 2 * (sel - leaves)
	}
	return pm.lens
}
