//go:build gptemu

// The launcher of the CPU emulation: gpt.cu compiled as C++ (gpt_emu.h
// stands in for the CUDA built-ins), a table of its kernels, and a launch
// that unpacks 8-byte argument slots into each kernel's parameter types.
// No product is fused into an FMA (as nvcc --fmad=false): the default
// x86-64 target has no FMA instructions, and the pragma makes it explicit
// (cgo does not accept -ffp-contract among its flags).
#pragma GCC optimize("fp-contract=off")
// The fused attention kernels move BF16 pairs and 16-byte pieces through
// 32-bit and uint4 pointers, as CUDA code does; C++'s aliasing rules would
// let the compiler reorder such accesses, so they are off here.
#pragma GCC optimize("no-strict-aliasing")
#define GPT_EMU 1
#include "gpt.cu"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <utility>
#include <vector>

thread_local gpt_emu_dim3 threadIdx, blockIdx;
gpt_emu_dim3 blockDim, gridDim;

// Threaded kernels run their block's CUDA threads as coroutines on the
// calling OS thread: each runs until it reaches __syncthreads (or ends) and
// hands back to the scheduler, which resumes the next; once every thread of
// the block waits at the barrier, a new round releases them all. This is
// __syncthreads' semantics without OS threads, and fast on few cores.
//
// On x86-64 the switch is a few instructions saving the callee-saved
// registers (ucontext's swapcontext makes a system call per switch, which
// made the attention tests crawl); elsewhere it falls back to ucontext.
#if defined(__x86_64__)
extern "C" void gpt_emu_switch(void** save, void* to);
asm(R"(
.text
.globl gpt_emu_switch
.type gpt_emu_switch,@function
gpt_emu_switch:
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
.size gpt_emu_switch,.-gpt_emu_switch
.section .note.GNU-stack,"",@progbits
.text
)");
#else
#include <ucontext.h>
#endif

struct coro {
  std::vector<char> stack;
  bool done;
#if defined(__x86_64__)
  void* sp;
#else
  ucontext_t ctx;
#endif
};

static coro* current;
static std::function<void()>* body;  // the kernel call every coroutine runs
static bool inThreaded;
#if defined(__x86_64__)
static void* schedulerSP;
#else
static ucontext_t scheduler;
#endif

static void toScheduler() {
#if defined(__x86_64__)
  gpt_emu_switch(&current->sp, schedulerSP);
#else
  swapcontext(&current->ctx, &scheduler);
#endif
}

void gpt_emu_syncthreads() {
  if (!inThreaded) {
    fprintf(stderr, "gpt emulation: __syncthreads in a kernel registered as sequential (emu.cc's table)\n");
    abort();
  }
  toScheduler();
}

static void coroMain() {
  (*body)();
  current->done = true;
  toScheduler();  // never resumed
  abort();
}

static void start(coro& c) {
  c.done = false;
#if defined(__x86_64__)
  // The first switch pops six registers and "returns" into coroMain with the
  // stack aligned as after a call (rsp ≡ 8 mod 16).
  uintptr_t top = ((uintptr_t)(c.stack.data() + c.stack.size())) & ~(uintptr_t)15;
  void** sp = (void**)(top - 64);
  for (int i = 0; i < 6; i++) sp[i] = nullptr;
  sp[6] = (void*)coroMain;
  sp[7] = nullptr;
  c.sp = sp;
#else
  getcontext(&c.ctx);
  c.ctx.uc_stack.ss_sp = c.stack.data();
  c.ctx.uc_stack.ss_size = c.stack.size();
  c.ctx.uc_link = nullptr;
  makecontext(&c.ctx, coroMain, 0);
#endif
}

static void resume(coro& c) {
  current = &c;
#if defined(__x86_64__)
  gpt_emu_switch(&schedulerSP, c.sp);
#else
  swapcontext(&scheduler, &c.ctx);
#endif
}

// runThreaded runs grid blocks of block threads of f, block after block.
static int runThreaded(std::function<void()> f, unsigned grid, unsigned block, char* err, int errLen) {
  const size_t stackBytes = 64 << 10;  // kernels keep a few scalars and small arrays
  std::vector<coro> threads(block);
  for (auto& c : threads) c.stack.resize(stackBytes);
  body = &f;
  inThreaded = true;
  int rc = 0;
  for (unsigned b = 0; b < grid && rc == 0; b++) {
    blockIdx = {b, 0, 0};
    for (auto& c : threads) start(c);
    for (;;) {
      unsigned alive = 0, ended = 0;
      for (unsigned t = 0; t < block; t++) {
        coro& c = threads[t];
        if (c.done) continue;
        threadIdx = {t, 0, 0};
        resume(c);
        if (c.done)
          ended++;
        else
          alive++;
      }
      if (alive == 0) break;
      if (ended > 0) {
        snprintf(err, errLen, "block %u: %u threads ended while %u wait at __syncthreads", b, ended, alive);
        rc = 1;
        break;
      }
    }
  }
  inThreaded = false;
  return rc;
}

