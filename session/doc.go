// Package session is the vocabulary every source of snapshots shares with
// the UI: the Session a UI drives (a CPU or CUDA training run, a checkpoint
// file, a watched folder), the Snapshot it sends after each step, and the
// figures a snapshot carries (TensorStats, Memory by Category, FileStats),
// with the codec choice (ClassCodec, Plan) the UI sends back. It imports
// only the codec, so that the UI need not import any trainer.
package session
