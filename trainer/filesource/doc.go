// Package filesource shows checkpoint files through the same Session the
// trainer offers, so the UI renders a user's own model as it renders a
// training run: lcttop open (a .safetensors or .lct file, a folder of
// them, a sharded Hugging Face checkpoint) and lcttop watch (a folder a
// training job writes checkpoints into, followed live).
//
// Files are memory-mapped and never read whole. A snapshot comes at once
// from each tensor's deterministic sample (the 4,096 values the codec fits
// its codebook to), its figures estimated; then an exact pass codes every
// BF16 tensor piece by piece on all cores, each piece a whole number of
// codec blocks with the codebook and layout of the whole tensor, so the
// sums are the bytes lcttop pack writes, and the snapshots count its
// progress. Pages are released as the pass leaves them, so resident memory
// stays far below the file's size.
package filesource
