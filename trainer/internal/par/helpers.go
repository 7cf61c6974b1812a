package par

import (
	"runtime"
	"sync/atomic"
	"time"
)

// spinFor is how long a helper that has finished its work waits awake for
// the next before it sleeps. A training step runs one short parallel loop
// after another; on a virtual machine, waking a sleeping core takes about
// as long as a short loop's work, so a helper started anew for each loop
// would join it when it is nearly over.
const spinFor = 200 * time.Microsecond

// helper is a goroutine that runs the pieces of parallel loops and stays
// between them: awake for spinFor, then asleep until given work.
type helper struct {
	fn    func()       // the next job, set before state says jobReady
	state atomic.Int32 // helperAwake, helperAsleep or jobReady
	wake  chan struct{}
}

const (
	helperAwake int32 = iota
	helperAsleep
	jobReady
)

// idleHelpers holds the helpers waiting for work.
var idleHelpers = make(chan *helper, 256)

// yielding counts the goroutines that run beside the loops (an encode in
// flight): while there are any, a helper sleeps at once rather than hold a
// core that they need.
var yielding atomic.Int32

// Yield marks a goroutine that needs a core beside the loops' own until
// the returned func is called.
func Yield() (done func()) {
	yielding.Add(1)
	return func() { yielding.Add(-1) }
}

// spawn runs fn on an idle helper, or on a new goroutine when none waits
// (the first loops, or loops running side by side); the goroutine stays on
// as a helper.
func spawn(fn func()) {
	select {
	case h := <-idleHelpers:
		h.fn = fn
		// One swap both hands the job over and learns whether the helper
		// sleeps, so a wake is never sent to a later wait.
		if h.state.Swap(jobReady) == helperAsleep {
			h.wake <- struct{}{}
		}
	default:
		h := &helper{wake: make(chan struct{}, 1)}
		go h.loop(fn)
	}
}

func (h *helper) loop(fn func()) {
	for {
		fn()
		select {
		case idleHelpers <- h:
		default:
			return // enough helpers wait already
		}
		fn = h.next()
	}
}

// next waits for the helper's next job: awake (yielding the core to any
// goroutine ready on it) for spinFor, then asleep.
func (h *helper) next() func() {
	start := time.Now()
	for h.state.Load() != jobReady && yielding.Load() == 0 && time.Since(start) < spinFor {
		runtime.Gosched()
	}
	if h.state.CompareAndSwap(helperAwake, helperAsleep) {
		<-h.wake
	}
	h.state.Store(helperAwake)
	fn := h.fn
	h.fn = nil
	return fn
}
