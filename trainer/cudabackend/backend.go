package cudabackend

import (
	"errors"
	"fmt"
	"math"
	"time"

	"lcttop/trainer/cudabackend/device"
)

// ErrNoLCTStore is returned when the LCT run is asked for: the compressed
// store on the GPU is not built yet (it needs device-pointer access to
// package gpu's tensors, see the package documentation).
var ErrNoLCTStore = errors.New("CUDA backend: the LCT (compressed) store on the GPU is not built yet; only the dense run is available")

// Backend trains on one GPU: the dense shadow run and, when built, the LCT
// run, in lockstep on the same batches, both drawing device memory from one
// pool while each keeps its own ledger.
type Backend struct {
	dev    device.Device
	pool   *Pool
	Shadow *Run
	LCT    *Run // nil: the LCT store is not built yet
}

// New sets up the runs of cfg on dev (not taking ownership of dev) from the
// starting values vals. lct asks for the compressed run beside the shadow.
func New(dev device.Device, cfg Config, vals map[string][]uint16, lct bool) (*Backend, error) {
	if lct {
		return nil, ErrNoLCTStore
	}
	pool := NewPool(dev)
	mem := NewMem(pool, cfg.Budget)
	r, err := newRun("shadow", cfg, mem, &denseStore{mem: mem, ops: NewOps(mem)})
	if err != nil {
		return nil, err
	}
	b := &Backend{dev: dev, pool: pool, Shadow: r}
	if err := r.Load(vals); err != nil {
		b.Close()
		return nil, fmt.Errorf("shadow run: %w", err)
	}
	r.ResetPeak()
	return b, nil
}

// Device is the GPU the backend trains on.
func (b *Backend) Device() device.Device { return b.dev }

// Pool is the device memory the runs draw on.
func (b *Backend) Pool() *Pool { return b.pool }

// StepResult is one lockstep step of both runs.
type StepResult struct {
	Step                   int
	LossShadow, LossLCT    float32
	TimeShadow, TimeLCT    time.Duration
	BitIdentical           bool // the losses' bits agree (true when there is no LCT run)
	PeakShadow, PeakLCT    int64
	PoolHeld, PoolHeldPeak int64 // device memory the pool holds for both runs
}

// Step trains both runs on batch for step (from 1).
func (b *Backend) Step(batch Batch, step int) (StepResult, error) {
	res := StepResult{Step: step, BitIdentical: true}
	var err error
	res.LossShadow, res.TimeShadow, err = b.Shadow.TrainStep(batch.Tokens, batch.Targets, step)
	if err != nil {
		return res, err
	}
	res.PeakShadow = b.Shadow.Memory().PeakTotal
	if b.LCT != nil {
		res.LossLCT, res.TimeLCT, err = b.LCT.TrainStep(batch.Tokens, batch.Targets, step)
		if err != nil {
			return res, err
		}
		res.BitIdentical = math.Float32bits(res.LossLCT) == math.Float32bits(res.LossShadow)
		res.PeakLCT = b.LCT.Memory().PeakTotal
	}
	res.PoolHeld, res.PoolHeldPeak = b.pool.Held()
	return res, nil
}

// Close frees the runs' memory (the device stays open).
func (b *Backend) Close() error {
	for _, r := range []*Run{b.Shadow, b.LCT} {
		if r != nil {
			r.Close()
		}
	}
	return b.pool.Trim()
}
