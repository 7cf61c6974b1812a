// CUDA kernels of the LCT codec (docs/format.md): encode, decode, sampling
// and histograms, and the optimizer updates, fused with the codec and plain.
// They produce exactly the bytes of the Go reference codec (codec/).
//
// One CTA of 256 threads works on one codec block; thread j owns stream j,
// which holds the block's element p*256 + ((j - p) & 255) at position p (the
// skewed round robin of format version 2). Format version 3's kernels are at
// the end of the file.
// Batched launches (lct_encode_batch, lct_decode_batch & co.) run the blocks
// of many tensors in one grid, a small table telling each CTA its tensor:
// a tensor of a few dozen blocks alone leaves most multiprocessors idle.
// A block's stream area is interleaved by byte (byte k of stream j at
// k*256 + j), which suits coalesced copies but not one thread reading its own
// stream. So the CTA moves the area between global memory and shared memory
// with 4-byte loads and stores and a 4x4 byte transpose, keeping it in shared
// memory stream-major: each stream a row of 32-bit big-endian words (the
// first stream byte in the top bits), rows an odd number of words apart so
// that the threads of a warp reading their own rows hit different banks.
// Elements move in chunks of positions: a chunk's exponents sit in shared
// memory in element order, written and read by rows with 8- and 16-byte
// accesses on the global side, by skewed columns (one stream each: see cell)
// on the coding side.
//
// Encoding is one pass: a CTA codes its block (sf bytes, stream area, spill
// bitmap, per-block counts), learns where its overflow region starts from
// the blocks before it by decoupled look-back (see lookback) and writes its
// markers and spilled exponents there itself. The fused updates keep two
// passes: their CTAs record per-stream spill counts, the last to finish
// turns the blocks' sizes into offsets, and an overflow pass recomputes a
// spilling block's new values (same code, same inputs, same bits) to write
// them, which is why they write their outputs out of place.
//
// The optimizer formulas are the trainer's (trainer/optim), operation by
// operation in float32 with every product, quotient, sum and root rounded on
// its own (__fmul_rn & co. never contract into FMAs), and each stored value
// rounded once to BF16, nearest-even, NaNs kept quiet.
//
// The same source compiles for the CPU with emu.h (tests without a GPU).

#ifdef LCT_EMU
#include <math.h>
#else
extern __shared__ __align__(16) unsigned char lct_smem[];
#define LCT_DYNAMIC_SMEM lct_smem
#endif

#define LCT_DEV static __device__ __forceinline__

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define LCT_FULL 0xffffffffu
#define LCT_CH 32              // positions per chunk: encode, decode
#define LCT_G (LCT_CH / 8)     // 8-element groups per thread and chunk
#define LCT_CHF 16             // positions per chunk: fused updates
#define LCT_GF (LCT_CHF / 8)

// Error kinds a decode reports, in the status word's low byte.
#define LCT_ERR_INVALID_CODE 1
#define LCT_ERR_PAST_CAPACITY 2
#define LCT_ERR_MARKER 3
#define LCT_ERR_OVERFLOW_BOUNDS 4

// LctDesc describes one LCT tensor in device memory. The Go side (gpu/)
// writes the same 8-byte fields in the same order.
struct LctDesc {
  u64 sf;        // u8[n]
  u64 streams;   // u8[StreamAreaBytes(n)]
  u64 bitmaps;   // u8[32 * nblocks]
  u64 offsets;   // u32[nblocks]
  u64 overflow;  // u8[ovcap]
  u64 tables;    // u32[512]: decode table (by next 8 bits), then encode table (by exponent)
  u64 spill;     // u8[256 * nblocks]: spill count per stream, written by the encoder
  u64 bstats;    // u32[4 * nblocks]: overflow bytes, code bits, spilled, spilling streams
  u64 status;    // u64[4]: overflow length, first decode error (~0 = none), fused blocks done (u32), 0
  long long n;   // elements
  long long B;   // block size
  long long C;   // bytes per stream of a full block (with capacities per block: the largest)
  long long nblocks;
  long long ovcap;  // bytes the overflow buffer holds
  u64 look;      // u64[nblocks + 1]: the encoder's look-back words, then its
                 // ticket counter (low half) and launch epoch (high half)
  u64 blocks;    // u32[2 * nblocks]: per block C_b and its stream area's offset / 256,
                 // where the tensor has capacities per block; else 0
};

LCT_DEV int imin(int a, int b) { return a < b ? a : b; }
LCT_DEV int imax(int a, int b) { return a > b ? a : b; }
LCT_DEV u32 umin(u32 a, u32 b) { return a < b ? a : b; }

// Geo is one block's geometry as seen by thread j (format.md §3).
struct Geo {
  long long base;  // first element of the block
  long long area;  // byte offset of the block's stream area
  int nb;          // elements in the block
  int P;           // positions of the longest stream
  int Cb;          // bytes per stream
  int words;       // 32-bit words per stream, ceil(Cb/4)
  u32 capBits;     // 8*Cb
  int count;       // elements of stream j
};

LCT_DEV void geo_init(Geo& g, const LctDesc* d, int b, int j) {
  const long long B = d->B, C = d->C;
  g.base = (long long)b * B;
  const long long rem = d->n - g.base;
  g.nb = (int)(rem < B ? rem : B);
  g.P = (g.nb + 255) >> 8;
  if (d->blocks) {
    const u32* bt = (const u32*)d->blocks + 2 * b;
    g.Cb = (int)bt[0];
    g.area = (long long)bt[1] << 8;
  } else {
    g.Cb = (int)(((long long)g.P * C * 256 + B - 1) / B);
    g.area = (long long)b * 256 * C;
  }
  g.words = (g.Cb + 3) >> 2;
  g.capBits = 8u * (u32)g.Cb;
  // Every stream has the full rows; stream j has a place in the partial last
  // row (position nb/256) when its element there, (j - nb/256) & 255, exists.
  const int full = g.nb >> 8, rest = g.nb & 255;
  g.count = full + (rest != 0 && ((j - full) & 255) < rest ? 1 : 0);
}

// ---- the skewed round robin ----------------------------------------------------
//
// A chunk's exponent buffer holds positions p0, p0+1, ... of the block as
// rows of 256 in element order, so thread j finds position p0 + pp of its
// stream in row pp, column (j - p0 - pp) & 255: byte cell(w, pp) with
// w = skew_w(j, p0). Where w >= pp (no wrap) that is w + 255*pp, a fixed
// offset from one address: every lane of a warp has w >= pp for every pp of
// a chunk of CH positions (flat_chunk) in all warps but one, which computes
// each cell. at<FLAT> is the cell either way.
LCT_DEV int skew_w(int j, int p0) { return (j - p0) & 255; }
LCT_DEV int cell(int w, int pp) { return (pp << 8) + ((w - pp) & 255); }
template <bool FLAT>
LCT_DEV int at(int w, int pp) { return FLAT ? w + 255 * pp : cell(w, pp); }
// flat_chunk: no lane of the warp wraps within a chunk of ch positions. Every
// lane of the warp must call it.
LCT_DEV bool flat_chunk(int w, int ch) { return __all_sync(LCT_FULL, w >= ch - 1); }

// row_stride is the distance in words between two streams' rows in shared
// memory: enough for a full block, and odd.
LCT_DEV int row_stride(long long C) { return (int)(((C + 3) >> 2) | 1); }

// Scratch words of each kernel's 32-word tmp (the block sums use 0..23).
#define LCT_TMP_LAST 29  // this CTA finished last
#define LCT_TMP_SINK 30  // where the fused updates' writers put words past their rows

// A reader loads words up to 2 past the one it is in, at most 130 of its row
// (256 symbols of at most 16 bits); past its stream it reads the next
// stream's row. What it finds
// there cannot change the outcome: a code that ends within the stream's
// capacity is read from the stream's own bits (no other code is a prefix of
// them), and one that does not is an error whatever the bits. The last row
// is followed by LCT_SLACK zero words so that no read leaves shared memory.
#define LCT_SLACK 136

LCT_DEV void report(const LctDesc* d, int b, int j, u32 kind) {
  atomicMin((u64*)d->status + 1, ((u64)b << 16) | ((u64)j << 8) | kind);
}

// ---- block-wide sums -------------------------------------------------------

// block_scan returns the exclusive prefix sum of v over the CTA's 256
// threads, and the total. Every thread of the CTA must call it.
LCT_DEV u32 block_scan(u32 v, u32* tmp, u32& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  u32 x = v;
  for (int o = 1; o < 32; o <<= 1) {
    u32 y = __shfl_up_sync(LCT_FULL, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) tmp[warp] = x;
  __syncthreads();
  u32 before = 0, all = 0;
  for (int i = 0; i < 8; i++) {
    u32 t = tmp[i];
    before += i < warp ? t : 0u;
    all += t;
  }
  __syncthreads();
  total = all;
  return before + x - v;
}

// block_sum3 sums three values over the CTA. Every thread must call it.
LCT_DEV void block_sum3(u32 a, u32 b, u32 c, u32* tmp, u32& sa, u32& sb, u32& sc) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o; o >>= 1) {
    a += __shfl_xor_sync(LCT_FULL, a, o);
    b += __shfl_xor_sync(LCT_FULL, b, o);
    c += __shfl_xor_sync(LCT_FULL, c, o);
  }
  if (lane == 0) {
    tmp[warp * 3] = a;
    tmp[warp * 3 + 1] = b;
    tmp[warp * 3 + 2] = c;
  }
  __syncthreads();
  sa = sb = sc = 0;
  for (int i = 0; i < 8; i++) {
    sa += tmp[i * 3];
    sb += tmp[i * 3 + 1];
    sc += tmp[i * 3 + 2];
  }
  __syncthreads();
}

// ---- stream areas between global (interleaved) and shared (stream-major) ---

// rows_to_streams transposes 4x4 bytes: x_r holds row k+r at columns
// 4q..4q+3 (column 4q+i in byte i); s_i becomes stream 4q+i's word, row k in
// its most significant byte.
LCT_DEV void rows_to_streams(u32 x0, u32 x1, u32 x2, u32 x3, u32& s0, u32& s1, u32& s2, u32& s3) {
  const u32 p = __byte_perm(x3, x2, 0x5140), q = __byte_perm(x1, x0, 0x5140);
  const u32 p2 = __byte_perm(x3, x2, 0x7362), q2 = __byte_perm(x1, x0, 0x7362);
  s0 = __byte_perm(p, q, 0x5410);
  s1 = __byte_perm(p, q, 0x7632);
  s2 = __byte_perm(p2, q2, 0x5410);
  s3 = __byte_perm(p2, q2, 0x7632);
}

// Tiles: a warp moves word rows 4c..4c+3 of column groups 8a..8a+7 (lane:
// group 8a + lane%8, word row 4c + lane/8), so that its shared-memory
// accesses (4q+i)*W + wr fall in 32 different banks for odd W.
LCT_DEV void stage_in(u32* rows, int W, const u8* __restrict__ area, int Cb, int words) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int tiles = ((words + 3) >> 2) * 8;
  for (int t = warp; t < tiles; t += 8) {
    const int q = ((t & 7) << 3) + (lane & 7);
    const int wr = ((t >> 3) << 2) + (lane >> 3);
    if (wr < words) {
      const int k = wr << 2;
      const u32* col = (const u32*)(area + (long long)k * 256) + q;
      const u32 x0 = __ldg(col);
      const u32 x1 = k + 1 < Cb ? __ldg(col + 64) : 0u;
      const u32 x2 = k + 2 < Cb ? __ldg(col + 128) : 0u;
      const u32 x3 = k + 3 < Cb ? __ldg(col + 192) : 0u;
      u32 s0, s1, s2, s3;
      rows_to_streams(x0, x1, x2, x3, s0, s1, s2, s3);
      u32* r = rows + (q << 2) * W + wr;
      r[0] = s0;
      r[W] = s1;
      r[2 * W] = s2;
      r[3 * W] = s3;
    }
  }
}

