package cublas

import (
	"math"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"lcttop/gpu/cuda"
)

// onGPU makes the GPU's primary context current on the test's OS thread
// (which stays locked to the test), or skips where there is no driver or
// no cuBLAS, unless LCTTOP_REQUIRE_GPU=1.
func onGPU(t *testing.T) {
	t.Helper()
	need := os.Getenv("LCTTOP_REQUIRE_GPU") == "1"
	if err := cuda.Load(); err != nil {
		if need {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if _, err := Load(); err != nil {
		if need {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	runtime.LockOSThread()
	dev, err := cuda.GetDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := dev.RetainPrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.ReleasePrimaryContext() })
	if err := cuda.SetCurrent(ctx); err != nil {
		t.Fatal(err)
	}
}

func bf16(f float32) uint16   { return uint16(math.Float32bits(f) >> 16) }
func unbf16(v uint16) float32 { return math.Float32frombits(uint32(v) << 16) }
func upload(t *testing.T, v []uint16) cuda.Ptr {
	t.Helper()
	p, err := cuda.MemAlloc(2 * len(v))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cuda.MemFree(p) })
	if err := cuda.CopyHtoD(p, unsafe.Pointer(&v[0]), 2*len(v)); err != nil {
		t.Fatal(err)
	}
	return p
}

// Products of small integers are exact in float32 whatever the order of
// the sums: one product, a batch of two with a transposed operand, and
// float32 output with beta, each against the product computed here.
func TestGemmSmallIntegers(t *testing.T) {
	onGPU(t)
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Version() <= 0 {
		t.Errorf("version %d", h.Version())
	}
	if err := h.SetStream(0); err != nil {
		t.Fatal(err)
	}
	const m, n, k, batch = 5, 3, 7, 2
	// Column-major A (m×k, or k×m stored when transposed) and B (k×n).
	av, bv := make([]uint16, batch*m*k), make([]uint16, batch*k*n)
	for i := range av {
		av[i] = bf16(float32(i%7 - 3))
	}
	for i := range bv {
		bv[i] = bf16(float32(i%5 - 2))
	}
	a, b := upload(t, av), upload(t, bv)
	elem := func(transA bool, bi, i, p int) float32 {
		if transA {
			return unbf16(av[bi*m*k+i*k+p]) // A stored k×m, ld k
		}
		return unbf16(av[bi*m*k+p*m+i])
	}
	for _, c := range []struct {
		name   string
		transA bool
		batch  int
		f32    bool
		beta   float32
	}{
		{"one product", false, 1, false, 0},
		{"a batch of two, A transposed", true, 2, false, 0},
		{"float32 output, beta 1", false, 1, true, 1},
	} {
		size := int64(2)
		ct := BF16
		if c.f32 {
			size, ct = 4, F32
		}
		cbytes := int(size) * batch * m * n
		cp, err := cuda.MemAlloc(cbytes)
		if err != nil {
			t.Fatal(err)
		}
		defer cuda.MemFree(cp)
		old := make([]float32, batch*m*n)
		for i := range old {
			old[i] = float32(i % 3)
		}
		if c.f32 {
			if err := cuda.CopyHtoD(cp, unsafe.Pointer(&old[0]), cbytes); err != nil {
				t.Fatal(err)
			}
		}
		lda, opA := m, NoTrans
		if c.transA {
			lda, opA = k, Trans
		}
		err = h.Gemm(opA, NoTrans, m, n, k, 2,
			Matrix{Ptr: uintptr(a), Type: BF16, LD: lda, Stride: m * k},
			Matrix{Ptr: uintptr(b), Type: BF16, LD: k, Stride: k * n}, c.beta,
			Matrix{Ptr: uintptr(cp), Type: ct, LD: m, Stride: m * n}, c.batch)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := make([]byte, cbytes)
		if err := cuda.CopyDtoH(unsafe.Pointer(&got[0]), cp, cbytes); err != nil {
			t.Fatal(err)
		}
		for bi := range c.batch {
			for j := range n {
				for i := range m {
					var want float32
					for p := range k {
						want += elem(c.transA, bi, i, p) * unbf16(bv[bi*k*n+j*k+p])
					}
					want *= 2
					at := bi*m*n + j*m + i
					var g float32
					if c.f32 {
						want += c.beta * old[at]
						g = math.Float32frombits(uint32(got[4*at]) | uint32(got[4*at+1])<<8 | uint32(got[4*at+2])<<16 | uint32(got[4*at+3])<<24)
					} else {
						g = unbf16(uint16(got[2*at]) | uint16(got[2*at+1])<<8)
					}
					if g != want {
						t.Fatalf("%s: C[%d][%d,%d] = %v, want %v", c.name, bi, i, j, g, want)
					}
				}
			}
		}
	}
}

// cuBLAS refuses what it cannot compute, and a closed handle is refused
// here before cuBLAS sees it.
func TestGemmRefusals(t *testing.T) {
	onGPU(t)
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	a := upload(t, make([]uint16, 64))
	mat := Matrix{Ptr: uintptr(a), Type: BF16, LD: 4}
	if err := h.Gemm(NoTrans, NoTrans, 8, 2, 2, 1, mat, mat, 0, mat, 1); err == nil {
		t.Error("lda 4 for 8 rows of A")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("a second close: %v", err)
	}
	if err := h.Gemm(NoTrans, NoTrans, 2, 2, 2, 1, mat, mat, 0, mat, 1); err == nil {
		t.Error("a product on a closed handle")
	}
}
