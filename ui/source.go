package ui

import "lcttop/trainer"

// Source is what the UI drives: the trainer's control surface. The real
// *trainer.Trainer satisfies it; tests use ui/fake.
//
// Pause, Resume, StepOnce and Stop are called from the UI's event loop and
// must return promptly. SetClassCodec and Detail may take a while (a class
// is re-encoded, a block copied out); the UI calls them off its loop.
type Source interface {
	Snapshots() <-chan trainer.Snapshot
	Pause()
	Resume()
	StepOnce()
	Stop()
	SetClassCodec(c trainer.TensorClass, cc trainer.ClassCodec) error
	ClassCodec(c trainer.TensorClass) trainer.ClassCodec
	Detail(name string) (trainer.TensorDetail, error)
}
