package codec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteForce returns the least cost over every choice of coded symbols and
// lengths 1..maxLen (ESC always coded) that satisfies Kraft, and the fewest
// coded symbols among the choices reaching it.
func bruteForce(w []float64, maxLen int) (best float64, fewest int) {
	best = math.Inf(1)
	lens := make([]int, len(w)) // 0 = escaped
	var rec func(i int)
	rec = func(i int) {
		if i < len(w) {
			for l := 0; l <= maxLen; l++ {
				lens[i] = l
				rec(i + 1)
			}
			return
		}
		for esc := 1; esc <= maxLen; esc++ {
			kraft := 1 << (maxLen - esc)
			cost, rest, coded := 0.0, 0.0, 0
			for s, l := range lens {
				if l == 0 {
					rest += w[s]
					continue
				}
				coded++
				kraft += 1 << (maxLen - l)
				cost += w[s] * float64(l)
			}
			if kraft > 1<<maxLen {
				continue
			}
			cost += rest * float64(esc+8)
			if cost < best || cost == best && coded < fewest {
				best, fewest = cost, coded
			}
		}
	}
	rec(0)
	return best, fewest
}

func lengthsCost(w []float64, lens []uint8, esc uint8) (cost float64, coded int, kraft float64) {
	kraft = math.Ldexp(1, -int(esc))
	rest := 0.0
	for s, l := range lens {
		if l == 0 {
			rest += w[s]
			continue
		}
		coded++
		kraft += math.Ldexp(1, -int(l))
		cost += w[s] * float64(l)
	}
	return cost + rest*float64(int(esc)+8), coded, kraft
}

func TestOptimalLengthsMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	cases := 0
	for size := 3; size <= 6; size++ {
		for maxLen := 3; maxLen <= 4; maxLen++ {
			for trial := range 60 {
				w := make([]float64, size)
				for i := range w {
					switch trial % 4 {
					case 0: // heavy-tailed counts: some symbols rare enough to escape
						w[i] = float64(r.IntN(1 << r.IntN(12)))
					case 1: // small counts with many ties
						w[i] = float64(r.IntN(4))
					case 2: // one dominant symbol
						w[i] = float64(1 + r.IntN(3))
						if i == 0 {
							w[i] = 1000
						}
					default:
						w[i] = float64(r.IntN(1000))
					}
				}
				lens, esc, err := OptimalLengths(w, maxLen)
				if err != nil {
					t.Fatal(err)
				}
				cost, coded, kraft := lengthsCost(w, lens, esc)
				best, fewest := bruteForce(w, maxLen)
				if kraft > 1 || esc < 1 || int(esc) > maxLen {
					t.Fatalf("weights %v maxLen %d: lengths %v esc %d break Kraft (%v) or ranges", w, maxLen, lens, esc, kraft)
				}
				for s, l := range lens {
					if int(l) > maxLen || (w[s] == 0 && l != 0) {
						t.Fatalf("weights %v maxLen %d: symbol %d has length %d", w, maxLen, s, l)
					}
				}
				if cost != best {
					t.Fatalf("weights %v maxLen %d: cost %v (lengths %v esc %d), brute force %v", w, maxLen, cost, lens, esc, best)
				}
				if coded != fewest {
					t.Fatalf("weights %v maxLen %d: %d symbols coded, the smallest optimal K is %d", w, maxLen, coded, fewest)
				}
				if coded > 0 && kraft != 1 {
					t.Fatalf("weights %v maxLen %d: code incomplete (Kraft %v)", w, maxLen, kraft)
				}
				cases++
			}
		}
	}
	t.Logf("%d cases checked", cases)
}

func TestOptimalLengthsLargeAlphabet(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for trial := range 20 {
		w := make([]float64, 256+trial*10)
		for i := range w {
			w[i] = math.Floor(math.Exp(r.Float64() * 20))
		}
		lens, esc, err := OptimalLengths(w, 8)
		if err != nil {
			t.Fatal(err)
		}
		cost, coded, kraft := lengthsCost(w, lens, esc)
		if kraft != 1 || coded > 255 {
			t.Fatalf("trial %d: Kraft %v, %d coded", trial, kraft, coded)
		}
		// No single symbol moved in or out of the escape set, nor any length
		// lowered within Kraft, may do better.
		for s := range w {
			for l := uint8(0); l <= 8; l++ {
				alt := append([]uint8(nil), lens...)
				alt[s] = l
				c2, n2, k2 := lengthsCost(w, alt, esc)
				if k2 <= 1 && n2 <= 255 && c2 < cost {
					t.Fatalf("trial %d: giving symbol %d length %d costs %v < %v", trial, s, l, c2, cost)
				}
			}
		}
		// Heavier symbols never get longer codes.
		for a := range w {
			for b := range w {
				if w[a] > w[b] && lens[b] != 0 && (lens[a] == 0 || lens[a] > lens[b]) {
					t.Fatalf("trial %d: symbol %d (w %v) length %d, lighter symbol %d (w %v) length %d", trial, a, w[a], lens[a], b, w[b], lens[b])
				}
			}
		}
	}
}

func TestOptimalLengthsEdgeCases(t *testing.T) {
	lens, esc, err := OptimalLengths(make([]float64, 256), 8)
	if err != nil || esc != 1 {
		t.Fatalf("all-zero weights: esc %d err %v, want esc 1", esc, err)
	}
	for s, l := range lens {
		if l != 0 {
			t.Fatalf("all-zero weights: symbol %d coded", s)
		}
	}
	lens, esc, err = OptimalLengths([]float64{0, 5, 0}, 8)
	if err != nil || lens[1] != 1 || esc != 1 || lens[0] != 0 || lens[2] != 0 {
		t.Fatalf("one symbol: lengths %v esc %d err %v, want symbol 1 and ESC at length 1", lens, esc, err)
	}
	// Equal weights: the smaller symbol gets the shorter code, ESC ranks last.
	lens, esc, _ = OptimalLengths([]float64{1, 1}, 8)
	if lens[0] != 1 || lens[1] != 2 || esc != 2 {
		t.Fatalf("ties: lengths %v esc %d, want [1 2] esc 2", lens, esc)
	}
	for _, bad := range [][]float64{{1, math.NaN()}, {1, -1}, {math.Inf(1)}} {
		if _, _, err := OptimalLengths(bad, 8); err == nil {
			t.Errorf("weights %v accepted", bad)
		}
	}
	for _, ml := range []int{0, 9} {
		if _, _, err := OptimalLengths([]float64{1}, ml); err == nil {
			t.Errorf("maxLen %d accepted", ml)
		}
	}
}
