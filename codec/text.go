package codec

// The text forms name presets and distributions in JSON ("auto",
// "empirical"), as String and ParsePreset or ParseDistribution do.

// MarshalText writes the preset's name.
func (p Preset) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a preset's name.
func (p *Preset) UnmarshalText(b []byte) error {
	v, err := ParsePreset(string(b))
	if err == nil {
		*p = v
	}
	return err
}

// MarshalText writes the distribution's name.
func (d Distribution) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a distribution's name.
func (d *Distribution) UnmarshalText(b []byte) error {
	v, err := ParseDistribution(string(b))
	if err == nil {
		*d = v
	}
	return err
}
