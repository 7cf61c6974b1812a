package session

import (
	"fmt"
	"strings"

	"lcttop/codec"
)

// ClassCodec is the codec choice of one tensor class (or of one tensor
// that overrides its class): a preset and a distribution. Its text form,
// in JSON too, is "preset/dist".
type ClassCodec struct {
	Preset codec.Preset
	Dist   codec.Distribution
}

func (cc ClassCodec) String() string { return cc.Preset.String() + "/" + cc.Dist.String() }

// MarshalText writes "preset/dist", the form ParseClassCodec reads.
func (cc ClassCodec) MarshalText() ([]byte, error) { return []byte(cc.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (cc *ClassCodec) UnmarshalText(b []byte) error {
	v, err := ParseClassCodec(string(b))
	if err != nil {
		return err
	}
	*cc = v
	return nil
}

// ParseClassCodec reads "preset/dist", the form ClassCodec.String writes.
func ParseClassCodec(s string) (ClassCodec, error) {
	ps, ds, ok := strings.Cut(s, "/")
	if !ok {
		return ClassCodec{}, fmt.Errorf("codec %q: want preset/dist, such as auto/empirical", s)
	}
	p, err := codec.ParsePreset(ps)
	if err != nil {
		return ClassCodec{}, fmt.Errorf("codec %q: %w", s, err)
	}
	d, err := codec.ParseDistribution(ds)
	if err != nil {
		return ClassCodec{}, fmt.Errorf("codec %q: %w", s, err)
	}
	return ClassCodec{Preset: p, Dist: d}, nil
}
