package trainer

import (
	"lcttop/codec"
	"lcttop/session"
)

// A chunk's full fit (its split histogram, the optimal construction over
// up to seven alphabets, the layout) costs more than encoding it, and most
// chunks hold values of much the same distribution step after step. So a
// chunk keeps what its last full fit chose and, until planUses encodes
// have gone by (or its class setting changes), codes under it:
//
//   - the same codebook and layout, while they code the values in at most
//     1/planSlack more bytes than the full fit did and the values' sign is
//     still the layout's (weights, which move little a step); the first
//     encode that misses that is redone, and the chunk goes on to
//   - a fresh codebook of the same alphabet (split and sign in the symbol):
//     one histogram and one construction (activations, a new batch's
//     values each step);
//   - no encoding at all where the full fit's was not smaller than the
//     values (tensors too small to pay for a block's header and streams).
//
// Every choice decodes to the same values; only the bytes stored differ.
const (
	planSlack = 256
	planUses  = 16
)

// planMode is how a chunk codes its values until its next full fit.
type planMode uint8

const (
	planFull  planMode = iota // no plan yet: fit fully
	planKeep                  // the kept codebook and layout
	planSplit                 // a fresh codebook of the kept alphabet
	planRaw                   // stored as it is
)

// chunkPlan is what a chunk's last full fit chose. The kept codebook and
// layout are those of the chunk's encoding itself, which stays while the
// chunk is stored encoded (an activation's goes at its last use: it then
// codes at the kept alphabet).
type chunkPlan struct {
	mode     planMode
	fitted   bool // a full fit has been made
	cc       session.ClassCodec
	split    uint8 // the alphabet fitted: split k,
	signed   bool  // the sign in the symbol
	fitBytes int   // the stored bytes of the encode right after the full fit
	uses     int   // encodes since the full fit, that one included
}

// encode codes src into t under the plan, fitting fully where the plan is
// spent, and reports raw when the chunk is to be stored as it is (t then
// holds nothing of src). held says t holds the chunk's last encoding. A
// chunk's first plan lasts planUses − stagger mod planUses encodes, so
// that the chunks of a run do not all refit at the same step. After an
// error the next encode fits fully.
func (p *chunkPlan) encode(e *codec.Encoder, t *codec.Tensor, held bool, src []uint16, cc session.ClassCodec, stagger int) (raw bool, err error) {
	raw, err = p.encodeUnder(e, t, held, src, cc, stagger)
	if err != nil {
		p.mode = planFull
	}
	return raw, err
}

func (p *chunkPlan) encodeUnder(e *codec.Encoder, t *codec.Tensor, held bool, src []uint16, cc session.ClassCodec, stagger int) (raw bool, err error) {
	if p.mode != planFull && (p.cc != cc || p.uses >= planUses) {
		p.mode = planFull
	}
	if p.mode == planKeep && !held && cc.Dist == codec.Empirical {
		p.mode = planSplit
	}
	next := planKeep
	switch p.mode {
	case planRaw:
		p.uses++
		return true, nil
	case planKeep:
		if held && codec.SignOf(src) == t.Layout.Sign {
			err := e.Encode(t, src, t.Codebook, t.Layout)
			if err == nil && t.StoredBytes() <= p.fitBytes+p.fitBytes/planSlack {
				p.uses++
				return false, nil
			}
		}
		// The values moved: fit them fully now, then keep the alphabet
		// only.
		if cc.Dist == codec.Empirical {
			next = planSplit
		}
	case planSplit:
		p.uses++
		cb, layout := planAtSplit(src, cc.Preset, p.split, p.signed)
		return false, e.Encode(t, src, cb, layout)
	}
	cb, layout, err := codec.PlanOneCapacity(src, codec.Options{Preset: cc.Preset, Dist: cc.Dist})
	if err != nil {
		return false, err
	}
	if err := e.Encode(t, src, cb, layout); err != nil {
		return false, err
	}
	uses := 1
	if !p.fitted {
		uses += stagger % planUses
	}
	*p = chunkPlan{mode: next, fitted: true, cc: cc, split: cb.Split, signed: cb.Signed, fitBytes: t.StoredBytes(), uses: uses}
	if p.fitBytes >= 2*len(src) {
		p.mode = planRaw
		return true, nil
	}
	return false, nil
}

// planAtSplit is PlanOneCapacity's empirical plan with the alphabet fixed:
// split k, the sign in the symbol where signed and the values' signs
// differ.
func planAtSplit(src []uint16, p codec.Preset, k uint8, signed bool) (codec.Codebook, codec.Layout) {
	full := codec.FullSplitHistogram(src)
	sign := full.Sign()
	cb := codec.FitSplitCodebookK(&full, k, signed && sign == codec.SignMixed)
	layout := codec.ChooseSplitLayout(p, &cb, &full).WithVersion(codec.FormatVersion3)
	layout.Sign = sign
	return cb, layout
}
