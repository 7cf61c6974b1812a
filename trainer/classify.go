package trainer

import (
	"lcttop/session"
	"strings"
)

// ClassifyTensor places a tensor of a checkpoint file in a class from its
// name, the way training frameworks name what they save: optimizer states
// (exp_avg and exp_avg_sq of Adam, momentum buffers), gradients, weights
// (names ending in weight or bias, or that say param or model). A file this
// trainer wrote (metadata lcttop.format) is read with the trainer's own
// names: ".m", ".v", ".mom" for states, the rest weights. A file whose
// metadata says what it holds ("kind": "adam_m", "grad", ...) gives that
// class to the tensors whose names do not say otherwise. Anything else is
// ClassOther. lcttop open and pack --plan share it, so a plan's class
// entries reach the same tensors in both.
func ClassifyTensor(name string, metadata map[string]string) session.TensorClass {
	c := classifyName(name, metadata)
	if c == session.ClassWeight || c == session.ClassOther {
		if k := metadata["kind"]; k != "" {
			if kc := classifyName(k, nil); kc != session.ClassOther {
				return kc
			}
			if k == "weight" || k == "weights" || k == "params" {
				return session.ClassWeight
			}
		}
	}
	return c
}

func classifyName(name string, metadata map[string]string) session.TensorClass {
	if strings.HasPrefix(metadata["lcttop.format"], "lcttop-trainer/") {
		switch {
		case strings.HasSuffix(name, ".m"):
			return session.ClassAdamM
		case strings.HasSuffix(name, ".v"):
			return session.ClassAdamV
		case strings.HasSuffix(name, ".mom"):
			return session.ClassMomentum
		}
		return session.ClassWeight
	}
	parts := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return r == '.' || r == '/' || r == ':' || r == '#' || r == '@' || r == '[' || r == ']'
	})
	has := func(words ...string) bool {
		for _, p := range parts {
			for _, w := range words {
				if p == w {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("exp_avg_sq", "exp_avg_sqs", "max_exp_avg_sq", "adam_v", "second_moment", "exp_avg_sq_row", "exp_avg_sq_col"):
		return session.ClassAdamV
	case has("exp_avg", "exp_avgs", "adam_m", "first_moment"):
		return session.ClassAdamM
	case has("momentum_buffer", "momentum", "momentum_buffers"):
		return session.ClassMomentum
	case has("grad", "grads", "gradient", "gradients") || strings.HasSuffix(strings.ToLower(name), "_grad"):
		return session.ClassGradient
	case has("act", "acts", "activation", "activations"):
		return session.ClassActivation
	case has("weight", "weights", "bias", "param", "params", "parameters", "model", "module", "model_state_dict"):
		return session.ClassWeight
	}
	return session.ClassOther
}
