package session

import (
	"strings"
	"testing"

	"lcttop/codec"
)

func TestPlanRoundTrip(t *testing.T) {
	p := Plan{
		Classes: map[TensorClass]ClassCodec{ClassWeight: {codec.Auto, codec.Empirical}, ClassAdamV: {codec.High, codec.Laplace}},
		Tensors: map[string]ClassCodec{"lm_head.weight": {codec.Medium, codec.PowerLaw}},
	}
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"weight": "auto/empirical"`) || !strings.Contains(string(b), PlanFormat) {
		t.Fatalf("plan file:\n%s", b)
	}
	q, err := ParsePlan(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		class TensorClass
		want  ClassCodec
		ok    bool
	}{
		{"lm_head.weight", ClassWeight, ClassCodec{codec.Medium, codec.PowerLaw}, true},
		{"x.weight", ClassWeight, ClassCodec{codec.Auto, codec.Empirical}, true},
		{"exp_avg_sq.x", ClassAdamV, ClassCodec{codec.High, codec.Laplace}, true},
		{"grad.x", ClassGradient, ClassCodec{}, false},
	} {
		got, ok := q.Codec(c.name, c.class)
		if got != c.want || ok != c.ok {
			t.Errorf("Codec(%s) = %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestParsePlanErrors(t *testing.T) {
	cases := map[string]string{
		`{`:              "not a plan file",
		`{"format":"x"}`: `format "x"`,
		`{"format":"lcttop-plan/1","classes":{"bias":"auto/empirical"}}`: `unknown class "bias"`,
		`{"format":"lcttop-plan/1","classes":{"weight":"auto"}}`:         "want preset/dist",
		`{"format":"lcttop-plan/1","tensors":{"w":"fast/empirical"}}`:    "tensor w",
		`{"format":"lcttop-plan/1","tensors":{"w":"auto/normal"}}`:       "unknown distribution",
		`{"format":"lcttop-plan/1","extra":1}`:                           "unknown field",
	}
	for in, want := range cases {
		if _, err := ParsePlan([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePlan(%s): %v, want an error containing %q", in, err, want)
		}
	}
}
