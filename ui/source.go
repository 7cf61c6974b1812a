package ui

import "lcttop/session"

// Source is what the UI drives: a training run (the CPU trainer, the CUDA
// trainer), or later a file; tests use ui/fake.
//
// Pause, Resume, StepOnce and Stop are called from the UI's event loop and
// must return promptly. SetClassCodec, SetTensorCodec, Detail and Values
// may take a while (tensors are re-encoded, a block copied out); the UI
// calls them off its loop.
type Source = session.Session