LCT_DEV void stage_out(const u32* rows, int W, u8* __restrict__ area, int Cb, int words) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int tiles = ((words + 3) >> 2) * 8;
  for (int t = warp; t < tiles; t += 8) {
    const int q = ((t & 7) << 3) + (lane & 7);
    const int wr = ((t >> 3) << 2) + (lane >> 3);
    if (wr < words) {
      const int k = wr << 2;
      const u32* r = rows + (q << 2) * W + wr;
      u32 z0, z1, z2, z3;
      // The transpose is its own inverse up to reversing both sides.
      rows_to_streams(r[3 * W], r[2 * W], r[W], r[0], z0, z1, z2, z3);
      u32* col = (u32*)(area + (long long)k * 256) + q;
      col[0] = z3;
      if (k + 1 < Cb) col[64] = z2;
      if (k + 2 < Cb) col[128] = z1;
      if (k + 3 < Cb) col[192] = z0;
    }
  }
}

// ---- bit reader and writer of one stream ------------------------------------

// Decode table entry, by the next 8 bits of a stream, one field a byte:
// exponent | advance << 8 | code length << 16 | flags << 24, the advance
// being the code length (+8 for ESC, whose literal follows); flag bit 0 marks
// ESC, bit 7 an invalid prefix (which advances 8 bits, to keep going).
// Encode table entry, by exponent: the code (ESC and the literal for an
// escaped exponent, at most 16 bits) left-aligned in the top bits | length.
#define LCT_ESC (1u << 24)
#define LCT_INVALID 0x80000000u

struct Reader {
  u64 buf;         // the stream from bit pos on, left-aligned: bits up to
                   // word w (32*(w-row) - pos of them) and past that zeros
                   // or the stream's next bits
  u32 pos;         // bits consumed, from the row's first bit
  u32 seen;        // the OR of the table entries met: bit 31, an invalid prefix
  u32 w;           // the next word to load, as an index from base
  u32 row;         // the row's first word, likewise
  u32 nx;          // PIPE readers: word w, loaded ahead
  const u32* base;
};

// rd_init starts the reader of the row that starts at base[row].
template <bool PIPE = false>
LCT_DEV void rd_init(Reader& r, const u32* base, int row) {
  r.buf = (u64)base[row] << 32;
  r.pos = 0;
  r.seen = 0;
  r.w = (u32)row + 1;
  r.row = (u32)row;
  r.base = base;
  if (PIPE) r.nx = base[r.w];
}

// rd_refill keeps at least 32 bits in the buffer: enough for two symbols,
// each at most 16 bits (ESC and its literal). It has no branch: word w
// goes in at its place, 32*(w-row) - pos bits in (32 the first time, else
// less than 64 since a symbol went since the last refill), unless more than
// 32 bits are there already (then the lane loads nothing: shared memory
// serves fewer lanes); w moves to 2 words past the word of pos. Since the
// last refill consumed at most 32 bits, w moves by at most one word, the one
// just ORed, and only when it fitted whole; where it did not, the bits that
// fitted are the stream's next bits all the same, and a later refill ORs the
// same word again at the same place.
//
// A PIPE reader loads word w as soon as it knows w, at the end of the
// refill before (the rows do not change while they are read), so that the
// load is off the chain of dependent steps each symbol waits for: the
// decoder is bound by that chain's latency, not by shared-memory traffic.
// It loads whether or not the word will fit: the same addresses a plain
// reader may read, within the slack past the last row.
template <bool PIPE = false>
LCT_DEV void rd_refill(Reader& r) {
  const u32 nb = 32u * (r.w - r.row) - r.pos;
  u32 x;
  if (PIPE) x = nb <= 32u ? r.nx : 0u;
  else x = nb <= 32u ? r.base[r.w] : 0u;
  r.buf |= ((u64)x << 32) >> nb;
  r.w = r.row + (r.pos >> 5) + 2u;
  if (PIPE) r.nx = r.base[r.w];
}

// The decoder's own tables, made from the Go-built one (rd_tables): by the
// next 8 bits, the advance A (a byte) and an entry E (16 bits: small
// tables, fewer shared-memory bank conflicts for the lanes' random lookups)
// such that funnelshift_rc(window, E, E) has the symbol in its low byte: for
// a coded exponent E is exponent | advance << 8 (>= 256, so the shift clamps
// to 32 and gives E); for ESC it is 24 - code length, which shifts the
// literal that follows the code into the low byte. An invalid prefix is
// 0x8000 | 8 << 8, its bit 15 seen by rd_error.
#define LCT_E_INVALID 0x8000u
LCT_DEV void rd_tables(u16* E, u8* A, const u32* __restrict__ go, int j) {
  const u32 g = __ldg(go + j);
  E[j] = (u16)((g & LCT_INVALID) ? (LCT_E_INVALID | (g & 0xFFFFu)) : (g & LCT_ESC) ? 24u - ((g >> 16) & 0xFFu) : (g & 0xFFFFu));
  A[j] = (u8)(g >> 8);
}

LCT_DEV u32 fshr_clamp(u32 lo, u32 hi, u32 s) {
#ifdef LCT_EMU
  s = s < 32 ? s : 32;
  return (u32)((((u64)hi << 32) | lo) >> s);
#else
  return __funnelshift_rc(lo, hi, s);
#endif
}

LCT_DEV u32 fshl_clamp(u32 lo, u32 hi, u32 s) {
#ifdef LCT_EMU
  s = s < 32 ? s : 32;
  return (u32)(((((u64)hi << 32) | lo) << s) >> 32);
#else
  return __funnelshift_lc(lo, hi, s);
#endif
}

// The reader's tables as it looks them up (rd_tables).
struct DecSplit {
  const u16* E;
  const u8* A;
};
LCT_DEV void dec_get(const DecSplit& t, u32 i, u32& e, u32& a) {
  e = t.E[i];
  a = t.A[i];
}

// rd_pair decodes two symbols into c1 and c2 (refilling first): the second
// one's window is a funnel shift of the buffer, which moves once.
template <bool PIPE = false, class TAB>
LCT_DEV void rd_pair(Reader& r, const TAB& tab, u8* c1, u8* c2) {
  rd_refill<PIPE>(r);
  const u32 hi = (u32)(r.buf >> 32), lo = (u32)r.buf;
  u32 e1, a1, e2, a2;
  dec_get(tab, hi >> 24, e1, a1);
  *c1 = (u8)fshr_clamp(hi, e1, e1);
  const u32 hi2 = fshl_clamp(lo, hi, a1);
  dec_get(tab, hi2 >> 24, e2, a2);
  *c2 = (u8)fshr_clamp(hi2, e2, e2);
  r.buf <<= a1 + a2;
  r.pos += a1 + a2;
  r.seen |= e1 | e2;
}

template <bool PIPE = false, class TAB>
LCT_DEV void rd_one(Reader& r, const TAB& tab, u8* col) {
  rd_refill<PIPE>(r);
  const u32 hi = (u32)(r.buf >> 32);
  u32 e, a;
  dec_get(tab, hi >> 24, e, a);
  col[0] = (u8)fshr_clamp(hi, e, e);
  r.buf <<= a;
  r.pos += a;
  r.seen |= e;
}

// rd_error is the reader's error kind at the end of its stream, 0 if none.
LCT_DEV u32 rd_error(const Reader& r, u32 capBits) {
  if (r.seen & LCT_E_INVALID) return LCT_ERR_INVALID_CODE;
  if (r.pos > capBits) return LCT_ERR_PAST_CAPACITY;
  return 0;
}

// The writer appends every code, fitting or not, and counts those that fit:
// since the bits only grow, they are a prefix, the exponents before the
// first code that does not fit (format.md §3). wr_finish then clears what
// came after them. This keeps the per-exponent work free of branches.
// Codes go in by pairs (one append of up to 32 bits, one fit check): the
// pair where the codes stop fitting may still fit its first code, which
// wr_fix settles at the end.
struct Writer {
  u32 hi;     // pending bits, left-aligned
  u32 pend;   // pending bits, < 32
  u32 U;      // bits appended << 9 | codes appended
  u32 F;      // the same for the codes that fit
  u32 capU;   // capacity in bits << 9 | 511
  u32 w;      // the pending word, as an index from base
  u32 row;    // the row's first word, likewise
  u32 end;    // the word past the row, likewise
  int sink;   // where the words of a spilling stream past its row go,
              // likewise: the spare word at end where rows have one
              // (row_stride_out), else a scratch word
  u32* base;
  // Set by wr_finish:
  u32 fit;    // bits of the codes that fit
  u32 coded;  // exponents that fit
};

// row_stride_out is the distance in words between two written rows: one
// spare word past a full row, and odd.
LCT_DEV int row_stride_out(long long C) { return (int)((((C + 3) >> 2) + 1) | 1); }

// wr_init starts the writer of the row at base[row .. row+words-1].
LCT_DEV void wr_init(Writer& s, u32* base, int row, u32 capBits, int words, u32* sink) {
  s.hi = 0;
  s.pend = 0;
  s.U = 0;
  s.F = 0;
  s.capU = capBits << 9 | 511u;
  s.w = (u32)row;
  s.row = (u32)row;
  s.end = (u32)(row + words);
  s.sink = (int)(sink - base);
  s.base = base;
  s.fit = 0;
  s.coded = 0;
}

// wr_bits appends the n <= 32 bits left-aligned in c. SPARE: the row has
// its spare word (sink == end), which saves an instruction.
template <bool SPARE>
LCT_DEV void wr_bits(Writer& s, u32 c, u32 n) {
  s.hi |= c >> s.pend;
  const u32 lo = fshr_clamp(0u, c, s.pend);  // c << (32 - pend): the bits past this word
  s.pend += n;
  // Store the current word whether it is complete or not (a later store or
  // wr_finish completes it): no branch.
  if (SPARE) s.base[umin(s.w, s.end)] = s.hi;
  else s.base[s.w < s.end ? (int)s.w : s.sink] = s.hi;
  const u32 full = s.pend >> 5;
  s.w += full;
  s.hi = full ? lo : s.hi;
  s.pend &= 31u;
}

// wr_count records that k codes of n bits in all were appended.
LCT_DEV void wr_count(Writer& s, u32 n, u32 k) {
  s.U += (n << 9) + k;
  s.F = s.U <= s.capU ? s.U : s.F;
}

template <bool SPARE>
LCT_DEV void wr_put2(Writer& s, u32 x1, u32 x2, const u32* enc) {
  const u32 e1 = enc[x1], e2 = enc[x2];
  const u32 l1 = e1 & 31u, l2 = e2 & 31u;
  wr_count(s, l1 + l2, 2);
  wr_bits<SPARE>(s, (e1 & ~31u) | ((e2 & ~31u) >> l1), l1 + l2);
}

template <bool SPARE>
LCT_DEV void wr_put1(Writer& s, u32 x, const u32* enc) {
  const u32 e = enc[x];
  const u32 l = e & 31u;
  wr_count(s, l, 1);
  wr_bits<SPARE>(s, e & ~31u, l);
}

// wr_put2s is wr_put2 with the table split in two: codes (left-aligned,
// nothing else) and lengths (bytes), so that the lengths come from a lookup
// rather than from masking (lookups use the load pipe, masks the integer
// pipe, which the encoder keeps busier).
template <bool SPARE>
LCT_DEV void wr_put2s(Writer& s, u32 x1, u32 x2, const u32* code, const u8* len) {
  const u32 c1 = code[x1], c2 = code[x2];
  const u32 l1 = len[x1], l2 = len[x2];
  wr_count(s, l1 + l2, 2);
  wr_bits<SPARE>(s, c1 | (c2 >> l1), l1 + l2);
}

template <bool SPARE>
LCT_DEV void wr_put1s(Writer& s, u32 x, const u32* code, const u8* len) {
  const u32 l = len[x];
  wr_count(s, l, 1);
  wr_bits<SPARE>(s, code[x], l);
}

// wr_word is word i of the row as appended so far (0 past the row).
LCT_DEV u32 wr_word(const Writer& s, u32 i) {
  const u32 words = s.end - s.row;
  if (i >= words) return 0u;
  return s.w - s.row > i ? s.base[s.row + i] : s.hi;
}

// wr_fix settles the pair where the codes stopped fitting (a spilling
// stream only): its first code may fit. That code starts at bit fit of the
// row, which holds every appended bit up to the capacity; the decode table
// dec (Go's, format.md §2) gives its length from its first 8 bits. Bits
// past the capacity (those of the next code, or 0 past the row) cannot make
// it look shorter than it is: no code is a prefix of another.
LCT_DEV void wr_fix(Writer& s, const u32* __restrict__ dec) {
  if (s.U <= s.capU) return;
  const u32 b = s.fit & 31u;
  const u32 x0 = wr_word(s, s.fit >> 5), x1 = wr_word(s, (s.fit >> 5) + 1);
  const u32 bits = b ? (x0 << b) | (x1 >> (32 - b)) : x0;
  const u32 e = __ldg(dec + (bits >> 24));
  const u32 adv = (e >> 8) & 0xFFu;
  if (!(e & LCT_INVALID) && s.fit + adv <= (s.capU >> 9)) {
    s.coded++;
    s.fit += adv;
  }
}

