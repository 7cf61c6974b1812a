package ui

import "lcttop/trainer"

// Source is what the UI drives: a training run, a checkpoint file or a run
// folder. The real *trainer.Trainer and the checkpoint sessions satisfy it;
// tests use ui/fake.
//
// Pause, Resume, StepOnce and Stop are called from the UI's event loop and
// must return promptly. SetClassCodec and Detail may take a while (a class
// is re-encoded, a block copied out); the UI calls them off its loop.
type Source = trainer.Session
