//go:build kernelemu

// The CPU emulation's launcher: each CTA's threads are OS threads, CTAs run
// one after another (kernels/lct_emu.h).

#include "../kernels/lct_emu.h"
#include "../kernels/lct.cu"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

thread_local emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
thread_local EmuCta* emu_cta;
int lct_emu_lazy_prefix;

extern "C" void lct_emu_set_lazy_prefix(int on) { lct_emu_lazy_prefix = on; }

namespace {

typedef void (*Entry)(const uint64_t*);

float F(uint64_t a) {
  uint32_t u = (uint32_t)a;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

#define A(T, i) ((T)(uintptr_t)a[i])
#define D(i) A(const LctDesc*, i)

struct Kernel {
  const char* name;
  Entry run;
};

const Kernel kernels[] = {
    {"lct_encode", [](const uint64_t* a) { lct_encode(D(0), A(const u16*, 1)); }},
    {"lct_decode", [](const uint64_t* a) { lct_decode(D(0), A(u16*, 1)); }},
    {"lct_sample_hist", [](const uint64_t* a) { lct_sample_hist(A(const u16*, 0), (long long)a[1], A(u32*, 2)); }},
    {"lct_hist", [](const uint64_t* a) { lct_hist(A(const u16*, 0), (long long)a[1], A(u64*, 2)); }},
    {"lct_sgd_bf16",
     [](const uint64_t* a) { lct_sgd_bf16(A(u16*, 0), A(u16*, 1), A(const u16*, 2), (long long)a[3], F(a[4]), F(a[5]), F(a[6])); }},
    {"lct_adamw_bf16",
     [](const uint64_t* a) {
       lct_adamw_bf16(A(u16*, 0), A(u16*, 1), A(u16*, 2), A(const u16*, 3), (long long)a[4], F(a[5]), F(a[6]), F(a[7]), F(a[8]), F(a[9]),
                      F(a[10]), F(a[11]), F(a[12]), F(a[13]));
     }},
    {"lct_sgd_lct", [](const uint64_t* a) { lct_sgd_lct(D(0), D(1), D(2), D(3), A(const u16*, 4), F(a[5]), F(a[6]), F(a[7])); }},
    {"lct_sgd_lct_ovf", [](const uint64_t* a) { lct_sgd_lct_ovf(D(0), D(1), D(2), D(3), A(const u16*, 4), F(a[5]), F(a[6]), F(a[7])); }},
    {"lct_adamw_lct",
     [](const uint64_t* a) {
       lct_adamw_lct(D(0), D(1), D(2), D(3), D(4), D(5), A(const u16*, 6), F(a[7]), F(a[8]), F(a[9]), F(a[10]), F(a[11]), F(a[12]), F(a[13]),
                     F(a[14]), F(a[15]));
     }},
    {"lct_adamw_lct_ovf",
     [](const uint64_t* a) {
       lct_adamw_lct_ovf(D(0), D(1), D(2), D(3), D(4), D(5), A(const u16*, 6), F(a[7]), F(a[8]), F(a[9]), F(a[10]), F(a[11]), F(a[12]),
                         F(a[13]), F(a[14]), F(a[15]));
     }},
    {"lct_encode_batch", [](const uint64_t* a) { lct_encode_batch(A(const LctBatch*, 0), A(const u32*, 1), (long long)a[2]); }},
    {"lct_encode_batch_hist", [](const uint64_t* a) { lct_encode_batch_hist(A(const LctBatch*, 0), A(const u32*, 1), (long long)a[2]); }},
    {"lct_decode_batch", [](const uint64_t* a) { lct_decode_batch(A(const LctBatch*, 0), A(const u32*, 1), (long long)a[2]); }},
    {"lct_decode_pipe", [](const uint64_t* a) { lct_decode_pipe(D(0), A(u16*, 1)); }},
    {"lct_decode_batch_pipe", [](const uint64_t* a) { lct_decode_batch_pipe(A(const LctBatch*, 0), A(const u32*, 1), (long long)a[2]); }},
    {"lct_batch_clear_errors", [](const uint64_t* a) { lct_batch_clear_errors(A(const LctBatch*, 0), (long long)a[1]); }},
    {"lct_fill_gaussian", [](const uint64_t* a) { lct_fill_gaussian(A(u16*, 0), (long long)a[1], a[2], F(a[3]), (u32)a[4]); }},
};

}  // namespace

extern "C" void* lct_emu_alloc(size_t n) {
  // Device allocations are 256-byte aligned; keep that, and poison the
  // memory so that a kernel reading what nothing wrote shows.
  size_t size = (n + 255) & ~(size_t)255;
  void* p = aligned_alloc(256, size ? size : 256);
  if (p) memset(p, 0xA5, size ? size : 256);
  return p;
}

extern "C" int lct_emu_launch(const char* name, int grid, int block, int smem, const uint64_t* args) {
  const Kernel* k = nullptr;
  for (const Kernel& c : kernels)
    if (strcmp(c.name, name) == 0) k = &c;
  if (!k) return -1;
  if (block <= 0 || block % 32 || block > 1024 || grid < 0 || smem < 0) return -2;
  size_t smemSize = ((size_t)smem + 15) & ~(size_t)15;
  unsigned char* sm = (unsigned char*)aligned_alloc(16, smemSize ? smemSize : 16);
  for (int b = 0; b < grid; b++) {
    memset(sm, 0xA5, smemSize);
    EmuCta cta;
    std::barrier<> bar(block);
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    for (int w = 0; w < block / 32; w++) {
      warps.push_back(std::make_unique<std::barrier<>>(32));
      cta.warp[w] = warps.back().get();
    }
    cta.block = &bar;
    cta.smem = sm;
    cta.count = 0;
    std::vector<std::thread> ts;
    ts.reserve(block);
    for (int t = 0; t < block; t++) {
      ts.emplace_back([&, t] {
        threadIdx = {(unsigned)t, 0, 0};
        blockIdx = {(unsigned)b, 0, 0};
        blockDim = {(unsigned)block, 1, 1};
        gridDim = {(unsigned)grid, 1, 1};
        emu_cta = &cta;
        k->run(args);
        cta.block->arrive_and_drop();
        cta.warp[t / 32]->arrive_and_drop();
      });
    }
    for (auto& th : ts) th.join();
  }
  free(sm);
  return 0;
}
