package trainer

import "testing"

func TestModelSizes(t *testing.T) {
	// The names promise sizes: tiny about 1M, gpt162m about 162M parameters.
	for name, want := range map[string]float64{"tiny": 1e6, "gpt162m": 162e6} {
		m, err := LookupModel(name)
		if err != nil {
			t.Fatal(err)
		}
		got := float64(m.ParamCount())
		if got < 0.8*want || got > 1.2*want {
			t.Errorf("%s: %.0f parameters, want about %.0f", name, got, want)
		}
		if err := m.validate(); err != nil {
			t.Error(err)
		}
	}
	if _, err := LookupModel("huge"); err == nil {
		t.Error("unknown model accepted")
	}
}
