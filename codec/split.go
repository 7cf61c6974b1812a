package codec

// Split cuts a BF16 value into its sign-fraction byte (sign in bit 7, the
// 7 fraction bits below) and its exponent byte (format.md §1).
func Split(v uint16) (sf, exp byte) {
	return byte(v>>8)&0x80 | byte(v)&0x7F, byte(v >> 7)
}

// Join is the inverse of Split.
func Join(sf, exp byte) uint16 {
	return uint16(sf&0x80)<<8 | uint16(exp)<<7 | uint16(sf&0x7F)
}
