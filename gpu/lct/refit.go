package lct

import (
	"lcttop/codec"
	"lcttop/session"
)

// A key's refit (a codebook fitted to its last histogram, package-merge
// lengths for an empirical code, and the layout for it) is host work of
// tens of microseconds, wanted at the key's next encode, a step later for
// most keys. Done at that encode, a step's few hundred fits held the host
// while the device ran dry; so the settle that reads a histogram starts
// its refit on another goroutine, and the encode takes the result, which
// is what refit would have computed there: the same inputs (the key's
// codebook and class setting, the histogram) give the same codebook and
// layout, so the bytes written do not change.

// refitJob is one refit computed beside the step.
type refitJob struct {
	from codec.Codebook // the key's codebook when it started
	cc   session.ClassCodec
	hist codec.Histogram
	done chan struct{}
	cb   codec.Codebook
	lay  codec.Layout
	ok   bool // false: an empty histogram, nothing to refit
}

// refitted is refit's decision as a function: the codebook and layout a key
// of codebook cb and setting cc takes for histogram h (ok false when h is
// empty: the key keeps what it has).
func refitted(cb codec.Codebook, cc session.ClassCodec, h *codec.Histogram) (codec.Codebook, codec.Layout, bool) {
	var total uint64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return cb, codec.Layout{}, false
	}
	cur := cb.ExpectedBits(h)
	if cur > h.Entropy()+refitSlack {
		// Only then can a fresh fit save refitSlack.
		if fresh := codec.FitCodebook(cc.Dist, h); cur > fresh.ExpectedBits(h)+refitSlack {
			cb = fresh
		}
	}
	return cb, codec.ChooseLayout(cc.Preset, &cb, h).WithVersion(codec.FormatVersion2), true
}

// startRefit starts k's refit for its histogram k.hist on another
// goroutine (replacing any not taken yet).
func startRefit(k *keyState) {
	j := &refitJob{from: k.cb, cc: k.cc, hist: k.hist, done: make(chan struct{})}
	k.job = j
	go func() {
		j.cb, j.lay, j.ok = refitted(j.from, j.cc, &j.hist)
		close(j.done)
	}()
}

// takeRefit applies k's refit for k.hist: the job's result when it was
// started from what k holds now (waiting for it if it has not finished),
// else computed here.
func takeRefit(k *keyState) {
	j := k.job
	k.job = nil
	if j == nil || j.from != k.cb || j.cc != k.cc || j.hist != k.hist {
		cb, lay, ok := refitted(k.cb, k.cc, &k.hist)
		applyRefit(k, cb, lay, ok)
		return
	}
	<-j.done
	applyRefit(k, j.cb, j.lay, j.ok)
}

func applyRefit(k *keyState, cb codec.Codebook, lay codec.Layout, ok bool) {
	if ok {
		k.cb, k.layout = cb, lay
	}
}

// refitSlack is how much worse, in bits per exponent under the latest
// histogram, a key's codebook may be than a fresh fit before it is
// refitted: a new codebook costs an upload of its tables (queued, no wait)
// and, when the layout changes, a new tensor. Refits fit to the full
// histogram, not the sample: the device counts it anyway for the figures.
const refitSlack = 0.02
