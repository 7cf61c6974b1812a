package cudabackend

import (
	"math"
	"math/rand/v2"
	"testing"

	"lcttop/gpu"
	"lcttop/internal/testgpu"
	"lcttop/trainer/bf16"
)

// tdev is a test's device with helpers to move tensors to and from it;
// everything it allocates is freed when the test ends.
type tdev struct {
	*testgpu.Buffers
	t   testing.TB
	d   Device
	mem *Mem
	ops *gptOps
	rnd *rand.Rand
}

// newTDev opens the test device (or skips) and draws a fresh seed
// (testgpu.Rand).
func newTDev(t testing.TB) *tdev {
	t.Helper()
	d := testDevice(t)
	pool := newDevicePool(d)
	mem := newRunMem(pool, 0)
	rnd := testgpu.Rand(t)
	alloc := func(bytes int64) (gpu.Ptr, error) { return mem.Alloc(scratchCat, bytes) }
	h := &tdev{Buffers: testgpu.NewBuffers(t, d, alloc, mem.Free, rnd), t: t, d: d, mem: mem, ops: newGPTOps(mem), rnd: rnd}
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

var assertSameBF16 = testgpu.AssertSameBF16

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
