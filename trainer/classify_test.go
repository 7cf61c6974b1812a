package trainer

import (
	"lcttop/session"
	"testing"
)

func TestClassifyTensor(t *testing.T) {
	trainerFile := map[string]string{"lcttop.format": checkpointFormat}
	cases := []struct {
		name string
		meta map[string]string
		want session.TensorClass
	}{
		{"model.layers.0.self_attn.q_proj.weight", nil, session.ClassWeight},
		{"lm_head.weight", nil, session.ClassWeight},
		{"encoder.layer.3.output.dense.bias", nil, session.ClassWeight},
		{"param.blocks.0.fc.weight", nil, session.ClassWeight},
		{"state.12.exp_avg", nil, session.ClassAdamM},
		{"optimizer/state/12/exp_avg_sq", nil, session.ClassAdamV},
		{"exp_avg.blocks.0.fc.weight", nil, session.ClassAdamM},
		{"exp_avg_sq.blocks.0.fc.weight", nil, session.ClassAdamV},
		{"momentum_buffer.blocks.0.fc.weight", nil, session.ClassMomentum},
		{"grad.blocks.0.fc.weight", nil, session.ClassGradient},
		{"blocks.0.fc.weight_grad", nil, session.ClassGradient},
		{"rotary_emb.inv_freq", nil, session.ClassOther},
		{"step", nil, session.ClassOther},
		{"blk0.qkv.w", trainerFile, session.ClassWeight},
		{"blk0.qkv.w.m", trainerFile, session.ClassAdamM},
		{"blk0.qkv.w.v", trainerFile, session.ClassAdamV},
		{"wte.mom", trainerFile, session.ClassMomentum},
		{"blk0.qkv.w.v", nil, session.ClassOther}, // the trainer's suffixes only in its own files
		{"blocks.0.fc.weight", map[string]string{"kind": "adam_m"}, session.ClassAdamM},
		{"blocks.0.fc.weight", map[string]string{"kind": "grad"}, session.ClassGradient},
		{"blocks.0.fc.weight", map[string]string{"kind": "weight"}, session.ClassWeight},
		{"momentum.blocks.0.fc.weight", map[string]string{"kind": "weight"}, session.ClassMomentum},
	}
	for _, c := range cases {
		if got := ClassifyTensor(c.name, c.meta); got != c.want {
			t.Errorf("ClassifyTensor(%q) = %s, want %s", c.name, got, c.want)
		}
	}
}
