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
// calling OS thread.
//
// A driver has two streams. Its own methods of stream queue on the codec's
// stream: the default stream until useSideStream, then the side stream.
// compute is the default stream whatever the codec's stream is: Compute
// queues there.
type driver interface {
	stream
	compute() stream

	enter() error
	// makeCurrent makes the context current on the calling thread for the
	// compute view, leaving enter's saved context alone.
	makeCurrent() error
	exit()
	info() deviceInfo
	alloc(bytes int) (Ptr, error)
	free(p Ptr) error
	// allocHost is pinned host memory, which a stream's dtohAsync copies
	// into without waiting.
	allocHost(bytes int) (unsafe.Pointer, error)
	freeHost(p unsafe.Pointer)
	// newEvent makes an event for a stream's record; timing says whether
	// since can measure from it (a plain event is cheaper to record and wait
	// for).
	newEvent(timing bool) (event, error)
	// useSideStream moves the codec's later work to a stream of its own
	// that does not wait for the default stream, with ring events
	// to mark it by; afterDefault, markSide and holdDefault order the two
	// (see side.go).
	useSideStream(ring int) error
	afterDefault() error
	markSide(i int) error
	holdDefault(i int) error
	// prepareCompute loads what the compute stream loads at its first use
	// (the GPT kernels' module, cuBLAS); gemm queues a product through
	// cuBLAS on the compute stream.
	prepareCompute() error
	gemm(g Gemm) error
	// synchronizeAll waits for the work of every stream.
	synchronizeAll() error
	memInfo() (free, total int64, err error)
	// close releases the driver; it runs between enter and exit and does
	// the exit itself.
	close() error
}

// stream is one order of device work. Launches, device-to-device copies,
// fills and records are queued; htod returns once src may be reused, its
// copy queued behind the stream's work; dtoh waits for the work before it
// and returns with dst written; dtohAsync queues a copy into pinned host
// memory (allocHost) that an event recorded after it says is done.
type stream interface {
	htod(dst Ptr, src unsafe.Pointer, bytes int) error
	dtoh(dst unsafe.Pointer, src Ptr, bytes int) error
	dtohAsync(dst unsafe.Pointer, src Ptr, bytes int) error
	dtod(dst, src Ptr, bytes int) error
	memset8(dst Ptr, b byte, bytes int) error
	memset32(dst Ptr, v uint32, words int) error
	// launch queues the kernel of kernels/lct.cu or kernels/gpt.cu named
	// kernel with args, each in an 8-byte slot; sizes are their sizes in
	// bytes (nil: every one 8).
	launch(kernel string, grid, block, smem int, args []uint64, sizes []uint8) error
	// record queues e: it is reached once the work queued before it is done.
	record(e event) error
	// synchronize waits for the stream's work.
	synchronize() error
}

// event marks a point in a stream's work.
type event interface {
	// wait returns once the work up to the event's last record is done.
	wait() error
	// since waits for the event and returns the milliseconds from start's
	// record to its own; both must have been made with timing.
	since(start event) (float64, error)
	destroy()
}
