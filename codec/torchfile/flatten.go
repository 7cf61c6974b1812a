package torchfile

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/nlpodyssey/gopickle/types"
)

// flatTensor is a tensor the pickle holds, under its dotted name.
type flatTensor struct {
	name string
	ref  *tensorRef
}

// flattener walks an unpickled object into dotted names.
type flattener struct {
	tensors []flatTensor
	meta    map[string]string
	// optimizers are the optimizer state dicts met, named in a second pass.
	optimizers []optimizerDict
	// dicts are the tensors each dict holds directly or below it, by the
	// dict's name, to name an optimizer's parameters from a sibling.
	dicts map[string][]flatTensor
	order []string // dict names as met
}

// optimizerDict is an optimizer's state_dict(): state by parameter id,
// param_groups listing the ids in the order of the model's parameters.
type optimizerDict struct {
	name   string
	parent string
	first  int // index in tensors of its first state tensor
	states []optState
	ids    []int64  // every parameter id, in param_groups order
	names  []string // param_names, where the optimizer saved them
}

type optState struct {
	id   int64
	key  string
	at   int // index in tensors
	size []int64
}

// entries lists a dict's key/value pairs in order.
func entries(v interface{}) ([][2]interface{}, bool) {
	switch d := v.(type) {
	case *types.Dict:
		out := make([][2]interface{}, len(*d))
		for i, e := range *d {
			out[i] = [2]interface{}{e.Key, e.Value}
		}
		return out, true
	case *types.OrderedDict:
		var out [][2]interface{}
		for e := d.List.Front(); e != nil; e = e.Next() {
			en := e.Value.(*types.OrderedDictEntry)
			out = append(out, [2]interface{}{en.Key, en.Value})
		}
		return out, true
	}
	return nil, false
}

func items(v interface{}) ([]interface{}, bool) {
	switch l := v.(type) {
	case *types.List:
		return *l, true
	case *types.Tuple:
		return *l, true
	}
	return nil, false
}

func keyString(k interface{}) string {
	switch x := k.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case *big.Int:
		return x.String()
	}
	return fmt.Sprint(k)
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func (f *flattener) walk(name string, v interface{}) {
	if f.dicts == nil {
		f.dicts = map[string][]flatTensor{}
	}
	switch x := v.(type) {
	case *tensorRef:
		ft := flatTensor{name: name, ref: x}
		f.tensors = append(f.tensors, ft)
		return
	case *types.Dict, *types.OrderedDict:
		es, _ := entries(x)
		if f.optimizer(name, es) {
			return
		}
		before := len(f.tensors)
		for _, e := range es {
			k := keyString(e[0])
			if n, ok := asInt(e[1]); ok && name == "" && isStepKey(k) {
				f.meta["step"] = strconv.FormatInt(n, 10)
			}
			f.walk(join(name, k), e[1])
		}
		f.dicts[name] = f.tensors[before:len(f.tensors):len(f.tensors)]
		f.order = append(f.order, name)
		return
	}
	if list, ok := items(v); ok {
		for i, it := range list {
			f.walk(join(name, strconv.Itoa(i)), it)
		}
	}
}

func isStepKey(k string) bool {
	return k == "step" || k == "global_step" || k == "iteration" || k == "iter"
}

// optimizer takes a dict that is an optimizer's state_dict (keys state and
// param_groups, groups listing params): its state tensors are named for
// now by id, and after the walk by parameter (nameOptimizerStates).
func (f *flattener) optimizer(name string, es [][2]interface{}) bool {
	var state, groups interface{}
	for _, e := range es {
		switch e[0] {
		case "state":
			state = e[1]
		case "param_groups":
			groups = e[1]
		}
	}
	stateEntries, ok1 := entries(state)
	groupList, ok2 := items(groups)
	if !ok1 || !ok2 {
		return false
	}
	od := optimizerDict{name: name, parent: parentOf(name), first: len(f.tensors)}
	for _, g := range groupList {
		ges, ok := entries(g)
		if !ok {
			return false
		}
		for _, e := range ges {
			switch e[0] {
			case "params":
				ids, ok := intTuple(e[1])
				if !ok {
					return false
				}
				od.ids = append(od.ids, ids...)
			case "param_names":
				if ns, ok := items(e[1]); ok {
					for _, n := range ns {
						s, _ := n.(string)
						od.names = append(od.names, s)
					}
				}
			}
		}
	}
	for _, se := range stateEntries {
		id, ok := asInt(se[0])
		if !ok {
			return false
		}
		ses, ok := entries(se[1])
		if !ok {
			continue
		}
		for _, e := range ses {
			k := keyString(e[0])
			ref, ok := e[1].(*tensorRef)
			if !ok {
				continue
			}
			od.states = append(od.states, optState{id: id, key: k, at: len(f.tensors), size: ref.shape})
			f.tensors = append(f.tensors, flatTensor{name: join(name, "state."+strconv.FormatInt(id, 10)+"."+k), ref: ref})
		}
	}
	f.optimizers = append(f.optimizers, od)
	return true
}

func parentOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '.' {
			return name[:i]
		}
	}
	return ""
}

// nameOptimizerStates renames each optimizer's state tensors after their
// parameters: from param_names where saved, else from the model state
// dict beside the optimizer's (the sibling dict with the most tensors):
// param_groups list the parameters in the model's order, and a state has
// its parameter's shape, which tells parameters from buffers. Where no
// name is found a state keeps its id.
func (f *flattener) nameOptimizerStates() {
	for _, od := range f.optimizers {
		names := map[int64]string{}
		if len(od.names) == len(od.ids) {
			for i, id := range od.ids {
				names[id] = od.names[i]
			}
		} else if model, prefix := f.siblingModel(od); model != nil {
			names = matchParams(od, model, prefix)
		}
		for _, s := range od.states {
			if n, ok := names[s.id]; ok && n != "" {
				f.tensors[s.at].name = join(od.name, "state."+n+"."+s.key)
			}
		}
	}
}

// siblingModel is the dict beside an optimizer's with the most tensors.
func (f *flattener) siblingModel(od optimizerDict) ([]flatTensor, string) {
	var best []flatTensor
	bestName := ""
	for _, name := range f.order {
		if name == "" || name == od.name || parentOf(name) != od.parent {
			continue
		}
		if ts := f.dicts[name]; len(ts) > len(best) {
			best, bestName = ts, name
		}
	}
	return best, bestName
}

// matchParams pairs parameter ids, in param_groups order, with the model's
// tensors in order: by order alone where there are as many, else each id
// with a state takes the next tensor of its state's shape.
func matchParams(od optimizerDict, model []flatTensor, prefix string) map[int64]string {
	rel := func(ft flatTensor) string { return ft.name[len(prefix)+1:] }
	names := map[int64]string{}
	if len(model) == len(od.ids) {
		for i, id := range od.ids {
			names[id] = rel(model[i])
		}
		return names
	}
	shape := map[int64][]int64{}
	for _, s := range od.states {
		shape[s.id] = s.size
	}
	next := 0
	for _, id := range od.ids {
		want, ok := shape[id]
		if !ok {
			continue // no state: nothing to name, and no shape to place it by
		}
		for next < len(model) && !slices.Equal(model[next].ref.shape, want) {
			next++
		}
		if next == len(model) {
			return map[int64]string{} // the model is not this optimizer's: keep the ids
		}
		names[id] = rel(model[next])
		next++
	}
	return names
}