// wr_finish settles the end of the stream (dec: see wr_fix) and clears the
// row past the codes that fit.
LCT_DEV void wr_finish(Writer& s, const u32* __restrict__ dec) {
  s.fit = s.F >> 9;
  s.coded = s.F & 511u;
  wr_fix(s, dec);
  const u32 words = s.end - s.row;
  u32 w = s.fit >> 5;
  if (w < words) {
    // The word holding the end of the codes that fit: stored already, or
    // still pending. Keep its first fit%32 bits.
    const u32 x = wr_word(s, w);
    const u32 b = s.fit & 31u;
    s.base[s.row + w++] = b ? x & (0xFFFFFFFFu << (32 - b)) : 0u;
  }
  for (; w < words; w++) s.base[s.row + w] = 0;
}

// ---- spills -----------------------------------------------------------------

// InSpill is where stream j of a block being decoded stops and where its
// spilled exponents are.
struct InSpill {
  int coded;
  const u8* ovp;
};

// in_spill reads the block's bitmap, markers and offset (format.md §3),
// checking each against the overflow length. Every thread must call it.
LCT_DEV void in_spill(InSpill& s, const LctDesc* d, const Geo& g, int b, int j, u32* tmp) {
  const u32 bm = __ldg((const u32*)d->bitmaps + (long long)b * 8 + (j >> 5));
  const u32 flag = (bm >> (j & 31)) & 1u;
  s.coded = g.count;
  s.ovp = (const u8*)d->overflow;
  if (!__syncthreads_or(flag)) return;
  u32 S;
  const u32 m = block_scan(flag, tmp, S);
  u64 ovlen = ((const u64*)d->status)[0];
  if (ovlen > (u64)d->ovcap) ovlen = (u64)d->ovcap;
  const u64 off = __ldg((const u32*)d->offsets + b);
  u32 spill = 0;
  if (flag) {
    if (g.count == 0 || off + m >= ovlen) {
      report(d, b, j, LCT_ERR_OVERFLOW_BOUNDS);
    } else {
      spill = ((const u8*)d->overflow)[off + m];
      if (spill == 0 || (int)spill > g.count) {
        report(d, b, j, LCT_ERR_MARKER);
        spill = 0;
      }
    }
  }
  u32 total;
  const u32 e = block_scan(spill, tmp, total);
  const u64 start = off + S + e;
  if (spill && start + spill > ovlen) {
    report(d, b, j, LCT_ERR_OVERFLOW_BOUNDS);
    spill = 0;
  }
  s.coded = g.count - (int)spill;
  s.ovp = (const u8*)d->overflow + start;
}

// out_finish records what the block's encoding spilled: bitmap, the block's
// sizes and, with COUNTS (for an overflow pass), per-stream counts where the
// block spills. It returns the block's overflow size and sets S to its
// spilling streams. Every thread must call it.
template <bool COUNTS>
LCT_DEV u32 out_finish(const LctDesc* d, const Geo& g, const Writer& w, int b, int j, u32* tmp, u32& S) {
  const u32 spill = (u32)(g.count - (int)w.coded);
  const u32 flag = spill > 0;
  const u32 mask = __ballot_sync(LCT_FULL, flag);
  if ((j & 31) == 0) ((u32*)d->bitmaps)[(long long)b * 8 + (j >> 5)] = mask;
  u32 spilled, bits;
  block_sum3(flag, spill, w.fit, tmp, S, spilled, bits);
  if (COUNTS && S) ((u8*)d->spill)[(long long)b * 256 + j] = (u8)spill;
  if (j == 0) {
    u32* bs = (u32*)d->bstats + 4LL * b;
    bs[0] = S + spilled;
    bs[1] = bits;
    bs[2] = spilled;
    bs[3] = S;
  }
  return S + spilled;
}

// ldcg reads what other CTAs wrote, past the L1 cache.
LCT_DEV u32 ldcg(const u32* p) {
#ifdef LCT_EMU
  return *(volatile const u32*)p;
#else
  return __ldcg(p);
#endif
}

// scan_offsets turns the per-block overflow sizes of d into offsets and the
// overflow length, for the fused updates (the encoders look back instead).
// One CTA runs it, once every block is encoded: thread t
// takes a run of consecutive blocks, sums it (independent loads, in
// flight together), and after one CTA-wide scan writes the run's offsets.
// Sizes and offsets are uint32 (format.md §5), so are the sums.
LCT_DEV void scan_offsets(const LctDesc* d, u32* tmp) {
  const int nbk = (int)d->nblocks;
  const u32* bs = (const u32*)d->bstats;
  u32* off = (u32*)d->offsets;
  const int per = (nbk + 255) >> 8;
  const int lo = imin((int)threadIdx.x * per, nbk), hi = imin(lo + per, nbk);
  u32 sum = 0;
#pragma unroll 8
  for (int b = lo; b < hi; b++) sum += ldcg(bs + 4 * b);
  u32 total;
  u32 run = block_scan(sum, tmp, total);
#pragma unroll 8
  for (int b = lo; b < hi; b++) {
    off[b] = run;
    run += ldcg(bs + 4 * b);
  }
  if (threadIdx.x == 0) ((u64*)d->status)[0] = total;
}

// finished counts this CTA's block as done and tells whether it was the last
// (then every block's sizes are in memory). Every thread must call it.
LCT_DEV bool finished(const LctDesc* d, u32* tmp) {
  if (threadIdx.x == 0) {
    __threadfence();
    u32* counter = (u32*)((u64*)d->status + 2);
    const u32 ticket = atomicAdd(counter, 1u);
    const bool last = ticket == (u32)d->nblocks - 1;
    if (last) *counter = 0;  // ready for the next launch
    tmp[LCT_TMP_LAST] = last;
  }
  __syncthreads();
  const bool last = tmp[LCT_TMP_LAST] != 0;
  if (last) __threadfence();
  return last;
}

// OutSpill is where the overflow pass puts stream j's spilled exponents.
struct OutSpill {
  int coded;
  u8* ovp;
  int active;  // the block spills and its region fits the overflow buffer
};

// out_spill writes the block's markers and finds each stream's spill region
// from the counts the encoder left and the offset the scan computed. Every
// thread must call it; active is the same for the whole CTA.
LCT_DEV void out_spill(OutSpill& s, const LctDesc* d, const Geo& g, int b, int j, u32* tmp) {
  const u32* bs = (const u32*)d->bstats + 4LL * b;
  const u32 size = bs[0];
  const u64 off = ((const u32*)d->offsets)[b];
  s.active = size != 0 && off + size <= (u64)d->ovcap;
  s.coded = g.count;
  s.ovp = (u8*)d->overflow;
  if (!s.active) return;
  const u32 spill = ((const u8*)d->spill)[(long long)b * 256 + j];
  u32 S, total;
  const u32 m = block_scan(spill > 0, tmp, S);
  const u32 e = block_scan(spill, tmp, total);
  u8* ov = (u8*)d->overflow + off;
  if (spill) ov[m] = (u8)spill;
  s.coded = g.count - (int)spill;
  s.ovp = ov + S + e;
}

// ---- overflow offsets in one pass: decoupled look-back --------------------------
//
// An encoding CTA places its block's overflow region itself: it needs the
// sum of the overflow sizes of the blocks before it. It publishes its own
// size as soon as it knows it (an "aggregate"), then looks back over its
// predecessors' published words, 32 at a time (a lane of warp 0 each),
// adding aggregates until it meets an inclusive prefix, and publishes its
// own inclusive prefix (Merrill & Garland's single-pass scan, as in CUB). A
// CTA waits only on lower blocks, and it takes its block from a ticket
// counter, not from blockIdx: every lower block is running or done, so the
// wait ends.
//
// A block's word is value | kind << 32 | epoch << 34, published whole by one
// 64-bit store. The epoch is the tensor's count of encodes (mod 2^30), kept
// past the words: a word of an earlier launch carries another epoch and
// reads as not ready, so nothing has to be reset between launches. The last
// block moves the epoch on once it has its prefix: by then every block has
// published, so has read the epoch it publishes with.
#define LCT_LB_AGG 1u  // the block's own overflow size
#define LCT_LB_PRE 2u  // the sizes up to and including the block's
#define LCT_EPOCH_MASK 0x3FFFFFFFu
#define LCT_TMP_OFF 27     // scratch word: the block's overflow offset
#define LCT_TMP_TICKET 28  // scratch word: the CTA's ticket

LCT_DEV u64 lb_word(u32 epoch, u32 kind, u32 v) { return ((u64)(epoch & LCT_EPOCH_MASK) << 34) | ((u64)kind << 32) | v; }

// ld_relaxed and st_relaxed read and write a word that other CTAs of the
// launch write or read, at the GPU's scope (in L2, past the L1 cache).
LCT_DEV u64 ld_relaxed(const u64* p) {
#ifdef LCT_EMU
  return __atomic_load_n(p, __ATOMIC_SEQ_CST);
#else
  u64 v;
  asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#endif
}

