package gpu

import "unsafe"

// Ptr is a device address.
// Ptr is a device address (in the CPU emulation, a host address): one type
// from the trainer to the kernels.
type Ptr uintptr

// Add returns p moved by bytes.
func (p Ptr) Add(bytes int64) Ptr { return Ptr(int64(p) + bytes) }

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
	kDecode3
	kMeasure3
	kEncode3
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
	kDecode3:          "lct_decode3",
	kMeasure3:         "lct_measure3",
	kEncode3:          "lct_encode3",
}

// deviceInfo is what the host code sizes launches by.
type deviceInfo struct {
	Name            string
	SMs             int
	MaxSmemPerBlock int    // dynamic shared memory a CTA may have, bytes
	Emulated        bool   // the CPU emulation, not a GPU
	JITNote         string // why the driver's JIT cache cannot keep the compiled kernels, or ""
}

// driver is what Device needs of CUDA: the driver API (cudaDriver) or the
// CPU emulation (emuDriver). The codec's methods run between enter and
// exit, which the CUDA driver uses to make its context current on the
// calling OS thread. Launches and device-to-device copies are asynchronous;
// copies to and from the host wait for the work before them.
type driver interface {
	enter() error
	exit()
	info() deviceInfo
	alloc(bytes int) (Ptr, error)
	free(p Ptr) error
	htod(dst Ptr, src unsafe.Pointer, bytes int) error
	dtoh(dst unsafe.Pointer, src Ptr, bytes int) error
	dtod(dst, src Ptr, bytes int) error
	memset32(dst Ptr, v uint32, words int) error
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
	delay(side bool, p Ptr, words int) error
	// close releases the driver; it runs between enter and exit and does
	// the exit itself.
	close() error

	// The compute stream (Compute): the legacy default stream, whatever
	// the codec's stream is. launchCompute runs a kernel of gpt.cu by
	// name; gemm a product through cuBLAS. htodCompute returns once src is
	// staged; dtohCompute waits for the work before it; synchronizeAll for
	// the work of every stream.
	makeCurrent() error
	prepareCompute() error
	launchCompute(name string, grid, block int, args []uint64, sizes []uint8) error
	gemm(g Gemm) error
	htodCompute(dst Ptr, src unsafe.Pointer, bytes int) error
	dtohCompute(dst unsafe.Pointer, src Ptr, bytes int) error
	dtodCompute(dst, src Ptr, bytes int) error
	memsetCompute(p Ptr, b byte, bytes int) error
	synchronizeAll() error
	memInfo() (free, total int64, err error)
	newComputeEvent() (Event, error)
	recordComputeEvent(e Event) error
	computeEventMillis(a, b Event) (float32, error)
	destroyComputeEvent(e Event) error
}

// event marks a point in the device's work, for timing.
type event interface {
	record() error
	// since waits for the event and returns the milliseconds from start to it.
	since(start event) (float64, error)
	destroy()
}
