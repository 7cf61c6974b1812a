package codec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// encodePieces codes src piece by piece with the codebook and layout of the
// whole, as a streaming writer does.
func encodePieces(t *testing.T, src []uint16, opt Options) []*Tensor {
	t.Helper()
	cb, layout, err := Plan(src, opt)
	if err != nil {
		t.Fatal(err)
	}
	plen := PieceLen(layout)
	var out []*Tensor
	var e Encoder
	for lo := 0; lo < len(src); lo += plen {
		hi := min(lo+plen, len(src))
		p := new(Tensor)
		if err := e.Encode(p, src[lo:hi], cb, PerBlockLayout(layout, hi-lo)); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// piecesInput is a tensor of three pieces whose blocks differ in scale, so
// that AUTO gives them different capacities, with a partial last block.
func piecesInput(n int) []uint16 {
	src := gaussianBF16(n, 7, 0.02)
	copy(src[n/3:], gaussianBF16(n/5, 8, 3e-5))
	return src
}

func TestWritePiecesIsMarshalBinaryOfTheWhole(t *testing.T) {
	mixed := piecesInput(2*pieceElems + 3*65536 + 1000)
	plus := slices.Clone(mixed)
	for i := range plus {
		plus[i] &= 0x7FFF
	}
	for _, version := range []int{FormatVersion1, FormatVersion2, FormatVersion3} {
		for _, p := range Presets {
			for _, d := range Distributions {
				src := mixed
				if version == FormatVersion3 && p == Auto {
					src = plus // a sign the header holds, no residue
				}
				t.Run(fmt.Sprintf("v%d/%v/%v", version, p, d), func(t *testing.T) {
					opt := Options{Preset: p, Dist: d, Version: version}
					whole, err := Encode(src, opt)
					if err != nil {
						t.Fatal(err)
					}
					want, err := whole.MarshalBinary()
					if err != nil {
						t.Fatal(err)
					}
					pieces := encodePieces(t, src, opt)
					if len(pieces) != 3 {
						t.Fatalf("%d pieces, want 3", len(pieces))
					}
					// The middle piece's sf bytes come from its values, as
					// a writer that dropped them after verifying gives them.
					pieces[1].SF = nil
					plen := pieces[0].N
					var buf bytes.Buffer
					err = WritePieces(&buf, pieces, func(i int) ([]uint16, error) {
						return src[i*plen : i*plen+pieces[i].N], nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if n, err := PiecesBytes(pieces); err != nil || n != len(want) {
						t.Errorf("PiecesBytes = %d, %v; want %d", n, err, len(want))
					}
					if !bytes.Equal(buf.Bytes(), want) {
						t.Fatalf("pieces write %d bytes, differing from MarshalBinary's %d at byte %d", buf.Len(), len(want), firstByteDiff(buf.Bytes(), want))
					}
					got := decodeByPieces(t, want)
					if i := slices.Compare(got, src); i != 0 {
						t.Fatal("decoding by pieces does not restore the tensor")
					}
				})
			}
		}
	}
}

func TestPiecesOfSmallTensors(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 65536, 65537} {
		src := gaussianBF16(n, uint64(n), 0.1)
		whole, err := Encode(src, Options{Preset: Auto, Dist: Empirical})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := whole.MarshalBinary()
		if n > 0 {
			var buf bytes.Buffer
			if err := WritePieces(&buf, encodePieces(t, src, Options{Preset: Auto, Dist: Empirical}), nil); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("n=%d: pieces differ from the whole", n)
			}
		}
		if got := decodeByPieces(t, want); !slices.Equal(got, src) {
			t.Errorf("n=%d: decoding by pieces does not restore the tensor", n)
		}
	}
}

func TestWritePiecesRejectsMismatchedPieces(t *testing.T) {
	src := piecesInput(2*pieceElems + 10)
	pieces := encodePieces(t, src, Options{Preset: Auto, Dist: Empirical})
	other := encodePieces(t, gaussianBF16(len(src), 99, 100), Options{Preset: Auto, Dist: Empirical})
	mixed := []*Tensor{pieces[0], other[1], pieces[2]}
	if err := WritePieces(&bytes.Buffer{}, mixed, nil); err == nil {
		t.Error("pieces of two codebooks were written as one tensor")
	}
	if err := WritePieces(&bytes.Buffer{}, []*Tensor{pieces[2], pieces[0]}, nil); err == nil {
		t.Error("a piece of a partial block before another piece was accepted")
	}
}

// decodeByPieces reads b with ReadPieces and decodes it piece by piece.
func decodeByPieces(t *testing.T, b []byte) []uint16 {
	t.Helper()
	got, err := readByPieces(b)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func readByPieces(b []byte) ([]uint16, error) {
	r, err := ReadPieces(b)
	if err != nil {
		return nil, err
	}
	out := make([]uint16, r.Header().N)
	var d Decoder
	for i := range r.Pieces() {
		p, lo, err := r.Piece(i)
		if err != nil {
			return nil, err
		}
		if err := d.Decode(p, out[lo:lo+p.N]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Reading by pieces accepts exactly what ParseTensor and Decode accept, and
// decodes it to the same values.
func TestReadPiecesAgreesWithParseTensorOnDamage(t *testing.T) {
	for _, version := range []int{FormatVersion2, FormatVersion3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) { testReadPiecesOnDamage(t, version) })
	}
}

func testReadPiecesOnDamage(t *testing.T, version int) {
	src := piecesInput(pieceElems + 70000)
	whole, err := Encode(src, Options{Preset: Auto, Dist: Empirical, Version: version})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := whole.MarshalBinary()
	r := rand.New(rand.NewPCG(3, 4))
	nb := whole.Layout.Blocks(whole.N)
	// The block tables: offsets, bitmaps and overflow in version 2; in
	// version 3 capacities, tail units, the blocks' codebooks and tail
	// lengths.
	tablesAt, tablesLen := len(good)-len(whole.Overflow)-36*nb, len(whole.Overflow)+36*nb
	if version == FormatVersion3 {
		tablesAt = whole.TensorHeaderBytes()
		tablesLen = len(good) - len(whole.SF) - len(whole.Streams) - len(whole.Overflow) - tablesAt
	}
	accepted := 0
	for k := range 150 {
		b := slices.Clone(good)
		switch k % 3 {
		case 0: // anywhere
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
		case 1: // the header and codebook
			b[r.IntN(min(len(b), 200))] ^= byte(1 + r.IntN(255))
		case 2: // the block tables
			b[tablesAt+r.IntN(tablesLen)] ^= byte(1 + r.IntN(255))
		}
		want, wantErr := func() ([]uint16, error) {
			pt, err := ParseTensor(b)
			if err != nil {
				return nil, err
			}
			return DecodeAlloc(pt)
		}()
		got, gotErr := readByPieces(b)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("damage %d: whole says %v, pieces say %v", k, wantErr, gotErr)
		}
		if wantErr == nil && !slices.Equal(got, want) {
			t.Fatalf("damage %d: pieces decode to other values than the whole", k)
		}
		if wantErr == nil {
			accepted++
		}
	}
	// Damage to sf bytes decodes to other values; damage to the structure
	// is caught: both kinds must have been tried.
	if accepted == 0 || accepted == 150 {
		t.Errorf("%d of 150 damaged tensors accepted: the damage tried only one kind", accepted)
	}
}

func firstByteDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A last piece of one block fits that block its own codebook where the
// whole tensor's encoder does (format version 3).
func TestPiecesOfOneBlockKeepTheirOwnCodebook(t *testing.T) {
	src := gaussianBF16(pieceElems+65536, 5, 0.02)
	copy(src[pieceElems:], gaussianBF16(65536, 6, 3e-5))
	opt := Options{Preset: Auto, Dist: Empirical}
	whole, err := Encode(src, opt)
	if err != nil {
		t.Fatal(err)
	}
	last := whole.Layout.Blocks(whole.N) - 1
	if whole.Layout.BlockSize != 65536 || !whole.hasOwnCodebook(last) {
		t.Fatalf("block size %d, last block's own codebook %v: the input does not make the case", whole.Layout.BlockSize, whole.hasOwnCodebook(last))
	}
	want, _ := whole.MarshalBinary()
	pieces := encodePieces(t, src, opt)
	if len(pieces) != 2 || pieces[1].Layout.Blocks(pieces[1].N) != 1 {
		t.Fatalf("%d pieces, want 2, the last of one block", len(pieces))
	}
	var buf bytes.Buffer
	if err := WritePieces(&buf, pieces, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("pieces write %d bytes, differing from MarshalBinary's %d at byte %d", buf.Len(), len(want), firstByteDiff(buf.Bytes(), want))
	}
}