LCT_DEV void st_relaxed(u64* p, u64 v) {
#ifdef LCT_EMU
  __atomic_store_n(p, v, __ATOMIC_SEQ_CST);
#else
  asm volatile("st.relaxed.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#endif
}

// The emulation runs CTAs one after another, so a CTA always finds its
// predecessor's prefix; with lct_emu_lazy_prefix set to p (tests), only
// every p-th block publishes one, and with p longer than a window some
// blocks add aggregates over more than one, as they do on a GPU where
// blocks are still looking back when their successors do.
#ifdef LCT_EMU
#define LCT_LAZY_PREFIX(b) (lct_emu_lazy_prefix && (b) % lct_emu_lazy_prefix != 0)
#else
#define LCT_LAZY_PREFIX(b) false
#endif

// take_ticket gives the CTA its place among the launch's CTAs in the order
// they start; the one that takes the last leaves the counter at 0 for the
// next launch. Every thread must call it; slot is a scratch word of shared
// memory. It costs: a CTA can load nothing of its block before the atomic
// returns. On the H200, encodes of many waves took 4-8% longer with it than
// with blockIdx as the block (CUB's choice, which relies on CTAs starting
// in blockIdx order): 256 Mi 318.5 against 300.8 us, a layer's activations
// batched 176 against 163 us; one wave or less, the same.
LCT_DEV u32 take_ticket(u32* counter, u32* slot) {
  if (threadIdx.x == 0) {
    const u32 t = atomicAdd(counter, 1u);
    if (t == gridDim.x - 1) *counter = 0;
    *(volatile u32*)slot = t;
  }
  __syncthreads();
  return *(volatile u32*)slot;
}

// lookback returns the sum of the overflow sizes of blocks 0..b-1 (b > 0).
// Every lane of warp 0 calls it, and gets the sum. Lane i reads the word of
// block top - i. Going back from the nearest, the walk adds aggregates up
// to the first word that is a prefix (added: the sum is complete) or not
// yet published (of another epoch): it then waits on that word alone, not
// on the words past it, which it may never need. (On the H200 this is as
// fast as waiting for the whole window of 32, CUB's way; windows of 256,
// 8 words a lane, made a 256 Mi encode 2.5 times slower.)
LCT_DEV u32 lookback(const u64* look, int b, u32 epoch) {
  const int lane = threadIdx.x & 31;
  const u32 ep = epoch & LCT_EPOCH_MASK;
  u32 sum = 0;
  for (int top = b - 1;;) {
    const int k = top - lane;
    // Before block 0: a prefix of 0.
    const u64 w = k >= 0 ? ld_relaxed(look + k) : (u64)LCT_LB_PRE << 32;
    const u32 kind = (u32)(w >> 32) & 3u;
    const bool ready = k < 0 || ((u32)(w >> 34) == ep && kind != 0);
    const u32 pre = __ballot_sync(LCT_FULL, ready && kind == LCT_LB_PRE);
    const u32 wait = __ballot_sync(LCT_FULL, !ready);
    const u32 ends = pre | wait;
    const int end = ends ? __ffs(ends) - 1 : 32;  // the nearest lane that ends the walk
    const bool done = end < 32 && ((pre >> end) & 1u);
    u32 v = lane < end || (done && lane == end) ? (u32)w : 0u;
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(LCT_FULL, v, o);
    sum += v;
    if (done) return sum;
    top -= end;  // the word not yet published, or the next window
  }
}

// ---- values in and out of a chunk --------------------------------------------

LCT_DEV u32 split_sf2(u32 v) { return ((v >> 8) & 0x00800080u) | (v & 0x007F007Fu); }
LCT_DEV u32 split_ex2(u32 v) { return (v >> 7) & 0x00FF00FFu; }
// join2 joins two sf and exponent bytes, each in the low byte of a 16-bit
// lane: sign·255 + sf moves the sign from bit 7 to bit 15 (two multiply-adds,
// off the integer pipe that the coding loops keep busy).
LCT_DEV u32 join2(u32 s2, u32 e2) { return (s2 & 0x00800080u) * 0xFFu + s2 + e2 * 0x80u; }

// split8 splits 8 BF16 values into their sf and exponent bytes.
LCT_DEV void split8(uint4 v, uint2& sf, uint2& ex) {
  ex.x = __byte_perm(split_ex2(v.x), split_ex2(v.y), 0x6420);
  ex.y = __byte_perm(split_ex2(v.z), split_ex2(v.w), 0x6420);
  sf.x = __byte_perm(split_sf2(v.x), split_sf2(v.y), 0x6420);
  sf.y = __byte_perm(split_sf2(v.z), split_sf2(v.w), 0x6420);
}

// join8 joins 8 sf and exponent bytes into BF16 values.
LCT_DEV uint4 join8(uint2 sf, uint2 ex) {
  uint4 v;
  v.x = join2(__byte_perm(sf.x, 0, 0x4140), __byte_perm(ex.x, 0, 0x4140));
  v.y = join2(__byte_perm(sf.x, 0, 0x4342), __byte_perm(ex.x, 0, 0x4342));
  v.z = join2(__byte_perm(sf.y, 0, 0x4140), __byte_perm(ex.y, 0, 0x4140));
  v.w = join2(__byte_perm(sf.y, 0, 0x4342), __byte_perm(ex.y, 0, 0x4342));
  return v;
}

LCT_DEV u32 byte_of(uint2 v, int i) { return ((i < 4 ? v.x : v.y) >> (8 * (i & 3))) & 0xFFu; }
LCT_DEV u32 half_of(uint4 v, int i) {
  const u32 w = i < 2 ? v.x : i < 4 ? v.y : i < 6 ? v.z : v.w;
  return (i & 1) ? (w >> 16) : (w & 0xFFFFu);
}

// load8 reads elements e0..e0+7 of a block holding nb, zeros past the end.
LCT_DEV uint4 load8(const u16* __restrict__ in, int e0, int nb) {
  if (e0 + 8 <= nb) return __ldg((const uint4*)(in + e0));
  u32 h[8];
  for (int i = 0; i < 8; i++) h[i] = e0 + i < nb ? (u32)in[e0 + i] : 0u;
  uint4 v;
  v.x = h[0] | h[1] << 16;
  v.y = h[2] | h[3] << 16;
  v.z = h[4] | h[5] << 16;
  v.w = h[6] | h[7] << 16;
  return v;
}

LCT_DEV uint2 load8b(const u8* __restrict__ in, int e0, int nb) {
  if (e0 + 8 <= nb) return __ldg((const uint2*)(in + e0));
  u32 lo = 0, hi = 0;
  for (int i = 0; i < 8; i++) {
    const u32 x = e0 + i < nb ? (u32)in[e0 + i] : 0u;
    if (i < 4) lo |= x << (8 * i);
    else hi |= x << (8 * (i - 4));
  }
  uint2 v;
  v.x = lo;
  v.y = hi;
  return v;
}

LCT_DEV void store8b(u8* out, int e0, int nb, uint2 v) {
  if (e0 + 8 <= nb) {
    *(uint2*)(out + e0) = v;
    return;
  }
  for (int i = 0; i < 8; i++)
    if (e0 + i < nb) out[e0 + i] = (u8)byte_of(v, i);
}

LCT_DEV void store8(u16* out, int e0, int nb, uint4 v) {
  if (e0 + 8 <= nb) {
    *(uint4*)(out + e0) = v;
    return;
  }
  for (int i = 0; i < 8; i++)
    if (e0 + i < nb) out[e0 + i] = (u16)half_of(v, i);
}

// Group k of thread j in the chunk at position p0: elements e0..e0+7 of the
// block, bytes 8q..8q+7 of the chunk's exponent buffer.
LCT_DEV int group_q(int k) { return (int)threadIdx.x + (k << 8); }
LCT_DEV int group_e0(int p0, int k) { return (p0 << 8) + (group_q(k) << 3); }

// decode_column_at is decode_column with w = skew_w(j, p0) and FLAT from
// flat_chunk.
template <bool PIPE, bool FLAT, class TAB>
LCT_DEV void decode_column_at(Reader& r, const InSpill& sp, int count, u8* ex, const TAB& tab, int p0, int pe, int w) {
  const int nd = imax(0, imin(pe, sp.coded - p0));
  const int nc = imax(0, imin(pe, count - p0));
  if (nd == LCT_CH) {  // a whole chunk from the stream (the common case)
#pragma unroll
    for (int pp = 0; pp < LCT_CH; pp += 2) rd_pair<PIPE>(r, tab, ex + at<FLAT>(w, pp), ex + at<FLAT>(w, pp + 1));
    return;
  }
  int pp = 0;
#pragma unroll 2
  for (; pp + 1 < nd; pp += 2) rd_pair<PIPE>(r, tab, ex + at<FLAT>(w, pp), ex + at<FLAT>(w, pp + 1));
  if (pp < nd) rd_one<PIPE>(r, tab, ex + at<FLAT>(w, pp));
  // The spilled positions, from the overflow area: eight loads in flight
  // before their stores (a stream that spilled early reads a whole chunk
  // of them here, not one round trip per exponent).
  const u8* __restrict__ ov = sp.ovp;
  const int at0 = p0 - sp.coded;  // ov index of position pp is at0 + pp
  for (pp = nd; pp + 8 <= nc; pp += 8) {
    u8 v[8];
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = __ldg(ov + at0 + pp + k);
#pragma unroll
    for (int k = 0; k < 8; k++) ex[at<FLAT>(w, pp + k)] = v[k];
  }
  for (; pp < nc; pp++) ex[at<FLAT>(w, pp)] = __ldg(ov + at0 + pp);
}

// decode_column decodes stream j's positions p0..p0+pe-1 into the chunk's
// exponent buffer (its cells, see cell): from the stream up to the spill,
// then raw from the overflow area. tab is the reader's tables. Every lane of
// the warp must call it.
template <bool PIPE, class TAB>
LCT_DEV void decode_column(Reader& r, const InSpill& sp, int count, u8* ex, const TAB& tab, int p0, int pe) {
  const int w = skew_w(threadIdx.x, p0);
  if (flat_chunk(w, LCT_CH)) decode_column_at<PIPE, true>(r, sp, count, ex, tab, p0, pe, w);
  else decode_column_at<PIPE, false>(r, sp, count, ex, tab, p0, pe, w);
}

// decode_columns is decode_column for NT tensors at once, interleaved where
// all of them decode from their streams.
template <int NT>
LCT_DEV void decode_columns(Reader* rd, const InSpill* is, int count, u8* ex, const u16* E, const u8* A, int p0, int pe) {
  const int w = skew_w(threadIdx.x, p0);
  int common = pe;
#pragma unroll
  for (int t = 0; t < NT; t++) common = imin(common, is[t].coded - p0);
  common = imax(common, 0);
  int pp = 0;
  for (; pp + 1 < common; pp += 2) {
#pragma unroll
    for (int t = 0; t < NT; t++) {
      u8* ext = ex + t * LCT_CHF * 256;
      rd_pair(rd[t], DecSplit{E + t * 256, A + t * 256}, ext + cell(w, pp), ext + cell(w, pp + 1));
    }
  }
  const int nc = imax(0, imin(pe, count - p0));
#pragma unroll
  for (int t = 0; t < NT; t++) {
    u8* ext = ex + t * LCT_CHF * 256;
    const int nd = imax(0, imin(pe, is[t].coded - p0));
    for (int q = pp; q < nd; q++) rd_one(rd[t], DecSplit{E + t * 256, A + t * 256}, ext + cell(w, q));
    for (int q = nd; q < nc; q++) ext[cell(w, q)] = is[t].ovp[p0 + q - is[t].coded];
  }
}

// ---- histograms counted by the encoder ----------------------------------------

// A batched encode can count each tensor's exponent histogram while it codes
// (no second read of the source). A CTA counts its block into 256 32-bit
// shared counters, bin x at hs[x * hstride]: where the rows have a word to
// spare past each writer's spare word (row_stride_out rounds up to odd),
// bin x sits in row x's last word and costs no shared memory; otherwise the
// counters follow the rows (hist_in_rows, and encodeHistSmem in gpu/). At
// the end the CTA adds them to the tensor's 64-bit scratch histogram in
// global memory; the tensor's last block, once its look-back has met every
// block's word, moves the scratch to the caller's histogram and leaves it
// zero for the next launch. Integer sums: the same
// counts whatever the order.
//
// Each lane adds its own exponent with a shared atomic whose result it does
// not use, so the warp does not wait for it; lanes of one address are
// serialised by the hardware. (Adding once per distinct exponent of a warp,
// with __match_any_sync, made the H200 wait for every match: one layer's
// parameters took 71 us to encode with it, 50 us this way, 43 us without
// counting.)
LCT_DEV bool hist_in_rows(long long C) { return row_stride_out(C) > (int)((C + 3) >> 2) + 1; }

// hist_add counts x; its result unused, the warp does not wait for it.
LCT_DEV void hist_add(u32* hs, int hstride, u32 x) { atomicAdd(&hs[x * hstride], 1u); }

// ---- encode -------------------------------------------------------------------

// lct_encode and lct_decode are bounded to 40 registers so that six CTAs (48
// warps, with about 37 KB of shared memory each) share a multiprocessor: the
// coding loops are bound by integer issue, and more warps hide the table
// lookups' latency.

// encode_chunk appends thread j's positions p0 .. p0+lim-1 to its stream
// from the chunk's exponent buffer (sw = skew_w(j, p0), FLAT from
// flat_chunk), counting them with HIST; whole: every stream has the chunk.
template <bool HIST, bool FLAT>
LCT_DEV void encode_chunk(Writer& w, const u8* ex, int sw, int lim, bool whole, const u32* code, const u8* len, u32* hs, int hstride) {
  if (HIST && whole) {
#pragma unroll 4
    for (int pp = 0; pp < LCT_CH; pp += 2) {
      const u32 x1 = ex[at<FLAT>(sw, pp)], x2 = ex[at<FLAT>(sw, pp + 1)];
      hist_add(hs, hstride, x1);
      hist_add(hs, hstride, x2);
      wr_put2s<true>(w, x1, x2, code, len);
    }
    return;
  }
  if (lim == LCT_CH) {
#pragma unroll 4
    for (int pp = 0; pp < LCT_CH; pp += 2) wr_put2s<true>(w, ex[at<FLAT>(sw, pp)], ex[at<FLAT>(sw, pp + 1)], code, len);
  } else {
    int pp = 0;
    for (; pp + 1 < lim; pp += 2) wr_put2s<true>(w, ex[at<FLAT>(sw, pp)], ex[at<FLAT>(sw, pp + 1)], code, len);
    if (pp < lim) wr_put1s<true>(w, ex[at<FLAT>(sw, pp)], code, len);
  }
  if (HIST) {
    for (int pp = 0; pp < lim; pp++) hist_add(hs, hstride, ex[at<FLAT>(sw, pp)]);
  }
}

// encode_block encodes block b of d from src, overflow included (the
// region's offset by look-back). With HIST it also counts the block's
// exponents into scratch (see above); the tensor's last block then writes
// the histogram to hout. Its shared memory starts OFF bytes in.
template <bool HIST, int OFF = 0>
LCT_DEV void encode_block(const LctDesc* __restrict__ d, const u16* __restrict__ src, int b, u64* scratch, u64* hout) {
  u8* smem = LCT_DYNAMIC_SMEM + OFF;
  const int j = threadIdx.x;
  Geo g;
  geo_init(g, d, b, j);
  const int W = row_stride_out(d->C);
  u32* code = (u32*)smem;
  u8* len = smem + 1024;
  u8* ex = len + 256;
  u32* tmp = (u32*)(ex + LCT_CH * 256);
  u32* rows = tmp + 32;
  u32* hs = 0;
  int hstride = 1;
  if (HIST) {
    const bool inRows = hist_in_rows(d->C);
    hs = inRows ? rows + W - 1 : rows + 256 * W;
    hstride = inRows ? W : 1;
    hs[j * hstride] = 0;
  }
  {
    const u32 e = __ldg((const u32*)d->tables + 256 + j);
    code[j] = e & ~31u;
    len[j] = (u8)(e & 31u);
  }
  const u16* in = src + g.base;
  u8* sf = (u8*)d->sf + g.base;
  Writer w;
  wr_init(w, rows, j * W, g.capBits, g.words, rows + j * W + g.words);
  uint4 pre[LCT_G];
#pragma unroll
  for (int k = 0; k < LCT_G; k++) pre[k] = load8(in, group_e0(0, k), g.nb);
  __syncthreads();
  const int minCount = g.nb >> 8;  // positions every stream of the block has
  for (int p0 = 0; p0 < g.P; p0 += LCT_CH) {
#pragma unroll
    for (int k = 0; k < LCT_G; k++) {
      const int e0 = group_e0(p0, k);
      if (e0 < g.nb) {
        uint2 s, e;
        split8(pre[k], s, e);
        *(uint2*)(ex + (group_q(k) << 3)) = e;
        store8b(sf, e0, g.nb, s);
      }
    }
    __syncthreads();
    if (p0 + LCT_CH < g.P) {
#pragma unroll
      for (int k = 0; k < LCT_G; k++) pre[k] = load8(in, group_e0(p0 + LCT_CH, k), g.nb);
    }
    const int lim = imin(LCT_CH, g.count - p0);
    // Every stream has the whole chunk: the same for the CTA.
    const bool whole = p0 + LCT_CH <= minCount;
    const int sw = skew_w(j, p0);
    if (flat_chunk(sw, LCT_CH)) encode_chunk<HIST, true>(w, ex, sw, lim, whole, code, len, hs, hstride);
    else encode_chunk<HIST, false>(w, ex, sw, lim, whole, code, len, hs, hstride);
    __syncthreads();
  }
  if (HIST) {
    // Every count is in (the loop ended with a barrier); add them up.
    const u32 v = hs[j * hstride];
    if (v) atomicAdd(scratch + j, (u64)v);
    __threadfence();  // the counts reach memory before the block's look-back word
  }
  wr_finish(w, (const u32*)d->tables);
  u64* look = (u64*)d->look;
  const int nbk = (int)d->nblocks;
  u32* ctl = (u32*)(look + nbk);  // ticket counter, epoch
  u32 epoch = 0;
  if (j == 0) epoch = ldcg(ctl + 1);  // in flight across out_finish's barriers
  u32 S;
  const u32 size = out_finish<false>(d, g, w, b, j, tmp, S);  // its barriers also complete the rows
  if (j == 0) st_relaxed(look + b, lb_word(epoch, b == 0 ? LCT_LB_PRE : LCT_LB_AGG, size));
  stage_out(rows, W, (u8*)d->streams + g.area, g.Cb, g.words);
  if (j < 32) {
    epoch = __shfl_sync(LCT_FULL, epoch, 0);
    const u32 before = b == 0 ? 0u : lookback(look, b, epoch);
    // With HIST the last block hands the histogram over once every block's
    // counts are in: each block's counts reach memory before its word, and
    // the fence makes what this block read reach memory before what it writes.
    if (HIST) __threadfence();
    if (j == 0) {
      if (b != 0 && !LCT_LAZY_PREFIX(b)) st_relaxed(look + b, lb_word(epoch, LCT_LB_PRE, before + size));
      ((u32*)d->offsets)[b] = before;
      if (b == nbk - 1) {
        ((u64*)d->status)[0] = before + size;  // uint32 sums, as the offsets (format.md §5)
        ctl[1] = epoch + 1;
      }
      tmp[LCT_TMP_OFF] = before;
    }
  }
  __syncthreads();
  const u32 off = tmp[LCT_TMP_OFF];
  if (HIST && b == nbk - 1) hout[j] = atomicExch((unsigned long long*)scratch + j, 0ull);
  if (S != 0 && (u64)off + size <= (u64)d->ovcap) {
    // The block's region fits: markers (one per spilling stream, in stream
    // order), then each stream's spilled exponents, read again from the
    // source. One scan gives both places: spilling streams before this one
    // in bits 17 and up, their spilled exponents below.
    const int spill = g.count - (int)w.coded;
    u32 tot;
    const u32 x = block_scan((spill ? 1u << 17 : 0u) | (u32)spill, tmp, tot);
    u8* ov = (u8*)d->overflow + off;
    if (spill) ov[x >> 17] = (u8)spill;
    // The whole CTA writes the spilled exponents, each thread every 256th:
    // spills gather in a few streams (a matrix's columns of larger scale
    // fall to the same streams), and a stream's own thread would hold the
    // block for up to 255 values, each a round trip to memory. The chunk
    // buffer is free now: it holds each stream's place among the spilled
    // exponents and its first spilled position.
    u32* first = (u32*)ex;
    u32* from = first + 256;
    first[j] = x & 0x1FFFFu;
    from[j] = w.coded;
    __syncthreads();
    const u32 T = tot & 0x1FFFFu;
    u8* __restrict__ out = ov + S;
    for (u32 i = j; i < T; i += 256) {
      // The last stream whose spilled exponents start at or before i
      // (first[0] = 0 <= i; streams that spill nothing share their place
      // with the next stream and are passed over).
      int lo = 0;
#pragma unroll
      for (int step = 128; step; step >>= 1)
        if (first[lo + step] <= i) lo += step;
      const int p = (int)(from[lo] + (i - first[lo]));  // position p of stream lo
      out[i] = (u8)(__ldg(in + ((long long)p << 8) + ((lo - p) & 255)) >> 7);
    }
  }
}

// The encoders' scratch words (tmp of encode_block), OFF bytes into shared memory.
#define LCT_ENC_TMP (1024 + 256 + LCT_CH * 256)
// The encoders ask for five CTAs a multiprocessor, not six: at six the
// compiler caps them at 40 registers and spills to local memory.

extern "C" __global__ void __launch_bounds__(256, 5) lct_encode(const LctDesc* __restrict__ d, const u16* __restrict__ src) {
  u32* ctl = (u32*)((u64*)d->look + d->nblocks);
  const u32 b = take_ticket(ctl, (u32*)(LCT_DYNAMIC_SMEM + LCT_ENC_TMP) + LCT_TMP_TICKET);
  encode_block<false>(d, src, (int)b, 0, 0);
}

// ---- decode -------------------------------------------------------------------

// decode_block decodes block b of d into dst; PIPE: with readers that load
// ahead (rd_refill). Its shared memory starts OFF bytes in.
template <bool PIPE, int OFF = 0>
LCT_DEV void decode_block(const LctDesc* __restrict__ d, u16* __restrict__ dst, int b) {
  u8* smem = LCT_DYNAMIC_SMEM + OFF;
  const int j = threadIdx.x;
  Geo g;
  geo_init(g, d, b, j);
  const int W = row_stride(d->C);
  u16* E = (u16*)smem;
  u8* A = smem + 512;
  u8* ex = A + 256;
  u32* tmp = (u32*)(ex + LCT_CH * 256);
  u32* rows = tmp + 32;
  rd_tables(E, A, (const u32*)d->tables, j);
  if (j < LCT_SLACK) rows[256 * W + j] = 0;
  const u8* sf = (const u8*)d->sf + g.base;
  u16* out = dst + g.base;
  uint2 pre[LCT_G];
#pragma unroll
  for (int k = 0; k < LCT_G; k++) pre[k] = load8b(sf, group_e0(0, k), g.nb);
  stage_in(rows, W, (const u8*)d->streams + g.area, g.Cb, g.words);
  InSpill sp;
  in_spill(sp, d, g, b, j, tmp);
  __syncthreads();
  Reader r;
  rd_init<PIPE>(r, rows, j * W);
  for (int p0 = 0; p0 < g.P; p0 += LCT_CH) {
    decode_column<PIPE>(r, sp, g.count, ex, DecSplit{E, A}, p0, imin(LCT_CH, g.P - p0));
    __syncthreads();
#pragma unroll
    for (int k = 0; k < LCT_G; k++) {
      const int e0 = group_e0(p0, k);
      if (e0 < g.nb) store8(out, e0, g.nb, join8(pre[k], *(const uint2*)(ex + (group_q(k) << 3))));
    }
    if (p0 + LCT_CH < g.P) {
#pragma unroll
      for (int k = 0; k < LCT_G; k++) pre[k] = load8b(sf, group_e0(p0 + LCT_CH, k), g.nb);
    }
    __syncthreads();
  }
  if (const u32 err = rd_error(r, g.capBits)) report(d, b, j, err);
}

extern "C" __global__ void __launch_bounds__(256, 6) lct_decode(const LctDesc* __restrict__ d, u16* __restrict__ dst) {
  decode_block<false>(d, dst, blockIdx.x);
}

// lct_decode_pipe is lct_decode with readers that load ahead (bench: A/B).
extern "C" __global__ void __launch_bounds__(256, 6) lct_decode_pipe(const LctDesc* __restrict__ d, u16* __restrict__ dst) {
  decode_block<true>(d, dst, blockIdx.x);
}

// ---- batches: many tensors in one launch ----------------------------------------

// LctBatch is one tensor of a batched launch; the Go side (gpu/batch.go)
// writes the same 8-byte fields. The launch's CTAs are the blocks of all
// the tensors in order: tensor t has blocks start[t] .. start[t+1]-1. Past
// start[T] is a word the batched encoders count their CTAs with (take_ticket:
// 0 between launches).
struct LctBatch {
  u64 desc;     // const LctDesc*
  u64 data;     // u16*: the values encoded, or decoded into
  u64 hist;     // u64[256]: where the histogram goes (0: none)
  u64 scratch;  // u64[256]: the histogram's scratch, zero between launches
};

// batch_find returns the tensor of grid block b: the last t with
// start[t] <= b (tensors without blocks are passed over).
LCT_DEV int batch_find(const u32* __restrict__ start, int T, u32 b) {
  int lo = 0, hi = T;
  while (hi - lo > 1) {
    const int mid = (lo + hi) >> 1;
    if (__ldg(start + mid) <= b) lo = mid;
    else hi = mid;
  }
  return lo;
}

// batch_desc copies the descriptor of e's tensor into the first
// LCT_BATCH_DESC bytes of dynamic shared memory (the block's own layout
// follows them), where the block's code reads it at fixed addresses,
// holding no registers for its pointer, as the single-tensor kernels hold
// none for their parameter: with the pointer in registers the batched
// coders spilled (ptxas for sm_90: 48 to 100 bytes a thread, against 0 to
// 12 this way). (Not static shared memory: the driver lets every kernel
// have all the dynamic shared memory there is, which leaves none static.)
// The last word of the 144 bytes (the 128-byte descriptor, 16 to spare for
// alignment) is the batched encoders' ticket slot
// (batch_ticket). Every thread must call it.
#define LCT_BATCH_DESC 144
LCT_DEV const LctDesc* batch_desc(const LctBatch* e) {
  LctDesc* sd = (LctDesc*)LCT_DYNAMIC_SMEM;
  const u64* g = (const u64*)__ldg(&e->desc);
  if (threadIdx.x < sizeof(LctDesc) / 8) ((u64*)sd)[threadIdx.x] = g[threadIdx.x];
  __syncthreads();
  return sd;
}

// batch_ticket gives a CTA of a batched encode its tensor t and block b, in
// the order the CTAs start (take_ticket): the counter is the word past the
// block starts. Its slot is the word past the descriptor's (batch_desc).
LCT_DEV u32 batch_ticket(const u32* __restrict__ start, long long T, int& t) {
  const u32 g = take_ticket((u32*)(start + T + 1), (u32*)LCT_DYNAMIC_SMEM + LCT_BATCH_DESC / 4 - 1);
  t = batch_find(start, (int)T, g);
  return g - __ldg(start + t);
}

extern "C" __global__ void __launch_bounds__(256, 5) lct_encode_batch(const LctBatch* __restrict__ bt, const u32* __restrict__ start, long long T) {
  int t;
  const u32 b = batch_ticket(start, T, t);
  const LctBatch* e = bt + t;
  encode_block<false, LCT_BATCH_DESC>(batch_desc(e), (const u16*)__ldg(&e->data), (int)b, 0, 0);
}

extern "C" __global__ void __launch_bounds__(256, 5) lct_encode_batch_hist(const LctBatch* __restrict__ bt, const u32* __restrict__ start, long long T) {
  int t;
  const u32 b = batch_ticket(start, T, t);
  const LctBatch* e = bt + t;
  encode_block<true, LCT_BATCH_DESC>(batch_desc(e), (const u16*)__ldg(&e->data), (int)b, (u64*)__ldg(&e->scratch), (u64*)__ldg(&e->hist));
}

template <bool M>
LCT_DEV void decode_batch(const LctBatch* __restrict__ bt, const u32* __restrict__ start, long long T) {
  const int t = batch_find(start, (int)T, blockIdx.x);
  const LctBatch* e = bt + t;
  decode_block<M, LCT_BATCH_DESC>(batch_desc(e), (u16*)__ldg(&e->data), (int)(blockIdx.x - __ldg(start + t)));
}

extern "C" __global__ void __launch_bounds__(256, 6) lct_decode_batch(const LctBatch* __restrict__ bt, const u32* __restrict__ start, long long T) {
  decode_batch<false>(bt, start, T);
}

extern "C" __global__ void __launch_bounds__(256, 6) lct_decode_batch_pipe(const LctBatch* __restrict__ bt, const u32* __restrict__ start, long long T) {
  decode_batch<true>(bt, start, T);
}

// lct_batch_clear_errors resets the decode error word of every tensor of a
// batch before a batched decode (one CTA; one launch, not one memset each).
extern "C" __global__ void __launch_bounds__(256) lct_batch_clear_errors(const LctBatch* __restrict__ bt, long long T) {
  for (int t = threadIdx.x; t < (int)T; t += blockDim.x) {
    const LctDesc* d = (const LctDesc*)bt[t].desc;
    ((u64*)d->status)[1] = ~0ull;
  }
}

// ---- sampling and histograms ----------------------------------------------------

// lct_sample_hist counts the exponents of the deterministic sample
// (format.md §2): every element when n <= 4096, else the elements at
// floor(((k*0x9E3779B9) mod 2^32) * n / 2^32) for k = 0..4095 (a Weyl
// sequence). One CTA of 256.
extern "C" __global__ void __launch_bounds__(256) lct_sample_hist(const u16* __restrict__ src, long long n, u32* hist) {
  u32* h = (u32*)LCT_DYNAMIC_SMEM;
  const int j = threadIdx.x;
  h[j] = 0;
  __syncthreads();
  if (n <= 4096) {
    for (long long i = j; i < n; i += 256) atomicAdd(&h[(src[i] >> 7) & 0xFF], 1u);
  } else {
    for (int k = j; k < 4096; k += 256) {
      const u64 u = (u32)((u32)k * 0x9E3779B9u);
      const long long i = (long long)((u * (u64)n) >> 32);
      atomicAdd(&h[(src[i] >> 7) & 0xFF], 1u);
    }
  }
  __syncthreads();
  hist[j] = h[j];
}

// lct_hist adds the exponent histogram of src to hist (zeroed by the caller).
extern "C" __global__ void __launch_bounds__(256) lct_hist(const u16* __restrict__ src, long long n, u64* hist) {
  u32* h = (u32*)LCT_DYNAMIC_SMEM;  // a histogram per warp
  const int j = threadIdx.x;
  for (int i = j; i < 8 * 256; i += 256) h[i] = 0;
  __syncthreads();
  u32* hw = h + (j >> 5) * 256;
  const long long groups = n >> 3;
  for (long long q = (long long)blockIdx.x * 256 + j; q < groups; q += (long long)gridDim.x * 256) {
    const uint4 v = __ldg((const uint4*)src + q);
    atomicAdd(&hw[(v.x >> 7) & 0xFF], 1u);
    atomicAdd(&hw[(v.x >> 23) & 0xFF], 1u);
    atomicAdd(&hw[(v.y >> 7) & 0xFF], 1u);
    atomicAdd(&hw[(v.y >> 23) & 0xFF], 1u);
    atomicAdd(&hw[(v.z >> 7) & 0xFF], 1u);
    atomicAdd(&hw[(v.z >> 23) & 0xFF], 1u);
    atomicAdd(&hw[(v.w >> 7) & 0xFF], 1u);
    atomicAdd(&hw[(v.w >> 23) & 0xFF], 1u);
  }
  if (blockIdx.x == 0) {
    for (long long i = groups * 8 + j; i < n; i += 256) atomicAdd(&hw[(src[i] >> 7) & 0xFF], 1u);
  }
  __syncthreads();
  u32 s = 0;
  for (int w = 0; w < 8; w++) s += h[w * 256 + j];
  if (s) atomicAdd(hist + j, (u64)s);
}

// ---- optimizer updates ------------------------------------------------------------

#define LCT_OP_SGD 0
#define LCT_OP_ADAMW 1

LCT_DEV float bf2f(u32 v) { return __uint_as_float(v << 16); }

// f2bf rounds to the nearest BF16, ties to even, as trainer/bf16.FromFloat32
// does. On the GPU it is one cvt.rn.bf16.f32, which gives the same bits for
// every number; a NaN stays NaN (the canonical one, where the CPU keeps the
// payload's top bits: NaN payloads differ between CPU and GPU anyway).
LCT_DEV u32 f2bf(float f) {
#ifdef LCT_EMU
  u32 u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x40u) & 0xFFFFu;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
#else
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#endif
}

