package codec

import "fmt"

// Distribution names the model a codebook is fitted from (format.md §2).
type Distribution uint8

// The distributions, numbered as in the serialised header.
const (
	Gaussian Distribution = iota
	Laplace
	PowerLaw
	Empirical
)

// Distributions lists every distribution in header order.
var Distributions = []Distribution{Gaussian, Laplace, PowerLaw, Empirical}

var distributionNames = [...]string{"gaussian", "laplace", "powerlaw", "empirical"}

func (d Distribution) String() string {
	if int(d) < len(distributionNames) {
		return distributionNames[d]
	}
	return fmt.Sprintf("distribution(%d)", uint8(d))
}

func (d Distribution) valid() bool { return int(d) < len(distributionNames) }

// ParseDistribution maps a name ("gaussian", "laplace", "powerlaw", "empirical") to its Distribution.
func ParseDistribution(s string) (Distribution, error) {
	for i, n := range distributionNames {
		if n == s {
			return Distribution(i), nil
		}
	}
	return 0, fmt.Errorf("codec: unknown distribution %q (want gaussian, laplace, powerlaw or empirical)", s)
}

// Preset names a layout: block size and stream capacity (format.md §4).
type Preset uint8

// The presets, numbered as in the serialised header.
const (
	Clean Preset = iota
	Medium
	High
	Auto
)

// Presets lists every preset in header order.
var Presets = []Preset{Clean, Medium, High, Auto}

var presetNames = [...]string{"clean", "medium", "high", "auto"}

func (p Preset) String() string {
	if int(p) < len(presetNames) {
		return presetNames[p]
	}
	return fmt.Sprintf("preset(%d)", uint8(p))
}

func (p Preset) valid() bool { return int(p) < len(presetNames) }

// ParsePreset maps a name ("clean", "medium", "high", "auto") to its Preset.
func ParsePreset(s string) (Preset, error) {
	for i, n := range presetNames {
		if n == s {
			return Preset(i), nil
		}
	}
	return 0, fmt.Errorf("codec: unknown preset %q (want clean, medium, high or auto)", s)
}

// Options selects how Encode lays out and codes a tensor. The zero value is
// CLEAN with the gaussian family, in the current format version.
type Options struct {
	Preset Preset
	Dist   Distribution
	// Version is the format version to write: 0 (the current, FormatVersion)
	// or 3, or 1 or 2 to compare with what files written before hold.
	Version int
}

// version is the format version o asks for, or 0 if it names none.
func (o Options) version() int {
	switch o.Version {
	case 0:
		return FormatVersion
	case FormatVersion1, FormatVersion2, FormatVersion3:
		return o.Version
	}
	return 0
}
