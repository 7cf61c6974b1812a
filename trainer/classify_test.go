package trainer

import "testing"

func TestClassifyTensor(t *testing.T) {
	trainerFile := map[string]string{"lcttop.format": checkpointFormat}
	cases := []struct {
		name string
		meta map[string]string
		want TensorClass
	}{
		{"model.layers.0.self_attn.q_proj.weight", nil, ClassWeight},
		{"lm_head.weight", nil, ClassWeight},
		{"encoder.layer.3.output.dense.bias", nil, ClassWeight},
		{"param.blocks.0.fc.weight", nil, ClassWeight},
		{"state.12.exp_avg", nil, ClassAdamM},
		{"optimizer/state/12/exp_avg_sq", nil, ClassAdamV},
		{"exp_avg.blocks.0.fc.weight", nil, ClassAdamM},
		{"exp_avg_sq.blocks.0.fc.weight", nil, ClassAdamV},
		{"momentum_buffer.blocks.0.fc.weight", nil, ClassMomentum},
		{"grad.blocks.0.fc.weight", nil, ClassGradient},
		{"blocks.0.fc.weight_grad", nil, ClassGradient},
		{"rotary_emb.inv_freq", nil, ClassOther},
		{"step", nil, ClassOther},
		{"blk0.qkv.w", trainerFile, ClassWeight},
		{"blk0.qkv.w.m", trainerFile, ClassAdamM},
		{"blk0.qkv.w.v", trainerFile, ClassAdamV},
		{"wte.mom", trainerFile, ClassMomentum},
		{"blk0.qkv.w.v", nil, ClassOther}, // the trainer's suffixes only in its own files
		{"blocks.0.fc.weight", map[string]string{"kind": "adam_m"}, ClassAdamM},
		{"blocks.0.fc.weight", map[string]string{"kind": "grad"}, ClassGradient},
		{"blocks.0.fc.weight", map[string]string{"kind": "weight"}, ClassWeight},
		{"momentum.blocks.0.fc.weight", map[string]string{"kind": "weight"}, ClassMomentum},
	}
	for _, c := range cases {
		if got := ClassifyTensor(c.name, c.meta); got != c.want {
			t.Errorf("ClassifyTensor(%q) = %s, want %s", c.name, got, c.want)
		}
	}
}
