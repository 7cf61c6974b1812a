// The launcher of the CPU emulation (emu.h): the kernel tables of lct.cu and
// gpt.cu (emu_lct.cc, emu_gpt.cc), and a launch that runs each CTA's threads
// as coroutines meeting at barriers.

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "emu.h"

emu_dim3 threadIdx, blockIdx, blockDim, gridDim;
unsigned char* emu_smem;
uint64_t emu_exchange[1024];
int emu_count;
int lct_emu_lazy_prefix;

extern const EmuKernel emu_lct_kernels[];
extern const int emu_lct_kernel_count;
extern const EmuKernel emu_gpt_kernels[];
extern const int emu_gpt_kernel_count;

// On x86-64 a switch between coroutines saves the callee-saved registers and
// the stack pointer in a few instructions (ucontext's swapcontext makes a
// system call per switch); elsewhere it falls back to ucontext.
#if defined(__x86_64__)
extern "C" void emu_switch(void** save, void* to);
asm(R"(
.text
.globl emu_switch
.type emu_switch,@function
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size emu_switch,.-emu_switch
.section .note.GNU-stack,"",@progbits
.text
)");
#else
#include <ucontext.h>
#endif

namespace {

enum Wait : uint8_t { kRunning, kAtBlock, kAtWarp };

struct Coro {
  char* stack = nullptr;  // stackBytes, a guard page below
  bool done = false;
  Wait wait = kRunning;
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t ctx;
#endif
};

// Kernels keep a few scalars and small arrays; the guard page turns an
// overflow into a fault instead of a silent overwrite.
const size_t stackBytes = 256 << 10, guardBytes = 4 << 10;

std::mutex launchMu;  // one launch at a time: the state below is shared
std::vector<Coro> coros;
Coro* current;
void (*body)(void*);
void* bodyArg;
#if defined(__x86_64__)
void* schedulerSP;
#else
ucontext_t scheduler;
#endif

void toScheduler() {
#if defined(__x86_64__)
  emu_switch(&current->sp, schedulerSP);
#else
  swapcontext(&current->ctx, &scheduler);
#endif
}

void coroMain() {
  body(bodyArg);
  current->done = true;
  toScheduler();  // never resumed
  abort();
}

bool ensureStacks(unsigned n) {
  while (coros.size() < n) {
    void* m = mmap(nullptr, stackBytes + guardBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return false;
    mprotect(m, guardBytes, PROT_NONE);
    Coro c;
    c.stack = (char*)m + guardBytes;
    coros.push_back(c);
  }
  return true;
}

void start(Coro& c) {
  c.done = false;
  c.wait = kRunning;
#if defined(__x86_64__)
  // The first switch pops six registers and "returns" into coroMain with the
  // stack aligned as after a call (rsp ≡ 8 mod 16).
  uintptr_t top = ((uintptr_t)(c.stack + stackBytes)) & ~(uintptr_t)15;
  void** sp = (void**)(top - 64);
  for (int i = 0; i < 6; i++) sp[i] = nullptr;
  sp[6] = (void*)coroMain;
  sp[7] = nullptr;
  c.sp = sp;
#else
  getcontext(&c.ctx);
  c.ctx.uc_stack.ss_sp = c.stack;
  c.ctx.uc_stack.ss_size = stackBytes;
  c.ctx.uc_link = nullptr;
  makecontext(&c.ctx, coroMain, 0);
#endif
}

void resume(Coro& c) {
  current = &c;
#if defined(__x86_64__)
  emu_switch(&schedulerSP, c.sp);
#else
  swapcontext(&scheduler, &c.ctx);
#endif
}

// release lets go the threads in [lo, hi) that wait at w, if every thread
// there that has not ended waits at w; it reports whether any was waiting
// and let go.
bool release(unsigned lo, unsigned hi, Wait w) {
  unsigned alive = 0, waiting = 0;
  for (unsigned t = lo; t < hi; t++) {
    if (coros[t].done) continue;
    alive++;
    if (coros[t].wait == w) waiting++;
  }
  if (alive == 0 || waiting != alive) return false;
  for (unsigned t = lo; t < hi; t++)
    if (!coros[t].done) coros[t].wait = kRunning;
  return true;
}

// runBlock runs the current CTA's block threads until all have ended.
int runBlock(unsigned block, char* err, int errLen) {
  for (unsigned t = 0; t < block; t++) start(coros[t]);
  for (;;) {
    for (unsigned t = 0; t < block; t++) {
      Coro& c = coros[t];
      if (c.done || c.wait != kRunning) continue;
      threadIdx = {t, 0, 0};
      resume(c);
    }
    bool any = false;
    for (unsigned w = 0; w < block; w += 32) any |= release(w, w + 32 < block ? w + 32 : block, kAtWarp);
    if (any) continue;
    if (release(0, block, kAtBlock)) continue;
    unsigned alive = 0;
    for (unsigned t = 0; t < block; t++) alive += !coros[t].done;
    if (alive == 0) return 0;
    snprintf(err, errLen, "block %u: %u threads wait at barriers that the others never reach", blockIdx.x, alive);
    return 1;
  }
}

}  // namespace

void emu_block_barrier() {
  current->wait = kAtBlock;
  toScheduler();
}

void emu_warp_barrier() {
  current->wait = kAtWarp;
  toScheduler();
}

int emu_run(void (*f)(void*), void* arg, unsigned grid, unsigned block, unsigned smem, char* err, int errLen) {
  if (block < 1 || block > 1024) {
    snprintf(err, errLen, "block of %u threads", block);
    return 1;
  }
  if (!ensureStacks(block)) {
    snprintf(err, errLen, "no memory for %u thread stacks", block);
    return 1;
  }
  size_t smemSize = ((size_t)smem + 15) & ~(size_t)15;
  unsigned char* sm = (unsigned char*)aligned_alloc(16, smemSize ? smemSize : 16);
  if (sm == nullptr) {
    snprintf(err, errLen, "no memory for %u bytes of shared memory", smem);
    return 1;
  }
  body = f;
  bodyArg = arg;
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  int rc = 0;
  for (unsigned b = 0; b < grid && rc == 0; b++) {
    // Poisoned, so that a kernel reading what it never wrote shows.
    memset(sm, 0xA5, smemSize);
    emu_smem = sm;
    emu_count = 0;
    blockIdx = {b, 0, 0};
    rc = runBlock(block, err, errLen);
  }
  free(sm);
  return rc;
}

static const EmuKernel* find(const char* name) {
  for (int i = 0; i < emu_lct_kernel_count; i++)
    if (strcmp(emu_lct_kernels[i].name, name) == 0) return &emu_lct_kernels[i];
  for (int i = 0; i < emu_gpt_kernel_count; i++)
    if (strcmp(emu_gpt_kernels[i].name, name) == 0) return &emu_gpt_kernels[i];
  return nullptr;
}

extern "C" int kernels_emu_has(const char* name) { return find(name) != nullptr; }

extern "C" void kernels_emu_set_lazy_prefix(int period) {
  std::lock_guard<std::mutex> l(launchMu);
  lct_emu_lazy_prefix = period;
}

extern "C" int kernels_emu_launch(const char* name, unsigned grid, unsigned block, unsigned smem, const uint64_t* slots,
                                  const uint8_t* sizes, int n, char* err, int errLen) {
  const EmuKernel* k = find(name);
  if (k == nullptr) {
    snprintf(err, errLen, "no kernel %s in the emulation's tables", name);
    return 1;
  }
  std::lock_guard<std::mutex> l(launchMu);
  return k->run(grid, block, smem, slots, sizes, n, err, errLen);
}
