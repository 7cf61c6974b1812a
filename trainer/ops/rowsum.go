package ops

// rowSum adds a row's float32 terms in the order the GPU's LayerNorm
// kernels add them, so both give the same bits: the row is dealt in groups
// of rowSumGroup columns to rowSumLanes lanes in turn (column c to lane
// (c/rowSumGroup) mod rowSumLanes), each lane adds its terms in ascending c,
// then the lanes are folded in halves (lane j takes lane j+m for m = 16, 8,
// 4, 2, 1), as a warp's butterfly of shuffles does. No lane waits on a sum
// of the whole row, which a single running sum would make every term do.
type rowSum [rowSumLanes]float32

const (
	rowSumLanes = 32 // a warp
	rowSumGroup = 8  // columns a lane loads at once (16 bytes of BF16)
)

// add adds the term of column c; for each lane, columns must come in
// ascending order.
func (s *rowSum) add(c int, v float32) {
	s[(c/rowSumGroup)%rowSumLanes] += v
}

// total folds the lanes into the row's sum.
func (s *rowSum) total() float32 {
	for m := rowSumLanes / 2; m >= 1; m /= 2 {
		for j := range m {
			s[j] += s[j+m]
		}
	}
	return s[0]
}
