// Package lctfile reads and writes .lct files: a whole safetensors file
// whose BF16 tensors are stored as LCT tensors (docs/format.md §6), so that
// unpacking restores the original file byte for byte.
//
// Every segment carries a CRC-32C (Castagnoli) of its original bytes, the
// safetensors header its own, and the file a trailing one over everything
// before it. Writes go through WriteFileAtomic: a temporary file in the
// destination's folder, synced and renamed into place, so that a failed or
// interrupted write never leaves a partial file behind.
package lctfile
