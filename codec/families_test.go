package codec

import (
	"hash/crc32"
	"math"
	"testing"
	"time"
)

var parametric = []Distribution{Gaussian, Laplace, PowerLaw}

// TestBinadeEdge: 2^(n/4) from the quarter-root constants is exact at
// multiples of 4 and within an ulp or so of math.Exp2 elsewhere.
func TestBinadeEdge(t *testing.T) {
	for n := -1200; n <= 1200; n++ {
		got, want := binadeEdge(n), math.Exp2(float64(n)/4)
		if n%4 == 0 && got != math.Ldexp(1, n/4) {
			t.Fatalf("binadeEdge(%d) = %v, want 2^%d exactly", n, got, n/4)
		}
		if math.Abs(got/want-1) > 0x1p-51 {
			t.Fatalf("binadeEdge(%d) = %v, want about %v", n, got, want)
		}
	}
}

// TestShapeZeroIsTheFamily: shape 0's masses are the family's own, bit for
// bit, so the tables that codebooks written before the shape field name
// are unchanged.
func TestShapeZeroIsTheFamily(t *testing.T) {
	if familyShapes[0] != (familyShape{quarters: 4}) {
		t.Fatalf("shape 0 is %+v, want the family itself", familyShapes[0])
	}
	for _, d := range parametric {
		m := shapeMasses(d, familyShapes[0])
		for i, x := range m {
			if want := familyMass(d, familyMinBinade+i); x != want {
				t.Fatalf("%v binade %d: shape 0 mass %v, family mass %v", d, familyMinBinade+i, x, want)
			}
		}
	}
}

// TestShapeMasses checks every shape's masses against a plain evaluation of
// its definition (format.md §2) with math.Exp2 edges: within 1e-12
// relative where the mass is not negligible, and summing to 1.
func TestShapeMasses(t *testing.T) {
	for _, d := range parametric {
		for si, sh := range familyShapes {
			got := shapeMasses(d, sh)
			base := make([]float64, familyBinades)
			for i := range base {
				r := float64(familyMinBinade + i)
				q := float64(sh.quarters) / 4
				if sh.truncated && familyMinBinade+i >= 0 {
					continue
				}
				base[i] = edgeMass(d, math.Exp2(r*q), math.Exp2((r+1)*q))
			}
			total := 1.0 // the binades hold all the mass but what lies below 2^-150 or above 2^151
			if sh.truncated {
				total = 0
				for _, x := range base {
					total += x
				}
			}
			want := make([]float64, familyBinades)
			w := float64(sh.copyQuarters) / 4
			eps := 0.0
			if sh.outlierLog2 != 0 {
				eps = math.Ldexp(1, -sh.outlierLog2)
			}
			sum := 0.0
			for i := range want {
				x := base[i] / total * (1 - w)
				if j := i - sh.copyBinades; sh.copyBinades != 0 && j >= 0 {
					x += base[j] / total * w
				}
				want[i] = x*(1-eps) + eps/familyBinades
				sum += got[i]
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("%v shape %d: masses sum to %v", d, si, sum)
			}
			for i := range want {
				if want[i] > 1e-30 && math.Abs(got[i]/want[i]-1) > 1e-12 {
					t.Fatalf("%v shape %d %+v binade %d: mass %v, definition gives %v", d, si, sh, familyMinBinade+i, got[i], want[i])
				}
			}
		}
	}
}

// TestShapeTables: every table a shape has is a complete code with
// exponent 0 at its level's length; shape 0 has every level; the shapes
// differ from each other; building them is timed for the log.
func TestShapeTables(t *testing.T) {
	start := time.Now()
	for _, d := range parametric {
		family(d, 0, 0)
	}
	t.Logf("tables of the three families built in %v", time.Since(start))
	for _, d := range parametric {
		absent := 0
		for si := range familyShapes {
			for l := range zeroLevels {
				tab := family(d, si, l)
				if tab.absent {
					if si == 0 || l == 0 {
						t.Fatalf("%v shape %d has no level %d", d, si, l)
					}
					absent++
					continue
				}
				kraft, coded := 1<<(8-tab.escLen), 0
				if tab.zeroLen != 0 {
					kraft += 1 << (8 - tab.zeroLen)
				}
				for _, x := range tab.lengths {
					if x != 0 {
						coded++
						kraft += 1 << (8 - x)
					}
				}
				if int(tab.zeroLen) != l || kraft != 256 || coded == 0 || coded+btoi(l > 0) > 255 || tab.escLen < 1 || tab.escLen > 8 {
					t.Fatalf("%v shape %d level %d: exponent 0 %d bits, %d binades, Kraft %d/256, escLen %d",
						d, si, l, tab.zeroLen, coded, kraft, tab.escLen)
				}
			}
			for sj := range si {
				if a, b := family(d, si, 0), family(d, sj, 0); a.lengths == b.lengths && a.escLen == b.escLen {
					t.Logf("%v: shapes %d and %d have the same level 0 table", d, sj, si)
				}
			}
		}
		t.Logf("%v: %d of %d tables absent", d, absent, len(familyShapes)*zeroLevels)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFamilyTablesFingerprint pins every table's lengths: a platform whose
// float evaluation moved one length would write codebooks that others
// reject. The CRC covers, for each shape and level in order, the absent
// flag, escLen, exponent 0's length and the 301 binade lengths.
func TestFamilyTablesFingerprint(t *testing.T) {
	want := map[Distribution]uint32{Gaussian: 0x98da1e26, Laplace: 0x59d203e1, PowerLaw: 0xf0d78227}
	for _, d := range parametric {
		crc := crc32.NewIEEE()
		for si := range familyShapes {
			for l := range zeroLevels {
				tab := family(d, si, l)
				crc.Write([]byte{byte(btoi(tab.absent)), tab.escLen, tab.zeroLen})
				crc.Write(tab.lengths[:])
			}
		}
		if got := crc.Sum32(); got != want[d] {
			t.Errorf("%v: tables' CRC-32 %#08x, want %#08x", d, got, want[d])
		}
	}
}
