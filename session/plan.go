package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// PlanFormat names the plan file's layout.
const PlanFormat = "lcttop-plan/1"

// Plan is a codec choice per tensor class and per tensor: what the UI's
// export writes for a checkpoint and lcttop pack --plan applies. A tensor
// takes its own entry, else its class's (ClassifyTensor), else the
// packer's default.
type Plan struct {
	Classes map[TensorClass]ClassCodec
	Tensors map[string]ClassCodec
}

// Codec returns the choice for tensor name of class c; ok is false when
// the plan names neither.
func (p *Plan) Codec(name string, c TensorClass) (cc ClassCodec, ok bool) {
	if cc, ok = p.Tensors[name]; ok {
		return cc, true
	}
	cc, ok = p.Classes[c]
	return cc, ok
}

// planFile is the JSON form: codecs as "preset/dist". ParsePlan reads
// them as text so that an error names the entry.
type planFile struct {
	Format  string            `json:"format"`
	Classes map[string]string `json:"classes"`
	Tensors map[string]string `json:"tensors"`
}

// MarshalJSON writes the plan with its format name, keys sorted.
func (p Plan) MarshalJSON() ([]byte, error) {
	f := struct {
		Format  string                     `json:"format"`
		Classes map[TensorClass]ClassCodec `json:"classes"`
		Tensors map[string]ClassCodec      `json:"tensors"`
	}{PlanFormat, p.Classes, p.Tensors}
	if f.Classes == nil {
		f.Classes = map[TensorClass]ClassCodec{}
	}
	if f.Tensors == nil {
		f.Tensors = map[string]ClassCodec{}
	}
	return json.Marshal(f)
}

// Encode returns the plan as indented JSON with a trailing newline.
func (p Plan) Encode() ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// FileClasses are the classes a checkpoint file's tensors fall in, in
// display order.
var FileClasses = []TensorClass{ClassWeight, ClassGradient, ClassMomentum, ClassAdamM, ClassAdamV, ClassActivation, ClassOther}

// ParsePlan reads a plan file; errors name the entry that is wrong.
func ParsePlan(b []byte) (*Plan, error) {
	var f planFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a plan file: %v", err)
	}
	if f.Format != PlanFormat {
		return nil, fmt.Errorf("not a plan file: format %q, want %q", f.Format, PlanFormat)
	}
	p := &Plan{Classes: map[TensorClass]ClassCodec{}, Tensors: map[string]ClassCodec{}}
	for c, s := range f.Classes {
		if !slices.Contains(FileClasses, TensorClass(c)) {
			return nil, fmt.Errorf("plan: classes: unknown class %q", c)
		}
		cc, err := ParseClassCodec(s)
		if err != nil {
			return nil, fmt.Errorf("plan: class %s: %w", c, err)
		}
		p.Classes[TensorClass(c)] = cc
	}
	for n, s := range f.Tensors {
		cc, err := ParseClassCodec(s)
		if err != nil {
			return nil, fmt.Errorf("plan: tensor %s: %w", n, err)
		}
		p.Tensors[n] = cc
	}
	return p, nil
}
