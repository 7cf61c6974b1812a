// Package codec is the pure-Go reference implementation of LCT, the lossless
// BF16 tensor codec defined byte for byte in docs/format.md.
//
// A BF16 value splits into an exponent byte, entropy-coded with a canonical
// prefix code of at most 8 bits plus an escape, and a sign-fraction byte stored
// as it is. Exponents are dealt over 256 fixed-capacity streams per block in a
// skewed round robin (format version 2; version 1's plain round robin is still
// read); what does not fit spills to a per-tensor overflow area.
package codec

const (
	// Streams is the number of streams per block.
	Streams = 256
	// MaxCodeLen is the longest code, in bits, of any symbol including ESC.
	MaxCodeLen = 8
	// SampleSize is the number of elements sampled to fit a codebook.
	SampleSize = 4096
	// MaxElements is the largest tensor the format holds.
	MaxElements = 1<<31 - 1
	// escSymbol is ESC's symbol number in canonical ordering and decode tables.
	escSymbol = 256
	// literalBits is the width of an escaped exponent's literal.
	literalBits = 8
)
