package cudabackend

import (
	"testing"

	"lcttop/trainer"
)

// The limit keeps raw the smallest parameters within their share, and no
// more: one more size would pass it.
func TestSmallParamLimit(t *testing.T) {
	for _, m := range trainer.Models {
		limit := smallParamLimit(m)
		total, raw, next := 0, 0, 0
		for _, p := range m.Params() {
			n := p.Elements()
			total += n
			if n <= limit {
				raw += n
			} else if next == 0 || n < next {
				next = n
			}
		}
		if raw*smallShare > total {
			t.Errorf("%s: limit %d keeps %d of %d values raw, more than 1/%d", m.Name, limit, raw, total, smallShare)
		}
		withNext := raw
		for _, p := range m.Params() {
			if p.Elements() == next {
				withNext += next
			}
		}
		if next != 0 && withNext*smallShare <= total {
			t.Errorf("%s: limit %d stops short: parameters of %d values would fit too", m.Name, limit, next)
		}
		t.Logf("%s: parameters of at most %d values kept raw (%d of %d)", m.Name, limit, raw, total)
	}
	m, err := trainer.LookupModel("gpt162m")
	if err != nil {
		t.Fatal(err)
	}
	// Its vectors and the 256-row embeddings; not wpe (1024 x 1024).
	if got, want := smallParamLimit(m), trainer.Vocab*m.Dim; got != want {
		t.Errorf("gpt162m: limit %d, want %d", got, want)
	}
}
