package gpu

import "unsafe"

// devPtr is a device address.
type devPtr uintptr

// kernel names one entry point of kernels/lct.cu.
type kernel int

const (
	kEncode kernel = iota
	kDecode
	kSampleHist
	kHist
	kSGDBF16
	kAdamWBF16
	kSGDLCT
	kSGDLCTOverflow
	kAdamWLCT
	kAdamWLCTOverflow
	kFillGaussian
	kEncodeBatch
	kEncodeBatchHist
	kDecodeBatch
	kBatchClearErrors
	kDecodePipe
	kDecodeBatchPipe
	numKernels
)

var kernelNames = [numKernels]string{
	kEncode:           "lct_encode",
	kDecode:           "lct_decode",
	kSampleHist:       "lct_sample_hist",
	kHist:             "lct_hist",
	kSGDBF16:          "lct_sgd_bf16",
	kAdamWBF16:        "lct_adamw_bf16",
	kSGDLCT:           "lct_sgd_lct",
	kSGDLCTOverflow:   "lct_sgd_lct_ovf",
	kAdamWLCT:         "lct_adamw_lct",
	kAdamWLCTOverflow: "lct_adamw_lct_ovf",
	kFillGaussian:     "lct_fill_gaussian",
	kEncodeBatch:      "lct_encode_batch",
	kEncodeBatchHist:  "lct_encode_batch_hist",
	kDecodeBatch:      "lct_decode_batch",
	kBatchClearErrors: "lct_batch_clear_errors",
	kDecodePipe:       "lct_decode_pipe",
	kDecodeBatchPipe:  "lct_decode_batch_pipe",
}

// deviceInfo is what the host code sizes launches by.
type deviceInfo struct {
	Name            string
	SMs             int
	MaxSmemPerBlock int  // dynamic shared memory a CTA may have, bytes
	Emulated        bool // the CPU emulation, not a GPU
}

// driver is what Device needs of CUDA: the driver API (build tag cuda) or
// the CPU emulation (build tag kernelemu). Its methods run between enter and
// exit, which the CUDA driver uses to make its context current on the
// calling OS thread. Launches and device-to-device copies are asynchronous;
// copies to and from the host wait for the work before them.
type driver interface {
	enter() error
	exit()
	info() deviceInfo
	alloc(bytes int) (devPtr, error)
	free(p devPtr) error
	htod(dst devPtr, src unsafe.Pointer, bytes int) error
	dtoh(dst unsafe.Pointer, src devPtr, bytes int) error
	dtod(dst, src devPtr, bytes int) error
	memset32(dst devPtr, v uint32, words int) error
	launch(k kernel, grid, block, smem int, args []uint64) error
	synchronize() error
	newEvent() (event, error)
	// useSideStream moves the driver's later work to a stream of its own
	// that does not wait for the legacy default stream, with ring events
	// to mark it by; afterDefault, markSide and holdDefault order the two
	// (see side.go).
	useSideStream(ring int) error
	afterDefault() error
	markSide(i int) error
	holdDefault(i int) error
	// delay queues a memset of words at p on the side stream (side) or on
	// the legacy default stream: work that only takes time (side.go).
	delay(side bool, p devPtr, words int) error
	// close releases the driver; it runs between enter and exit and does
	// the exit itself.
	close() error
}

// event marks a point in the device's work, for timing.
type event interface {
	record() error
	// since waits for the event and returns the milliseconds from start to it.
	since(start event) (float64, error)
	destroy()
}

// openEmulation, set in a build with the kernels' CPU emulation, opens it
// in place of a GPU.
var openEmulation func(ordinal int) (driver, error)

func openDriver(ordinal int) (driver, error) {
	if openEmulation != nil {
		return openEmulation(ordinal)
	}
	return openCUDADriver(ordinal)
}