// update1 applies one step to one element. v holds W, M (and V for AdamW) as
// BF16 and receives the new values.
//
// SGD, sc = {LR, Momentum, WeightDecay}:
//   d = g + WeightDecay·W;  m' = Momentum·M + d;  W' = W − LR·m'
// AdamW, sc = {LR, Beta1, 1−Beta1, Beta2, 1−Beta2, Eps, WeightDecay, BiasCorr1, BiasCorr2}:
//   m' = Beta1·M + (1−Beta1)·g;  v' = Beta2·V + (1−Beta2)·(g·g)
//   u = (m'/BiasCorr1) / (sqrt(v'/BiasCorr2) + Eps) + WeightDecay·W;  W' = W − LR·u
template <int OP>
LCT_DEV void update1(const float* sc, u32 gv, u32* v) {
  const float g = bf2f(gv), w = bf2f(v[0]), m = bf2f(v[1]);
  if (OP == LCT_OP_SGD) {
    const float d = __fadd_rn(g, __fmul_rn(sc[2], w));
    const float m2 = __fadd_rn(__fmul_rn(sc[1], m), d);
    v[1] = f2bf(m2);
    v[0] = f2bf(__fsub_rn(w, __fmul_rn(sc[0], m2)));
  } else {
    const float vv = bf2f(v[2]);
    const float m2 = __fadd_rn(__fmul_rn(sc[1], m), __fmul_rn(sc[2], g));
    const float v2 = __fadd_rn(__fmul_rn(sc[3], vv), __fmul_rn(sc[4], __fmul_rn(g, g)));
    const float mh = __fdiv_rn(m2, sc[7]);
    const float vh = __fdiv_rn(v2, sc[8]);
    const float u = __fadd_rn(__fdiv_rn(mh, __fadd_rn(__fsqrt_rn(vh), sc[5])), __fmul_rn(sc[6], w));
    v[1] = f2bf(m2);
    v[2] = f2bf(v2);
    v[0] = f2bf(__fsub_rn(w, __fmul_rn(sc[0], u)));
  }
}

