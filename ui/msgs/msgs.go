// Package msgs holds the messages the UI's components exchange, in one place
// so that the root model and the components agree on them.
package msgs

import "lcttop/session"

// Snapshot carries the newest trainer snapshot the UI took from its source.
// Older snapshots that arrived meanwhile were dropped (coalesced).
type Snapshot struct {
	Snapshot session.Snapshot
}

// SnapshotsClosed says the source's snapshot channel was closed: no more
// snapshots will come.
type SnapshotsClosed struct{}

// TrainerDone says the trainer's Run returned; Err is nil when it finished
// its steps or was stopped.
type TrainerDone struct {
	Err error
}

// Device is the UI's copy of gpu.DeviceStatus, so that ui does not import the
// gpu package; cmd/lcttop converts one into the other.
type Device struct {
	Available        bool
	Err              string // why NVML is not available
	Name, Driver     string
	MemUsed          uint64 // bytes
	MemTotal         uint64 // bytes
	ProcessMem       uint64 // this process's GPU memory, bytes
	UtilGPU, UtilMem uint32 // percent
	ClockSM          uint32 // MHz
	ClockMem         uint32 // MHz
	PowerW           float64
}

// DeviceStatus carries one NVML poll.
type DeviceStatus struct {
	Device Device
}

// Error reports a failure of one part of the program (trainer, NVML,
// export, codec change). The UI shows the newest error of each source.
type Error struct {
	Source string // "trainer", "NVML", "export", ...
	Err    error
}

// Exported reports an export of the current snapshot: the files written.
type Exported struct {
	Paths []string
	Err   error
}

// CodecSet reports the result of a SetClassCodec call, or with Tensor set
// of a SetTensorCodec call (Class is then the tensor's class), or of a
// ClearTensorCodec call with FollowClass set.
type CodecSet struct {
	Tensor      string
	Class       session.TensorClass
	Codec       session.ClassCodec
	FollowClass bool
	Err         error
}
