package cudabackend

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"lcttop/gpu"
	"lcttop/trainer/bf16"
)

// tdev is a test's device with helpers to move tensors to and from it;
// everything it allocates is freed when the test ends.
type tdev struct {
	t   testing.TB
	d   Device
	mem *Mem
	ops *gptOps
	rnd *rand.Rand
}

// newTDev opens the test device (or skips) and draws a fresh seed, logged so
// that a failure can be replayed with LCTTOP_TEST_SEED.
func newTDev(t testing.TB) *tdev {
	t.Helper()
	d := testDevice(t)
	pool := newDevicePool(d)
	mem := newRunMem(pool, 0)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LCTTOP_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("LCTTOP_TEST_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (set LCTTOP_TEST_SEED to replay)", seed)
	h := &tdev{t: t, d: d, mem: mem, ops: newGPTOps(mem), rnd: rand.New(rand.NewPCG(seed, 0x6a7))}
	t.Cleanup(func() {
		for p := range mem.sizes {
			mem.Free(p)
		}
		if err := pool.Trim(); err != nil {
			t.Errorf("freeing device memory: %v", err)
		}
	})
	return h
}

func (h *tdev) check(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// alloc returns bytes of device memory filled with 0xFF (NaN as BF16 and
// float32), so that an element a kernel forgets to write shows.
func (h *tdev) alloc(bytes int64) gpu.Ptr {
	h.t.Helper()
	p, err := h.mem.Alloc(scratchCat, max(bytes, 1))
	h.check(err)
	h.check(h.d.Memset(p, 0xFF, max(bytes, 1)))
	return p
}

func (h *tdev) bf16(v []uint16) gpu.Ptr {
	h.t.Helper()
	p := h.alloc(2 * int64(len(v)))
	h.check(h.d.Upload(p, gpu.Bytes(v)))
	return p
}

func (h *tdev) f32(v []float32) gpu.Ptr {
	h.t.Helper()
	p := h.alloc(4 * int64(len(v)))
	h.check(h.d.Upload(p, gpu.F32Bytes(v)))
	return p
}

func (h *tdev) i32(v []int32) gpu.Ptr {
	h.t.Helper()
	p := h.alloc(4 * int64(len(v)))
	h.check(h.d.Upload(p, gpu.I32Bytes(v)))
	return p
}

func (h *tdev) get16(p gpu.Ptr, n int) []uint16 {
	h.t.Helper()
	h.check(h.d.Sync())
	v := make([]uint16, n)
	h.check(h.d.Download(gpu.Bytes(v), p))
	return v
}

func (h *tdev) getF32(p gpu.Ptr, n int) []float32 {
	h.t.Helper()
	h.check(h.d.Sync())
	v := make([]float32, n)
	h.check(h.d.Download(gpu.F32Bytes(v), p))
	return v
}

// randBF16 draws n values from N(mean, scale²), rounded to BF16.
func (h *tdev) randBF16(n int, mean, scale float64) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = bf16.FromFloat32(float32(mean + h.rnd.NormFloat64()*scale))
	}
	return v
}

// assertSameBF16 requires identical bits.
func assertSameBF16(t testing.TB, what string, got, want []uint16) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad, first := 0, -1
	for i := range want {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ from the CPU op; first at %d: got %#04x (%g), CPU %#04x (%g)", what, bad, len(want),
			first, got[first], bf16.ToFloat32(got[first]), want[first], bf16.ToFloat32(want[first]))
	}
}

// assertSameF32 requires identical bits.
func assertSameF32(t testing.TB, what string, got, want []float32) {
	t.Helper()
	bad, first := 0, -1
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ from the CPU op; first at %d: got %g, CPU %g", what, bad, len(want), first, got[first], want[first])
	}
}

// tolerance bounds the difference of a result from the CPU op's when the
// two sum in different orders: each element may differ by
// Rel·|cpu| + Abs·max|cpu| + Floor, and ‖got − cpu‖/‖cpu‖ may be at most
// Norm.
type tolerance struct{ Rel, Abs, Floor, Norm float64 }

// assertNearBF16 checks got against the CPU's want within tol and logs how
// close it came.
func assertNearBF16(t testing.TB, what string, got, want []uint16, tol tolerance) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale, num, den, worst float64
	same := 0
	for _, w := range want {
		scale = max(scale, math.Abs(float64(bf16.ToFloat32(w))))
	}
	bad, first := 0, -1
	for i := range want {
		g, w := float64(bf16.ToFloat32(got[i])), float64(bf16.ToFloat32(want[i]))
		d := math.Abs(g - w)
		num += d * d
		den += w * w
		if got[i] == want[i] {
			same++
		}
		if scale > 0 {
			worst = max(worst, d/scale)
		}
		if !(d <= tol.Rel*math.Abs(w)+tol.Abs*scale+tol.Floor) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	rel := math.Sqrt(num / max(den, 1e-300))
	t.Logf("%s: %d of %d values identical to the CPU's; relative error %.3g (limit %.3g), largest difference %.3g of the largest value",
		what, same, len(want), rel, tol.Norm, worst)
	if bad > 0 {
		g, w := bf16.ToFloat32(got[first]), bf16.ToFloat32(want[first])
		t.Errorf("%s: %d of %d values outside %.3g·|cpu| + %.3g·%.3g + %.3g; first at %d: got %g, CPU %g", what, bad, len(want),
			tol.Rel, tol.Abs, scale, tol.Floor, first, g, w)
	}
	if !(rel <= tol.Norm) {
		t.Errorf("%s: relative error %.3g over %.3g", what, rel, tol.Norm)
	}
}