// update8 applies update1 to 8 elements: vals[t] holds tensor t's values.
template <int NT, int OP>
LCT_DEV void update8(const float* sc, uint4 g8, uint4* vals) {
  u32 o[NT][4];
#pragma unroll
  for (int t = 0; t < NT; t++) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    u32 v[3];
#pragma unroll
    for (int t = 0; t < NT; t++) v[t] = half_of(vals[t], i);
    update1<OP>(sc, half_of(g8, i), v);
#pragma unroll
    for (int t = 0; t < NT; t++) o[t][i >> 1] |= v[t] << ((i & 1) * 16);
  }
#pragma unroll
  for (int t = 0; t < NT; t++) {
    vals[t].x = o[t][0];
    vals[t].y = o[t][1];
    vals[t].z = o[t][2];
    vals[t].w = o[t][3];
  }
}

// plain applies the update to BF16 tensors in place.
template <int NT, int OP>
LCT_DEV void plain(u16* a0, u16* a1, u16* a2, const u16* __restrict__ grad, long long n, const float* sc) {
  u16* a[3] = {a0, a1, a2};
  const long long stride = (long long)gridDim.x * blockDim.x * 8;
  for (long long e0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 8; e0 < n; e0 += stride) {
    uint4 vals[NT], g8;
    if (e0 + 8 <= n) {
      g8 = __ldg((const uint4*)(grad + e0));
#pragma unroll
      for (int t = 0; t < NT; t++) vals[t] = *(const uint4*)(a[t] + e0);
      update8<NT, OP>(sc, g8, vals);
#pragma unroll
      for (int t = 0; t < NT; t++) *(uint4*)(a[t] + e0) = vals[t];
    } else {
      const int rest = (int)(n - e0);
      g8 = load8(grad + e0, 0, rest);
#pragma unroll
      for (int t = 0; t < NT; t++) vals[t] = load8(a[t] + e0, 0, rest);
      update8<NT, OP>(sc, g8, vals);
#pragma unroll
      for (int t = 0; t < NT; t++) store8(a[t] + e0, 0, rest, vals[t]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) lct_sgd_bf16(u16* w, u16* m, const u16* __restrict__ g, long long n, float lr, float momentum, float wd) {
  const float sc[3] = {lr, momentum, wd};
  plain<2, LCT_OP_SGD>(w, m, 0, g, n, sc);
}

extern "C" __global__ void __launch_bounds__(256) lct_adamw_bf16(u16* w, u16* m, u16* v, const u16* __restrict__ g, long long n, float lr, float b1, float omb1,
                                                                 float b2, float omb2, float eps, float wd, float bc1, float bc2) {
  const float sc[9] = {lr, b1, omb1, b2, omb2, eps, wd, bc1, bc2};
  plain<3, LCT_OP_ADAMW>(w, m, v, g, n, sc);
}

// fused decodes NT compressed tensors block by block, applies the update with
// the dense gradient and encodes the results into NT other tensors (same n
// and B; each its own C and codebook). With OVF it is the overflow pass: it
// recomputes only the blocks that spill and writes their spilled exponents.
template <int NT, int OP, bool OVF>
LCT_DEV void fused(const LctDesc* const* din, const LctDesc* const* dout, const u16* __restrict__ grad, const float* sc) {
  u8* smem = LCT_DYNAMIC_SMEM;
  const int j = threadIdx.x, b = blockIdx.x;
  u32* enc = (u32*)smem;
  u16* E = (u16*)(enc + NT * 256);
  u8* A = (u8*)(E + NT * 256);
  u32* tmp = (u32*)(A + NT * 256);
  u8* ex = (u8*)(tmp + 32);
  u32* next = (u32*)(ex + NT * LCT_CHF * 256);
  int Win[NT], Wout[NT];
  u32* rin[NT];
  u32* rout[NT];  // (they follow the input rows: a reader past its last row reads these)
  Geo gi[NT], go[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) {
    Win[t] = row_stride(din[t]->C);
    rin[t] = next;
    next += 256 * Win[t];
    geo_init(gi[t], din[t], b, j);
    geo_init(go[t], dout[t], b, j);
  }
#pragma unroll
  for (int t = 0; t < NT; t++) {
    Wout[t] = row_stride(dout[t]->C);
    rout[t] = next;
    next += 256 * Wout[t];
  }
  const int nb = gi[0].nb, P = gi[0].P, count = gi[0].count;
  const long long base = gi[0].base;

  OutSpill os[NT];
  if (OVF) {
    int any = 0;
#pragma unroll
    for (int t = 0; t < NT; t++) {
      out_spill(os[t], dout[t], go[t], b, j, tmp);
      any |= os[t].active;
    }
    if (!any) return;  // the whole CTA leaves
  }
#pragma unroll
  for (int t = 0; t < NT; t++) {
    rd_tables(E + t * 256, A + t * 256, (const u32*)din[t]->tables, j);
    if (!OVF) enc[t * 256 + j] = __ldg((const u32*)dout[t]->tables + 256 + j);
  }
  uint2 psf[NT][LCT_GF];
  uint4 pg[LCT_GF];
#pragma unroll
  for (int k = 0; k < LCT_GF; k++) {
    pg[k] = load8(grad + base, group_e0(0, k), nb);
#pragma unroll
    for (int t = 0; t < NT; t++) psf[t][k] = load8b((const u8*)din[t]->sf + base, group_e0(0, k), nb);
  }
  InSpill is[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) {
    stage_in(rin[t], Win[t], (const u8*)din[t]->streams + gi[t].area, gi[t].Cb, gi[t].words);
    in_spill(is[t], din[t], gi[t], b, j, tmp);
  }
  __syncthreads();
  Reader rd[NT];
  Writer wr[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) {
    rd_init(rd[t], rin[t], j * Win[t]);
    wr_init(wr[t], rout[t], j * Wout[t], go[t].capBits, go[t].words, tmp + LCT_TMP_SINK);
  }

  for (int p0 = 0; p0 < P; p0 += LCT_CHF) {
    const int pe = imin(LCT_CHF, P - p0);
    // Stream j's cells: this chunk's old exponents. The previous chunk's
    // encoding read other threads' cells here (a stream's column moves with
    // the position), so they must all be done.
    if (p0 != 0) __syncthreads();
    decode_columns<NT>(rd, is, count, ex, E, A, p0, pe);
    __syncthreads();
    // Rows: old values in, new values out.
#pragma unroll
    for (int k = 0; k < LCT_GF; k++) {
      const int e0 = group_e0(p0, k);
      if (e0 < nb) {
        const int q8 = group_q(k) << 3;
        uint4 vals[NT];
#pragma unroll
        for (int t = 0; t < NT; t++) vals[t] = join8(psf[t][k], *(const uint2*)(ex + t * LCT_CHF * 256 + q8));
        update8<NT, OP>(sc, pg[k], vals);
#pragma unroll
        for (int t = 0; t < NT; t++) {
          uint2 s, e;
          split8(vals[t], s, e);
          *(uint2*)(ex + t * LCT_CHF * 256 + q8) = e;
          if (!OVF) store8b((u8*)dout[t]->sf + base, e0, nb, s);
        }
      }
    }
    if (p0 + LCT_CHF < P) {
#pragma unroll
      for (int k = 0; k < LCT_GF; k++) {
        pg[k] = load8(grad + base, group_e0(p0 + LCT_CHF, k), nb);
#pragma unroll
        for (int t = 0; t < NT; t++) psf[t][k] = load8b((const u8*)din[t]->sf + base, group_e0(p0 + LCT_CHF, k), nb);
      }
    }
    __syncthreads();
    // Stream j's cells: the new exponents into stream j, or into the overflow area.
    // (The tensors interleave: independent chains for the scheduler.)
    const int lim = imin(pe, count - p0);
    const int sw = skew_w(j, p0);
    if (!OVF) {
      if (lim == LCT_CHF) {
#pragma unroll 2
        for (int pp = 0; pp < LCT_CHF; pp += 2) {
          const int c1 = cell(sw, pp), c2 = cell(sw, pp + 1);
#pragma unroll
          for (int t = 0; t < NT; t++) wr_put2<false>(wr[t], ex[t * LCT_CHF * 256 + c1], ex[t * LCT_CHF * 256 + c2], enc + t * 256);
        }
      } else {
        int pp = 0;
        for (; pp + 1 < lim; pp += 2) {
          const int c1 = cell(sw, pp), c2 = cell(sw, pp + 1);
#pragma unroll
          for (int t = 0; t < NT; t++) wr_put2<false>(wr[t], ex[t * LCT_CHF * 256 + c1], ex[t * LCT_CHF * 256 + c2], enc + t * 256);
        }
        if (pp < lim) {
          const int c1 = cell(sw, pp);
#pragma unroll
          for (int t = 0; t < NT; t++) wr_put1<false>(wr[t], ex[t * LCT_CHF * 256 + c1], enc + t * 256);
        }
      }
    } else {
#pragma unroll
      for (int t = 0; t < NT; t++) {
        if (os[t].active) {
          for (int pp = imax(0, os[t].coded - p0); pp < lim; pp++) os[t].ovp[p0 + pp - os[t].coded] = ex[t * LCT_CHF * 256 + cell(sw, pp)];
        }
      }
    }
  }
#pragma unroll
  for (int t = 0; t < NT; t++) {
    if (const u32 err = rd_error(rd[t], gi[t].capBits)) report(din[t], b, j, err);
  }
  if (!OVF) {
#pragma unroll
    for (int t = 0; t < NT; t++) {
      wr_finish(wr[t], (const u32*)dout[t]->tables);
      u32 S;
      out_finish<true>(dout[t], go[t], wr[t], b, j, tmp, S);
    }
#pragma unroll
    for (int t = 0; t < NT; t++) stage_out(rout[t], Wout[t], (u8*)dout[t]->streams + go[t].area, go[t].Cb, go[t].words);
    if (finished(dout[0], tmp)) {
#pragma unroll
      for (int t = 0; t < NT; t++) scan_offsets(dout[t], tmp);
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) lct_sgd_lct(const LctDesc* w, const LctDesc* m, const LctDesc* wo, const LctDesc* mo, const u16* __restrict__ g, float lr,
                                                              float momentum, float wd) {
  const LctDesc* in[2] = {w, m};
  const LctDesc* out[2] = {wo, mo};
  const float sc[3] = {lr, momentum, wd};
  fused<2, LCT_OP_SGD, false>(in, out, g, sc);
}

extern "C" __global__ void __launch_bounds__(256) lct_sgd_lct_ovf(const LctDesc* w, const LctDesc* m, const LctDesc* wo, const LctDesc* mo, const u16* __restrict__ g, float lr,
                                                                  float momentum, float wd) {
  const LctDesc* in[2] = {w, m};
  const LctDesc* out[2] = {wo, mo};
  const float sc[3] = {lr, momentum, wd};
  fused<2, LCT_OP_SGD, true>(in, out, g, sc);
}

extern "C" __global__ void __launch_bounds__(256, 1) lct_adamw_lct(const LctDesc* w, const LctDesc* m, const LctDesc* v, const LctDesc* wo, const LctDesc* mo, const LctDesc* vo,
                                                                const u16* __restrict__ g, float lr, float b1, float omb1, float b2, float omb2, float eps, float wd,
                                                                float bc1, float bc2) {
  const LctDesc* in[3] = {w, m, v};
  const LctDesc* out[3] = {wo, mo, vo};
  const float sc[9] = {lr, b1, omb1, b2, omb2, eps, wd, bc1, bc2};
  fused<3, LCT_OP_ADAMW, false>(in, out, g, sc);
}

extern "C" __global__ void __launch_bounds__(256, 1) lct_adamw_lct_ovf(const LctDesc* w, const LctDesc* m, const LctDesc* v, const LctDesc* wo, const LctDesc* mo,
                                                                    const LctDesc* vo, const u16* __restrict__ g, float lr, float b1, float omb1, float b2, float omb2,
                                                                    float eps, float wd, float bc1, float bc2) {
  const LctDesc* in[3] = {w, m, v};
  const LctDesc* out[3] = {wo, mo, vo};
  const float sc[9] = {lr, b1, omb1, b2, omb2, eps, wd, bc1, bc2};
  fused<3, LCT_OP_ADAMW, true>(in, out, g, sc);
}

// ---- benchmark data ------------------------------------------------------------------

// lct_fill_gaussian writes N(0, scale²) values as BF16 (their absolute
// values if absolute), from a counter-based hash of (seed, index): the same
// data for the same arguments.
extern "C" __global__ void __launch_bounds__(256) lct_fill_gaussian(u16* dst, long long n, u64 seed, float scale, u32 absolute) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    u64 z = seed + 0x9E3779B97F4A7C15ull * (u64)(i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u1 = ((float)(z >> 40) + 1.0f) * (1.0f / 16777216.0f);
    const float u2 = (float)((z >> 16) & 0xFFFFFFull) * (1.0f / 16777216.0f);
    const float r = sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2) * scale;
    dst[i] = (u16)(f2bf(r) & (absolute ? 0x7FFFu : 0xFFFFu));
  }
}

// ---- format version 3: decode and encode -----------------------------------------

// Format version 3 (format.md §7) codes symbols (the exponent with the top k
// fraction bits, and the sign where the symbols hold it) into streams of a
// head of C_b bytes, laid out as version 2's stream area, and a tail of L_j
// units in the block's tail region; each value's other bits are a residue of
// W bits, packed. lct_decode3 decodes one block a CTA, thread j stream j,
// reading its stream's bytes from global memory (head bytes at a stride of
// 256, the tail's at a bit offset) and writing each value, its residue
// joined, as it decodes it: the lanes of a warp decode the same position of
// neighbouring streams, which hold neighbouring elements. The encoder is two
// passes, as the host chooses each block's C and tail unit between them
// from every stream's bits: lct_measure3 counts them, lct_encode3 writes
// the heads, the tails (ORed into the zeroed tail area: neighbouring
// streams' tails share bytes) and the residues.

// Lct3Desc describes one version 3 tensor in device memory. The Go side
// (gpu/codec3.go) writes the same 8-byte fields in the same order.
struct Lct3Desc {
  u64 res;      // u8[ceil(n * W / 8)]: the residues
  u64 heads;    // u8: every block's stream heads
  u64 tails;    // u8: the tail area
  u64 blocks;   // u64[3 * nblocks]: C_b | unit code << 16 | decode table << 32; head offset; tail region offset
  u64 lens;     // u8[160 * nblocks]: each block's tail length table (0s where it has no tails)
  u64 tables;   // decode: u32[256 * tables], by the next 8 bits (codec.Codebook.SymbolDecodeTable);
                // encode: u32[2048 * tables], code << 5 | length by symbol (codec.Codebook.CodeTable)
  u64 status;   // u64: first decode error (~0 = none)
  long long n;  // elements
  long long B;  // block size
  long long nblocks;
  long long k;     // split: fraction bits in the symbols
  long long W;     // residue bits
  long long sign;  // 0: in the residue, 1: every sign 0, 2: every sign 1, 3: in the symbol
};

// Decode table entry (codec.Codebook.SymbolDecodeTable): the symbol, or for
// ESC x the x, in bits 0-11, bit 12 marking ESC, the code length in bits
// 16-23 (0: an invalid prefix).
#define LCT3_ESC (1u << 12)

// Error kinds of version 3 besides LCT_ERR_INVALID_CODE and
// LCT_ERR_PAST_CAPACITY.
#define LCT_ERR_TAIL_LONG 5  // a stream's tail has a unit its codes do not reach
#define LCT_ERR_TAIL_UNIT 6  // the block's tail unit is not the smallest that holds its tails

// Reader3 reads stream j of a block: its head bytes, then its tail's bits,
// then 0s.
struct Reader3 {
  const u8* head;  // byte i of the head at head[256 * i]
  const u8* tail;  // the tail area
  u64 tbit;        // the tail's first bit in the tail area
  u32 Cb;          // head bytes
  u32 avail;       // bits of head and tail
  u32 next;        // the next stream byte to load
  u64 buf;         // bits loaded, left-aligned
  int have;        // how many
};

// rd3_byte is byte i of the reader's stream (bits past avail read 0).
LCT_DEV u32 rd3_byte(const Reader3& r, u32 i) {
  if (8 * i >= r.avail) return 0;
  const u32 left = r.avail - 8 * i;
  const u32 valid = left < 8 ? left : 8;
  u32 x;
  if (i < r.Cb) {
    x = r.head[(long long)i << 8];
  } else {
    const u64 bit = r.tbit + 8ull * (i - r.Cb);
    const u64 at = bit >> 3;
    const u32 sh = (u32)(bit & 7);
    x = (u32)r.tail[at] << 8;
    if (sh + valid > 8) x |= r.tail[at + 1];
    x = (x >> (8 - sh)) & 0xFF;
  }
  return x & (0xFF00u >> valid) & 0xFF;
}

// rd3_fill keeps at least 16 bits loaded: a code and an ESC's literal.
LCT_DEV void rd3_fill(Reader3& r) {
  while (r.have < 16) {
    r.buf |= (u64)rd3_byte(r, r.next++) << (56 - r.have);
    r.have += 8;
  }
}

// lct3_residue is element i's residue of W bits (MSB-first at bit i * W).
LCT_DEV u32 lct3_residue(const u8* __restrict__ res, long long i, int W) {
  const u64 bit = (u64)i * (u64)W;
  const u64 at = bit >> 3;
  const u32 sh = (u32)(bit & 7);
  u32 x = (u32)res[at] << 8;
  if (sh + W > 8) x |= res[at + 1];
  return (x >> (16 - sh - W)) & ((1u << W) - 1);
}

// report3 records a decode error as report does: the first by block,
// stream and kind.
LCT_DEV void report3(const Lct3Desc* d, int b, int j, u32 kind) {
  atomicMin((u64*)d->status, ((u64)b << 16) | ((u64)j << 8) | kind);
}

// block_max is the largest v over the CTA. Every thread must call it.
LCT_DEV int block_max(int v, int* tmp) {
  for (int o = 16; o; o >>= 1) {
    const int y = __shfl_xor_sync(LCT_FULL, v, o);
    v = y > v ? y : v;
  }
  if ((threadIdx.x & 31) == 0) tmp[threadIdx.x >> 5] = v;
  __syncthreads();
  int m = tmp[0];
  for (int i = 1; i < 8; i++) m = tmp[i] > m ? tmp[i] : m;
  __syncthreads();
  return m;
}

// Block3 is what thread j of a version 3 block knows of its geometry:
// where the block starts, its values, and how many its stream holds (the
// skewed round robin: format.md §3).
struct Block3 {
  long long base;
  int nb, count;
};

LCT_DEV Block3 lct3_block(const Lct3Desc* d, int b, int j) {
  Block3 geo;
  geo.base = (long long)b * d->B;
  const long long rem = d->n - geo.base;
  geo.nb = (int)(rem < d->B ? rem : d->B);
  const int full = geo.nb >> 8, rest = geo.nb & 255;
  geo.count = full + (rest != 0 && ((j - full) & 255) < rest ? 1 : 0);
  return geo;
}

// lct3_tail_len is stream j's tail length in units, from block b's table of
// 5-bit lengths (0 where the block has no tails: unit 0).
LCT_DEV u32 lct3_tail_len(const Lct3Desc* d, int b, int j, u32 unit) {
  if (!unit) return 0;
  const u8* lens = (const u8*)d->lens + 160ll * b;
  const u32 bit = 5 * j;
  u32 x = (u32)lens[bit >> 3] << 8;
  if ((bit >> 3) + 1 < 160) x |= lens[(bit >> 3) + 1];
  return (x >> (11 - (bit & 7))) & 31;
}

// lct_decode3 decodes block blockIdx.x of a version 3 tensor into dst.
// Shared memory: the block's decode table (256 words), then 32 words of
// scratch.
extern "C" __global__ void __launch_bounds__(256) lct_decode3(const Lct3Desc* __restrict__ d, u16* __restrict__ dst) {
  const int b = blockIdx.x, j = threadIdx.x;
  u32* tab = (u32*)LCT_DYNAMIC_SMEM;
  u32* tmp = tab + 256;
  const u64* bt = (const u64*)d->blocks + 3 * (long long)b;
  const u64 w0 = bt[0];
  const u32 Cb = (u32)(w0 & 0xFFFF), unit = (u32)(w0 >> 16) & 0xF;
  tab[j] = ((const u32*)d->tables)[(w0 >> 32) * 256 + j];
  const Block3 geo = lct3_block(d, b, j);
  const long long base = geo.base;
  const int count = geo.count;
  // Stream j's tail: L units, after the tails of the streams before it.
  const u32 L = lct3_tail_len(d, b, j, unit);
  const u32 u = unit ? 1u << (unit - 1) : 0;
  u32 total;
  const u32 before = block_scan(L * u, tmp, total);
  Reader3 r;
  r.head = (const u8*)d->heads + bt[1] + j;
  r.tail = (const u8*)d->tails;
  r.tbit = 8 * bt[2] + before;
  r.Cb = Cb;
  r.avail = 8 * Cb + L * u;
  r.next = 0;
  r.buf = 0;
  r.have = 0;
  const int k = (int)d->k, W = (int)d->W, mode = (int)d->sign;
  const u32 escMask = (1u << k) - 1;
  const u32 lowMask = (1u << (7 - k)) - 1;
  const u16 sign = mode == 2 ? 0x8000 : 0;
  const u8* res = (const u8*)d->res;
  u16* out = dst + base;
  u32 err = 0, used = 0;
  for (int p = 0; p < count; p++) {
    rd3_fill(r);
    const u32 e = tab[r.buf >> 56];
    const u32 len = (e >> 16) & 0xFF;
    if (len == 0) {
      err = LCT_ERR_INVALID_CODE;
      break;
    }
    u32 sym = e & 0xFFF, adv = len;
    if (e & LCT3_ESC) {
      const u32 lit = (u32)((r.buf << len) >> 56);
      sym = ((sym >> k << 8 | lit) << k) | (sym & escMask);
      adv += 8;
    }
    r.buf <<= adv;
    r.have -= (int)adv;
    used += adv;
    if (used > r.avail) {
      err = LCT_ERR_PAST_CAPACITY;
      break;
    }
    const int i = (p << 8) | ((j - p) & 255);
    const u32 x = lct3_residue(res, base + i, W);
    u16 v = (u16)(sym << (7 - k)) | (u16)(x & lowMask);
    if (mode == 0) v |= (u16)((x >> (7 - k)) << 15);
    out[i] = v | sign;
  }
  if (!err && L == 0 && used > 8 * Cb) err = LCT_ERR_PAST_CAPACITY;
  if (!err && L > 0 && used <= r.avail - u) err = LCT_ERR_TAIL_LONG;
  if (err) report3(d, b, j, err);
  // The block's unit: needed (some code passes its head), and the smallest
  // that holds every tail (format.md §7.3).
  const int longest = block_max(err ? 0 : (int)used - (int)(8 * Cb), (int*)tmp);
  if (__syncthreads_or(err != 0)) return;
  if (j == 0 && unit != 0 && (longest <= 0 || (unit > 1 && longest <= (31 << (unit - 2)))))
    report3(d, b, 0, LCT_ERR_TAIL_UNIT);
}

// lct3_symbol is value v's symbol, the sign in it where mode says so.
LCT_DEV u32 lct3_symbol(u16 v, int k, int mode) { return (u32)(v & (mode == 3 ? 0xFFFF : 0x7FFF)) >> (7 - k); }

// lct3_load_codes copies the block's code table (2048 words, the largest
// alphabet's) into shared memory. Every thread must call it.
LCT_DEV void lct3_load_codes(u32* tab, const Lct3Desc* d, u64 w0) {
  const u32* g = (const u32*)d->tables + (w0 >> 32) * 2048;
  for (int i = threadIdx.x; i < 2048; i += 256) tab[i] = g[i];
  __syncthreads();
}

// lct_measure3 counts, for block blockIdx.x, the code bits of each stream
// (x) and its escaped symbols (esc), as the codec's first pass does.
// Shared memory: the block's code table.
extern "C" __global__ void __launch_bounds__(256) lct_measure3(const Lct3Desc* __restrict__ d, const u16* __restrict__ src, u32* __restrict__ x, u32* __restrict__ esc) {
  const int b = blockIdx.x, j = threadIdx.x;
  u32* tab = (u32*)LCT_DYNAMIC_SMEM;
  lct3_load_codes(tab, d, ((const u64*)d->blocks)[3 * (long long)b]);
  const Block3 geo = lct3_block(d, b, j);
  const int k = (int)d->k, mode = (int)d->sign, count = geo.count;
  const u16* in = src + geo.base;
  u32 bits = 0, escaped = 0;
  for (int p = 0; p < count; p++) {
    const u32 n = tab[lct3_symbol(in[(p << 8) | ((j - p) & 255)], k, mode)] & 31;
    bits += n;
    escaped += n > 8;
  }
  x[256 * (long long)b + j] = bits;
  esc[256 * (long long)b + j] = escaped;
}

// lct3_or_byte ORs byte v into the byte array a (4-byte aligned) at bit
// offset bit (MSB-first), where it may span two bytes.
LCT_DEV void lct3_or_byte(u8* a, u64 bit, u32 v) {
  const u64 q = bit >> 3;
  const u32 off = (u32)(bit & 7);
  const u32 hi = v >> off, lo = (v << (8 - off)) & 0xFF;
  if (hi) atomicOr((u32*)(a + (q & ~3ull)), hi << (8 * (u32)(q & 3)));
  if (lo) atomicOr((u32*)(a + ((q + 1) & ~3ull)), lo << (8 * (u32)((q + 1) & 3)));
}

// lct_encode3 writes block blockIdx.x: its streams' heads and tails, its
// residues, and each stream's codes that end past its head (spilled). The
// tail area must be zero. Shared memory: the block's code table, then 32
// scratch words.
extern "C" __global__ void __launch_bounds__(256) lct_encode3(const Lct3Desc* __restrict__ d, const u16* __restrict__ src, u32* __restrict__ spilled) {
  const int b = blockIdx.x, j = threadIdx.x;
  u32* tab = (u32*)LCT_DYNAMIC_SMEM;
  u32* tmp = tab + 2048;
  const u64* bt = (const u64*)d->blocks + 3 * (long long)b;
  const u64 w0 = bt[0];
  lct3_load_codes(tab, d, w0);
  const u32 Cb = (u32)(w0 & 0xFFFF), unit = (u32)(w0 >> 16) & 0xF;
  const Block3 geo = lct3_block(d, b, j);
  const long long base = geo.base;
  const int nb = geo.nb, count = geo.count;
  const u32 L = lct3_tail_len(d, b, j, unit);
  const u32 u = unit ? 1u << (unit - 1) : 0;
  u32 total;
  const u64 tbit = 8 * bt[2] + block_scan(L * u, tmp, total);
  const int k = (int)d->k, W = (int)d->W, mode = (int)d->sign;
  const u32 capBits = 8 * Cb;
  u8* head = (u8*)d->heads + bt[1] + j;
  u8* tails = (u8*)d->tails;
  const u16* in = src + base;
  u64 acc = 0;
  u32 pend = 0, bits = 0, spill = 0, at = 0;  // at: the next stream byte
  for (int p = 0; p < count; p++) {
    const u32 e = tab[lct3_symbol(in[(p << 8) | ((j - p) & 255)], k, mode)];
    const u32 n = e & 31;
    acc = acc << n | (e >> 5);
    pend += n;
    bits += n;
    spill += bits > capBits;
    while (pend >= 8) {
      pend -= 8;
      const u32 v = (u32)(acc >> pend) & 0xFF;
      if (at < Cb) head[(long long)at << 8] = (u8)v;
      else lct3_or_byte(tails, tbit + 8ull * (at - Cb), v);
      at++;
    }
  }
  if (pend) {
    const u32 v = (u32)(acc << (8 - pend)) & 0xFF;
    if (at < Cb) head[(long long)at << 8] = (u8)v;
    else lct3_or_byte(tails, tbit + 8ull * (at - Cb), v);
    at++;
  }
  for (; at < Cb; at++) head[(long long)at << 8] = 0;
  spilled[256 * (long long)b + j] = spill;

  // Residues: a thread packs 8 values, W bytes, at a time.
  const u32 lowMask = (1u << (7 - k)) - 1;
  u8* res = (u8*)d->res + base * W / 8;
  for (int g = j; 8 * g < nb; g += 256) {
    const int m = nb - 8 * g < 8 ? nb - 8 * g : 8;
    u64 r = 0;
    for (int q = 0; q < m; q++) {
      const u16 v = in[8 * g + q];
      u32 y = v & lowMask;
      if (mode == 0) y |= (u32)(v >> 15) << (7 - k);
      r = r << W | y;
    }
    const int rb = m * W;
    r <<= 64 - rb;
    for (int q = 0; q < (rb + 7) >> 3; q++) res[(long long)g * W + q] = (u8)(r >> (56 - 8 * q));
  }
}
