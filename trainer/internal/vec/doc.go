// Package vec holds the trainer's inner loops over float32: the tile
// product at the heart of every matrix product, and the widening of BF16 to
// float32 and the rounding back. Each has an AVX-512 and an AVX2 version in
// assembly, chosen at start from what golang.org/x/sys/cpu reports, and a
// plain Go version for every other machine.
//
// Every version computes the same bits: a product is rounded to float32
// before it is added (never fused into an FMA), each output has one float32
// accumulator that starts at +0 and takes the products in ascending inner
// index, and BF16 rounding is to nearest, ties to even, with NaNs kept quiet
// (exactly trainer/bf16). The vector versions only put different outputs in
// different lanes.
package vec
