package trainer

import (
	"fmt"

	"lcttop/session"
	"lcttop/trainer/optim"
)

// optimizer is the update rule a run applies to each parameter as soon as
// its gradient is ready in the backward pass.
type optimizer interface {
	// states names the optimizer states a parameter needs: their class and
	// the suffix added to the parameter's name.
	states() []stateSpec
	// apply updates vals (the parameter, then its states) from gradient g at
	// step (from 1); element-wise, so it may be given a chunk at a time.
	apply(step int, decay bool, vals [][]uint16, g []uint16)
}

type stateSpec struct {
	class  session.TensorClass
	suffix string
}

type adamW struct{ optim.AdamW }

func (adamW) states() []stateSpec {
	return []stateSpec{{session.ClassAdamM, ".m"}, {session.ClassAdamV, ".v"}}
}

func (o adamW) apply(step int, decay bool, vals [][]uint16, g []uint16) {
	o.Step(step, decay).Update(vals[0], vals[1], vals[2], g)
}

type sgd struct{ optim.SGD }

func (sgd) states() []stateSpec { return []stateSpec{{session.ClassMomentum, ".mom"}} }

func (o sgd) apply(step int, decay bool, vals [][]uint16, g []uint16) {
	o.Step(step, decay).Update(vals[0], vals[1], g)
}

// OptimizerSettings is a named optimizer with its hyperparameters: exactly
// one of AdamW and SGD is set. Every backend builds its update rule from
// these, so all train with the same settings.
type OptimizerSettings struct {
	AdamW *optim.AdamW
	SGD   *optim.SGD
}

// NewOptimizerSettings is the named optimizer with its defaults; lr 0 takes
// the default learning rate. AdamW's β2 is 0.99 rather than GPT-2's 0.999
// because v is stored in BF16: with 8 significant bits, v·0.999 rounds back
// to v and the average would never decay.
func NewOptimizerSettings(name string, lr float64, warmup int) (OptimizerSettings, error) {
	switch name {
	case "adamw":
		if lr == 0 {
			lr = 3e-3
		}
		return OptimizerSettings{AdamW: &optim.AdamW{Schedule: optim.Schedule{LR: lr, Warmup: warmup}, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1}}, nil
	case "sgd":
		if lr == 0 {
			lr = 0.1
		}
		return OptimizerSettings{SGD: &optim.SGD{Schedule: optim.Schedule{LR: lr, Warmup: warmup}, Momentum: 0.9}}, nil
	}
	return OptimizerSettings{}, fmt.Errorf("unknown optimizer %q (choose adamw|sgd)", name)
}

// newOptimizer builds the update rule of the named optimizer (see
// NewOptimizerSettings).
func newOptimizer(name string, lr float64, warmup int) (optimizer, error) {
	s, err := NewOptimizerSettings(name, lr, warmup)
	switch {
	case err != nil:
		return nil, err
	case s.AdamW != nil:
		return adamW{*s.AdamW}, nil
	}
	return sgd{*s.SGD}, nil
}
