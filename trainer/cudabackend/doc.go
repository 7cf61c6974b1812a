// Package cudabackend trains lcttop's GPT on an NVIDIA GPU: the CPU
// trainer's model, op for op and buffer for buffer, with its tensors in
// device memory, and the LCT run beside its uncompressed shadow in
// lockstep, losses compared every step and every weight and state every N.
//
// It holds only the model's step on the GPU: the ops around the GPT kernels
// and cuBLAS, the dense and LCT stores, the memory pool and each run's
// ledger (Mem), the run (forward, backward, optimizer) and the lockstep of
// the two runs. The device itself is package gpu's
// (gpu.Compute, on a GPU or the CPU emulation of the same kernels); the LCT
// run's codec is package lct's (gpu/lct): the GPU codec on gpu's side
// stream (OpenCodec), or the reference codec on the host for comparison. Train is the headless loop,
// Session the same run as a session.Session that the UI drives, Sweep the
// longest sequence at batch 1 under a memory budget.
//
// docs/cuda-trainer.md describes the step, the memory accounting and how
// exactness against the CPU ops is tested.
package cudabackend