template <class T>
static T arg(const uint64_t* slots, size_t i) {
  static_assert(sizeof(T) <= 8, "kernel parameters are at most 8 bytes");
  T v;
  std::memcpy(&v, &slots[i], sizeof(T));
  return v;
}

template <class... A, size_t... I>
static void call(void (*k)(A...), const uint64_t* slots, std::index_sequence<I...>) {
  k(arg<A>(slots, I)...);
}

// run checks the arguments against the kernel's parameters and runs every
// block: threads one after another (sequential kernels), or as coroutines
// meeting at each __syncthreads (threaded kernels).
template <class... A>
static int run(void (*k)(A...), bool threaded, unsigned grid, unsigned block, const uint64_t* slots,
               const uint8_t* sizes, int n, char* err, int errLen) {
  if (n != (int)sizeof...(A)) {
    snprintf(err, errLen, "kernel takes %d arguments, launch passed %d", (int)sizeof...(A), n);
    return 1;
  }
  const size_t want[] = {sizeof(A)...};
  for (int i = 0; i < n; i++) {
    if (want[i] != sizes[i]) {
      snprintf(err, errLen, "argument %d is %d bytes, the kernel's parameter %d", i, (int)sizes[i], (int)want[i]);
      return 1;
    }
  }
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  auto seq = std::make_index_sequence<sizeof...(A)>{};
  if (threaded) return runThreaded([&] { call(k, slots, seq); }, grid, block, err, errLen);
  for (unsigned b = 0; b < grid; b++) {
    blockIdx = {b, 0, 0};
    for (unsigned t = 0; t < block; t++) {
      threadIdx = {t, 0, 0};
      call(k, slots, seq);
    }
  }
  return 0;
}

typedef int (*runner)(unsigned, unsigned, const uint64_t*, const uint8_t*, int, char*, int);

struct entry {
  const char* name;
  runner fn;
};

#define SEQ(k) \
  {#k, [](unsigned g, unsigned b, const uint64_t* s, const uint8_t* z, int n, char* e, int el) { return run(k, false, g, b, s, z, n, e, el); }}
#define SYNC(k) \
  {#k, [](unsigned g, unsigned b, const uint64_t* s, const uint8_t* z, int n, char* e, int el) { return run(k, true, g, b, s, z, n, e, el); }}

static const entry table[] = {
    SEQ(gpt_embedding_forward),
    SEQ(gpt_embedding_backward_wte),
    SEQ(gpt_embedding_backward_wpe),
    SEQ(gpt_add),
    SEQ(gpt_add_v8),
    SEQ(gpt_gelu_forward),
    SEQ(gpt_gelu_forward_v8),
    SEQ(gpt_gelu_backward),
    SEQ(gpt_gelu_backward_v8),
    SEQ(gpt_gelu_backward_forward),
    SEQ(gpt_gelu_backward_forward_v8),
    SYNC(gpt_layernorm_stats),
    SYNC(gpt_layernorm_forward),
    SEQ(gpt_layernorm_apply),
    SEQ(gpt_layernorm_apply_v8),
    SYNC(gpt_layernorm_backward_rows),
    SYNC(gpt_layernorm_backward),
    SEQ(gpt_layernorm_backward_dx),
    SEQ(gpt_layernorm_backward_dx_v8),
    SEQ(gpt_layernorm_params_partial),
    SEQ(gpt_bias_fill),
    SEQ(gpt_bias_fill_v8),
    SEQ(gpt_colsum_partial),
    SEQ(gpt_colsum_finish),
    SEQ(gpt_crossentropy),
    SYNC(gpt_attn_softmax),
    SYNC(gpt_attn_softmax_backward),
    SEQ(gpt_heads_to_bf16),
    SYNC(gpt_flash_fwd_d16),
    SYNC(gpt_flash_fwd_d32),
    SYNC(gpt_flash_fwd_d64),
    SYNC(gpt_flash_dq_d16),
    SYNC(gpt_flash_dq_d32),
    SYNC(gpt_flash_dq_d64),
    SYNC(gpt_flash_dkdv_d16),
    SYNC(gpt_flash_dkdv_d32),
    SYNC(gpt_flash_dkdv_d64),
    SEQ(gpt_adamw),
    SEQ(gpt_adamw_v8),
    SEQ(gpt_sgd),
};

static const entry* find(const char* name) {
  for (const entry& e : table)
    if (std::strcmp(e.name, name) == 0) return &e;
  return nullptr;
}

extern "C" int gpt_emu_has(const char* name) { return find(name) != nullptr; }

extern "C" int gpt_emu_launch(const char* name, unsigned grid, unsigned block, const uint64_t* slots,
                              const uint8_t* sizes, int n, char* err, int errLen) {
  const entry* e = find(name);
  if (e == nullptr) {
    snprintf(err, errLen, "no kernel %s in the emulation's table", name);
    return 1;
  }
  return e->fn(grid, block, slots, sizes, n, err, errLen);
}
