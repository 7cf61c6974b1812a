//go:build kernelemu

package gpu

// void lct_emu_set_lazy_prefix(int period);
import "C"

// setLazyPrefix makes only every period-th block of an emulated encode
// publish its inclusive prefix (kernels/lct.cu, LCT_LAZY_PREFIX), so that
// the look-back of the blocks after the others adds aggregates over several
// windows; 0 restores the normal protocol. Tests only.
func setLazyPrefix(period int) { C.lct_emu_set_lazy_prefix(C.int(period)) }
