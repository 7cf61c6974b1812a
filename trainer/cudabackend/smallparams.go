package cudabackend

import (
	"slices"

	"lcttop/trainer"
)

// smallShare bounds what the LCT store keeps uncompressed by design: the
// smallest parameters, together at most this share of the model's
// parameter count. Each of their encodes and decodes is a few kernel
// launches that run for microseconds on a handful of blocks, yet saves a
// few hundred bytes; the gpt162m model's 106 LayerNorm and bias vectors and
// its two 256-row embeddings (0.4% of its parameters) cost about 7 ms of a
// step through the codec.
const smallShare = 200

// smallReason is what the UI says of a tensor kept as it is for smallShare.
const smallReason = "The CUDA trainer keeps its smallest tensors as they are, together at most 1/200 of the parameters: " +
	"coding each would cost the step a few kernel launches for a few hundred bytes saved."

// smallParamLimit is the size up to which the LCT store keeps a tensor
// as it is: the largest parameter size n such that all parameters of at
// most n values together hold at most 1/smallShare of the parameters (0
// when even the smallest exceeds that).
func smallParamLimit(m trainer.ModelConfig) int {
	var sizes []int
	total := 0
	for _, p := range m.Params() {
		sizes = append(sizes, p.Elements())
		total += p.Elements()
	}
	slices.Sort(sizes)
	limit, sum := 0, 0
	for i, n := range sizes {
		sum += n
		if sum*smallShare > total {
			break
		}
		// Parameters of equal size go in together or not at all.
		if i+1 == len(sizes) || sizes[i+1] != n {
			limit = n
		}
	}
	return limit
}
