// A stand-in for NVIDIA's libcuda.so.1: the driver calls lcttop's binding
// (gpu/cuda) makes, on the CPU, with the kernels run by the project's CPU
// emulation (kernels/emu*.cc, linked into this library). See README.md.
//
// It checks what a real driver enforces, and refuses with the driver's
// codes: a context current on the calling thread, live handles, launches
// against the PTX (parameters, .maxntid, shared memory against the
// attribute set), copies and memsets inside one allocation, the JIT
// options. And its streams really are concurrent: each is a queue of
// deferred work that runs only when the host has to wait for it (a
// synchronize, an event, a blocking copy) or, now and then, in the
// background, in a seeded order that respects only what CUDA promises:
// stream order, events and stream waits. Uploads from pageable memory are
// staged at the call; downloads into pinned memory land when their copy
// runs, and until then the bytes there are poisoned.

#include <time.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ptx.h"

#define API extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;
typedef void* CUevent;
typedef uint64_t CUdeviceptr;
typedef void (*CUhostFn)(void*);

// The driver's result codes this library returns.
enum : CUresult {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kInvalidDevice = 101,
  kInvalidContext = 201,
  kInvalidPTX = 218,
  kInvalidHandle = 400,
  kNotFound = 500,
  kNotReady = 600,
  kLaunchOutOfResources = 701,
  kLaunchFailed = 719,
};

// Shared by this library and the stand-in cuBLAS (which finds it by name).
extern "C" int kernels_emu_launch(const char* name, unsigned grid, unsigned block, unsigned smem, const uint64_t* slots,
                                  const uint8_t* sizes, int n, char* err, int errLen);
extern int lct_emu_lazy_prefix;

namespace {

// What the stand-in device is.
const char* kDeviceName = "lcttop stand-in driver (CPU emulation of the kernels)";
const int kDriverVersion = 12040;
const int kOptinShared = 227 << 10;   // an H100's or H200's opt-in shared memory per block
const int kDefaultShared = 48 << 10;  // without the attribute
const size_t kTotalMemory = size_t(16) << 30;
const uint64_t kAlign = 256;

std::mutex mu;  // every call: one at a time

bool initialized;
uint64_t seed = 1;
std::mt19937_64 rng;
unsigned backgroundPermille;  // chance per call that one queued operation runs in the background
int sms = 4;

// ---- errors -------------------------------------------------------------

// A message per failure, kept for cuGetErrorString, which returns it with
// the code's own text (pointers into the set stay valid).
std::set<std::string> messages;
std::map<CUresult, const std::string*> lastMessage;
CUresult sticky;  // a failure of deferred work: every later call returns it

CUresult fail(CUresult code, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  lastMessage[code] = &*messages.insert(buf).first;
  if (getenv("LCTTOP_FAKECUDA_TRACE")) fprintf(stderr, "fakecuda: error %d: %s\n", code, buf);
  return code;
}

// ---- memory -------------------------------------------------------------

struct Range {
  uint64_t base;
  size_t size;
};
std::map<uint64_t, size_t> device;  // allocation base → size
std::map<uint64_t, size_t> pinned;  // cuMemAllocHost's
size_t deviceBytes;

// find returns the allocation of m holding [p, p+n), if one does.
bool find(const std::map<uint64_t, size_t>& m, uint64_t p, size_t n, Range* r) {
  auto it = m.upper_bound(p);
  if (it == m.begin()) return false;
  --it;
  if (p - it->first > it->second || n > it->second - (p - it->first)) return false;
  *r = {it->first, it->second};
  return true;
}

// inDevice checks that [p, p+n) lies in one device allocation.
CUresult inDevice(const char* call, const char* what, uint64_t p, size_t n) {
  Range r;
  if (find(device, p, n, &r)) return kSuccess;
  if (find(device, p, 0, &r))
    return fail(kInvalidValue, "%s: %s %#llx, %zu bytes: past the end of its %zu-byte allocation at %#llx", call, what,
                (unsigned long long)p, n, r.size, (unsigned long long)r.base);
  return fail(kInvalidValue, "%s: %s %#llx is in no device allocation", call, what, (unsigned long long)p);
}

bool isPinned(const void* p, size_t n) {
  Range r;
  return find(pinned, (uint64_t)(uintptr_t)p, n, &r);
}

// ---- contexts -----------------------------------------------------------

// The device's primary context: retained and released; its handle changes
// each time it is created again, so that a handle kept past its release is
// refused.
struct {
  int refs;
  uint64_t generation;
} primary;
thread_local uint64_t current;  // the handle current on this thread, 0 if none

uint64_t contextHandle() { return 0xC0000000ull + 16 * primary.generation; }

// needContext is what every call that works in a context checks first.
CUresult needContext(const char* call) {
  if (!initialized) return fail(kNotInitialized, "%s before cuInit", call);
  if (sticky) return sticky;
  if (current == 0) return fail(kInvalidContext, "%s: no context is current on this thread", call);
  if (primary.refs == 0 || current != contextHandle())
    return fail(kInvalidContext, "%s: the context current on this thread (%#llx) was released", call,
                (unsigned long long)current);
  return kSuccess;
}

// ---- streams and their queues ------------------------------------------

struct Stream;

// Op is one queued operation: it runs after the operations before it on
// its stream and after each of deps (a stream's operation by number).
struct Op {
  uint64_t seq;
  std::vector<std::pair<Stream*, uint64_t>> deps;
  std::string what;
  std::function<CUresult(std::string*)> run;
};

struct Stream {
  uint64_t handle;
  bool legacy = false, blocking = false, live = true;
  std::vector<Op> queue;  // not yet run, in order
  size_t head = 0;        // queue[head] runs next
  uint64_t queued = 0;    // number of the last operation queued
  uint64_t done = 0;      // number of the last operation run
};

std::vector<Stream*> streams;  // every stream ever made (destroyed ones drain)
Stream legacyStream;
uint64_t nextHandle = 0x5100;

bool finished(const std::pair<Stream*, uint64_t>& d) { return d.first->done >= d.second; }

bool ready(Stream* s) {
  if (s->head >= s->queue.size()) return false;
  for (auto& d : s->queue[s->head].deps)
    if (!finished(d)) return false;
  return true;
}

double nowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// runHead runs s's next operation; a failure becomes the sticky error.
void runHead(Stream* s) {
  Op op = std::move(s->queue[s->head]);
  s->queue[s->head] = Op{};
  s->head++;
  if (s->head == s->queue.size()) {
    s->queue.clear();
    s->head = 0;
  }
  std::string err;
  if (!sticky && op.run) {
    CUresult r = op.run(&err);
    if (r != kSuccess) sticky = fail(r, "%s failed: %s", op.what.c_str(), err.c_str());
  }
  s->done = op.seq;
}

// need is, per stream, the last operation that must run for target to:
// the operations before it on its stream and, through their waits, on
// others.
std::map<Stream*, uint64_t> need(Stream* s, uint64_t seq) {
  std::map<Stream*, uint64_t> n;
  std::vector<std::pair<Stream*, uint64_t>> work{{s, seq}};
  while (!work.empty()) {
    auto [t, q] = work.back();
    work.pop_back();
    uint64_t have = n.count(t) ? n[t] : t->done;
    if (q <= have) continue;
    n[t] = q;
    for (size_t i = t->head; i < t->queue.size() && t->queue[i].seq <= q; i++)
      if (t->queue[i].seq > have)
        for (auto& d : t->queue[i].deps)
          if (!finished(d)) work.push_back(d);
  }
  return n;
}

// runUntil runs queued work until s has run its operation seq: only what
// that needs, a ready stream chosen at random each time.
void runUntil(Stream* s, uint64_t seq) {
  if (s->done >= seq) return;
  auto n = need(s, seq);  // the queues do not change while it runs
  while (s->done < seq) {
    std::vector<Stream*> can;
    for (auto& [t, q] : n)
      if (t->done < q && ready(t)) can.push_back(t);
    if (can.empty()) {
      fprintf(stderr, "fakecuda: no queued operation can run: a wait on work never queued\n");
      abort();
    }
    runHead(can[rng() % can.size()]);
  }
}

// runAll runs every queued operation, ready streams chosen at random.
void runAll() {
  for (;;) {
    std::vector<Stream*> can;
    bool left = false;
    for (Stream* t : streams) {
      left |= t->head < t->queue.size();
      if (ready(t)) can.push_back(t);
    }
    if (!left) return;
    if (can.empty()) {
      fprintf(stderr, "fakecuda: no queued operation can run: a wait on work never queued\n");
      abort();
    }
    runHead(can[rng() % can.size()]);
  }
}

// background lets the device move on by itself now and then: one ready
// operation of a stream chosen at random.
void background() {
  if (backgroundPermille == 0 || rng() % 1000 >= backgroundPermille) return;
  std::vector<Stream*> can;
  for (Stream* t : streams)
    if (ready(t)) can.push_back(t);
  if (!can.empty()) runHead(can[rng() % can.size()]);
}

std::map<uint64_t, Stream*> streamByHandle;

// stream resolves a handle: 0 and CU_STREAM_LEGACY are the legacy default
// stream.
CUresult stream(const char* call, CUstream h, Stream** s) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  if (v == 0 || v == 1) {
    *s = &legacyStream;
    return kSuccess;
  }
  if (v == 2) return fail(kInvalidValue, "%s: the per-thread default stream is not supported", call);
  auto it = streamByHandle.find(v);
  if (it == streamByHandle.end() || !it->second->live)
    return fail(kInvalidHandle, "%s: stream %#llx is not a live stream", call, (unsigned long long)v);
  *s = it->second;
  return kSuccess;
}

// enqueue queues op on s, with the legacy stream's implicit ordering
// against blocking streams; it returns the operation's number.
uint64_t enqueue(Stream* s, std::string what, std::function<CUresult(std::string*)> run,
                 std::vector<std::pair<Stream*, uint64_t>> deps = {}) {
  if (s->legacy) {
    for (Stream* t : streams)
      if (t->blocking && t->live && t->queued > t->done) deps.push_back({t, t->queued});
  } else if (s->blocking && legacyStream.queued > legacyStream.done) {
    deps.push_back({&legacyStream, legacyStream.queued});
  }
  Op op;
  op.seq = ++s->queued;
  op.deps = std::move(deps);
  op.what = std::move(what);
  op.run = std::move(run);
  s->queue.push_back(std::move(op));
  return s->queued;
}

// ---- events ---------------------------------------------------------------

struct Event {
  uint64_t handle;
  bool timed, live = true;
  bool recorded = false;
  Stream* stream = nullptr;
  uint64_t seq = 0;     // the record's operation
  uint64_t records = 0;  // counts records, so that an older one does not stamp
  bool stamped = false;
  double ms = 0;
};
std::map<uint64_t, Event*> eventByHandle;

CUresult event(const char* call, CUevent h, Event** e) {
  auto it = eventByHandle.find((uint64_t)(uintptr_t)h);
  if (it == eventByHandle.end() || !it->second->live)
    return fail(kInvalidHandle, "%s: event %#llx is not a live event", call, (unsigned long long)(uintptr_t)h);
  *e = it->second;
  return kSuccess;
}

// ---- modules ---------------------------------------------------------------

struct Module;
struct Function {
  uint64_t handle;
  Module* module;
  PtxKernel k;
  int maxDynamicShared = -1;  // the attribute, -1: not set
};
struct Module {
  uint64_t handle;
  bool live = true;
  PtxModule ptx;
  std::map<std::string, Function*> functions;
};
std::map<uint64_t, Module*> moduleByHandle;
std::map<uint64_t, Function*> functionByHandle;

CUresult function(const char* call, CUfunction h, Function** f) {
  auto it = functionByHandle.find((uint64_t)(uintptr_t)h);
  if (it == functionByHandle.end() || !it->second->module->live)
    return fail(kInvalidHandle, "%s: function %#llx is not a kernel of a loaded module", call,
                (unsigned long long)(uintptr_t)h);
  *f = it->second;
  return kSuccess;
}

// allowedDynamicShared is the dynamic shared memory a launch of f may ask.
int allowedDynamicShared(const Function* f) {
  if (f->maxDynamicShared >= 0) return f->maxDynamicShared;
  return kDefaultShared > (int)f->k.staticShared ? kDefaultShared - (int)f->k.staticShared : 0;
}

// reset destroys what the context held once its last retain is released.
void reset() {
  runAll();
  for (auto& [p, n] : device) free((void*)(uintptr_t)p);
  for (auto& [p, n] : pinned) free((void*)(uintptr_t)p);
  device.clear();
  pinned.clear();
  deviceBytes = 0;
  for (auto& [h, s] : streamByHandle) s->live = false;
  for (auto& [h, e] : eventByHandle) e->live = false;
  for (auto& [h, m] : moduleByHandle) m->live = false;
}

void configure() {
  if (const char* s = getenv("LCTTOP_FAKECUDA_SEED")) seed = strtoull(s, nullptr, 10);
  if (const char* s = getenv("LCTTOP_FAKECUDA_SMS")) sms = atoi(s) > 0 ? atoi(s) : sms;
  rng.seed(seed);
  // Seeds differ in how often the device moves on by itself (never: work
  // runs as late as the host allows) and in how late the encoders'
  // look-back finds its predecessors' prefixes.
  static const unsigned background[] = {600, 0, 30, 250};
  backgroundPermille = background[seed % 4];
  static const int lazy[] = {0, 3, 0, 17, 33};
  lct_emu_lazy_prefix = lazy[seed % 5];
  legacyStream.legacy = true;
  legacyStream.handle = 0;
  streams.push_back(&legacyStream);
}

// Lock takes the library's lock for a call and lets the device move on.
struct Lock {
  std::lock_guard<std::mutex> g{mu};
  Lock() {
    if (initialized && !sticky) background();
  }
};

// needDevice is what the device's calls check: cuInit first, device 0.
CUresult needDevice(const char* call, CUdevice d) {
  if (!initialized) return fail(kNotInitialized, "%s before cuInit", call);
  if (d != 0) return fail(kInvalidDevice, "%s: no device %d (1 present)", call, d);
  return kSuccess;
}

}  // namespace

// ---- initialisation, the device ------------------------------------------

API CUresult cuInit(unsigned flags) {
  Lock l;
  if (flags != 0) return fail(kInvalidValue, "cuInit: flags %u, must be 0", flags);
  if (!initialized) configure();
  initialized = true;
  return kSuccess;
}

API CUresult cuDriverGetVersion(int* v) {
  if (v == nullptr) return kInvalidValue;
  *v = kDriverVersion;
  return kSuccess;
}

API CUresult cuDeviceGetCount(int* n) {
  Lock l;
  if (!initialized) return fail(kNotInitialized, "cuDeviceGetCount before cuInit");
  if (n == nullptr) return kInvalidValue;
  *n = 1;
  return kSuccess;
}

API CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  Lock l;
  if (d == nullptr) return kInvalidValue;
  if (CUresult r = needDevice("cuDeviceGet", ordinal)) return r;
  *d = 0;
  return kSuccess;
}

API CUresult cuDeviceGetName(char* buf, int n, CUdevice d) {
  Lock l;
  if (CUresult r = needDevice("cuDeviceGetName", d)) return r;
  if (buf == nullptr || n <= 0) return kInvalidValue;
  snprintf(buf, n, "%s", kDeviceName);
  return kSuccess;
}

API CUresult cuDeviceGetAttribute(int* v, int attr, CUdevice d) {
  Lock l;
  if (CUresult r = needDevice("cuDeviceGetAttribute", d)) return r;
  if (v == nullptr) return kInvalidValue;
  switch (attr) {
    case 1: *v = 1024; break;            // max threads per block
    case 8: *v = kDefaultShared; break;  // shared memory per block
    case 16: *v = sms; break;            // multiprocessors
    case 75: *v = 9; break;              // compute capability major
    case 76: *v = 0; break;              // minor
    case 97: *v = kOptinShared; break;   // opt-in shared memory per block
    default: return fail(kInvalidValue, "cuDeviceGetAttribute: attribute %d is not one the stand-in knows", attr);
  }
  return kSuccess;
}

API CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  Lock l;
  if (CUresult r = needDevice("cuDevicePrimaryCtxRetain", d)) return r;
  if (c == nullptr) return kInvalidValue;
  if (primary.refs++ == 0) primary.generation++;
  *c = (CUcontext)(uintptr_t)contextHandle();
  return kSuccess;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  Lock l;
  if (CUresult r = needDevice("cuDevicePrimaryCtxRelease", d)) return r;
  if (primary.refs == 0) return fail(kInvalidContext, "cuDevicePrimaryCtxRelease: the primary context is not retained");
  if (--primary.refs == 0) reset();
  return kSuccess;
}

API CUresult cuCtxSetCurrent(CUcontext c) {
  Lock l;
  if (!initialized) return fail(kNotInitialized, "cuCtxSetCurrent before cuInit");
  uint64_t h = (uint64_t)(uintptr_t)c;
  if (h != 0 && (primary.refs == 0 || h != contextHandle()))
    return fail(kInvalidContext, "cuCtxSetCurrent: %#llx is not a live context", (unsigned long long)h);
  current = h;
  return kSuccess;
}

API CUresult cuCtxGetCurrent(CUcontext* c) {
  Lock l;
  if (!initialized) return fail(kNotInitialized, "cuCtxGetCurrent before cuInit");
  if (c == nullptr) return kInvalidValue;
  *c = (CUcontext)(uintptr_t)current;
  return kSuccess;
}

API CUresult cuCtxSynchronize(void) {
  Lock l;
  if (CUresult r = needContext("cuCtxSynchronize")) return r;
  runAll();
  return sticky;
}

// ---- modules ---------------------------------------------------------------

API CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned n, int* options, void** values) {
  Lock l;
  if (CUresult r = needContext("cuModuleLoadDataEx")) return r;
  if (m == nullptr || image == nullptr) return fail(kInvalidValue, "cuModuleLoadDataEx: no module or image");
  if (n > 0 && (options == nullptr || values == nullptr))
    return fail(kInvalidValue, "cuModuleLoadDataEx: %u options without their arrays", n);
  char* log = nullptr;
  int logOpt = -1, sizeOpt = -1;
  for (unsigned i = 0; i < n; i++) {
    switch (options[i]) {
      case 5: log = (char*)values[i], logOpt = i; break;  // CU_JIT_ERROR_LOG_BUFFER
      case 6: sizeOpt = i; break;                          // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
      case 3: case 4:                                      // the info log and its size
      case 7: case 11: case 12: case 13:                   // optimisation level, debug and line info, verbose
        break;
      default:
        return fail(kInvalidValue, "cuModuleLoadDataEx: JIT option %d is not one the stand-in knows", options[i]);
    }
  }
  if ((logOpt >= 0) != (sizeOpt >= 0))
    return fail(kInvalidValue, "cuModuleLoadDataEx: the error log buffer and its size must come together");
  size_t logSize = sizeOpt >= 0 ? (size_t)(uintptr_t)values[sizeOpt] : 0;
  if (logOpt >= 0 && log == nullptr && logSize > 0)
    return fail(kInvalidValue, "cuModuleLoadDataEx: a %zu-byte error log at NULL", logSize);
  auto jitError = [&](const std::string& msg) {
    if (log != nullptr && logSize > 0) {
      snprintf(log, logSize, "ptxas application ptx input, line 0; fatal   : %s", msg.c_str());
      values[sizeOpt] = (void*)(uintptr_t)(strlen(log) + 1);
    }
    return fail(kInvalidPTX, "cuModuleLoadDataEx: %s", msg.c_str());
  };
  auto* mod = new Module;
  std::string err;
  if (!parsePtx((const char*)image, &mod->ptx, &err)) {
    delete mod;
    return jitError(err);
  }
  if (mod->ptx.versionMajor * 10 + mod->ptx.versionMinor > 84) {
    int a = mod->ptx.versionMajor, b = mod->ptx.versionMinor;
    delete mod;
    return jitError("Unsupported .version " + std::to_string(a) + "." + std::to_string(b) + "; current version is '8.4'");
  }
  if (mod->ptx.targetSM > 90) {
    int t = mod->ptx.targetSM;
    delete mod;
    return jitError("SM version specified by .target (sm_" + std::to_string(t) + ") is higher than the device's (sm_90)");
  }
  // Every kernel must be one the emulation has, with the parameters the
  // PTX says (a launch of no CTAs checks them and runs nothing).
  for (auto& k : mod->ptx.kernels) {
    std::vector<uint64_t> slots(k.params.size() + 1);
    std::vector<uint8_t> sizes(k.params.size() + 1);
    for (size_t i = 0; i < k.params.size(); i++) sizes[i] = (uint8_t)k.params[i];
    char msg[256] = "";
    if (kernels_emu_launch(k.name.c_str(), 0, 1, 0, slots.data(), sizes.data(), (int)k.params.size(), msg,
                           sizeof msg) != 0) {
      delete mod;
      return jitError("kernel " + k.name + ": the stand-in's emulation differs from the PTX: " + msg);
    }
  }
  mod->handle = nextHandle += 16;
  moduleByHandle[mod->handle] = mod;
  if (sizeOpt >= 0) {
    if (log != nullptr && logSize > 0) log[0] = 0;
    values[sizeOpt] = (void*)(uintptr_t)0;
  }
  *m = (CUmodule)(uintptr_t)mod->handle;
  return kSuccess;
}

API CUresult cuModuleUnload(CUmodule h) {
  Lock l;
  if (CUresult r = needContext("cuModuleUnload")) return r;
  auto it = moduleByHandle.find((uint64_t)(uintptr_t)h);
  if (it == moduleByHandle.end() || !it->second->live)
    return fail(kInvalidHandle, "cuModuleUnload: %#llx is not a loaded module", (unsigned long long)(uintptr_t)h);
  runAll();  // its queued launches run first
  it->second->live = false;
  return kSuccess;
}

API CUresult cuModuleGetFunction(CUfunction* f, CUmodule h, const char* name) {
  Lock l;
  if (CUresult r = needContext("cuModuleGetFunction")) return r;
  auto it = moduleByHandle.find((uint64_t)(uintptr_t)h);
  if (it == moduleByHandle.end() || !it->second->live)
    return fail(kInvalidHandle, "cuModuleGetFunction: %#llx is not a loaded module", (unsigned long long)(uintptr_t)h);
  if (f == nullptr || name == nullptr) return kInvalidValue;
  Module* m = it->second;
  if (auto fit = m->functions.find(name); fit != m->functions.end()) {
    *f = (CUfunction)(uintptr_t)fit->second->handle;
    return kSuccess;
  }
  for (auto& k : m->ptx.kernels) {
    if (k.name != name) continue;
    auto* fn = new Function{nextHandle += 16, m, k};
    m->functions[name] = fn;
    functionByHandle[fn->handle] = fn;
    *f = (CUfunction)(uintptr_t)fn->handle;
    return kSuccess;
  }
  return fail(kNotFound, "cuModuleGetFunction: no kernel %s in the module", name);
}

API CUresult cuFuncSetAttribute(CUfunction h, int attr, int v) {
  Lock l;
  if (CUresult r = needContext("cuFuncSetAttribute")) return r;
  Function* f;
  if (CUresult r = function("cuFuncSetAttribute", h, &f)) return r;
  switch (attr) {
    case 8:  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
      if (v < 0 || v + (int)f->k.staticShared > kOptinShared)
        return fail(kInvalidValue, "cuFuncSetAttribute: %s: %d bytes of dynamic shared memory and %u static exceed %d",
                    f->k.name.c_str(), v, f->k.staticShared, kOptinShared);
      f->maxDynamicShared = v;
      return kSuccess;
    case 9:  // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
      if (v < -1 || v > 100) return fail(kInvalidValue, "cuFuncSetAttribute: carveout %d%%", v);
      return kSuccess;
  }
  return fail(kInvalidValue, "cuFuncSetAttribute: attribute %d cannot be set", attr);
}

API CUresult cuLaunchKernel(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned smem, CUstream hs, void** params, void** extra) {
  Lock l;
  if (CUresult r = needContext("cuLaunchKernel")) return r;
  Function* f;
  if (CUresult r = function("cuLaunchKernel", h, &f)) return r;
  Stream* s;
  if (CUresult r = stream("cuLaunchKernel", hs, &s)) return r;
  const PtxKernel& k = f->k;
  const char* name = k.name.c_str();
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0)
    return fail(kInvalidValue, "cuLaunchKernel %s: grid %ux%ux%u, block %ux%ux%u", name, gx, gy, gz, bx, by, bz);
  if (gy != 1 || gz != 1 || by != 1 || bz != 1)
    return fail(kInvalidValue, "cuLaunchKernel %s: the stand-in runs 1-D grids and blocks only", name);
  if (gx > 0x7fffffffu) return fail(kInvalidValue, "cuLaunchKernel %s: grid of %u CTAs", name, gx);
  if (bx > k.maxThreads)
    return fail(kInvalidValue, "cuLaunchKernel %s: block of %u threads, its .maxntid allows %u", name, bx, k.maxThreads);
  if ((int)smem > allowedDynamicShared(f))
    return fail(kInvalidValue, "cuLaunchKernel %s: %u bytes of dynamic shared memory, the function allows %d", name, smem,
                allowedDynamicShared(f));
  if (smem + k.staticShared > (unsigned)kOptinShared)
    return fail(kLaunchOutOfResources, "cuLaunchKernel %s: %u bytes of shared memory", name, smem + k.staticShared);
  if (extra != nullptr) return fail(kInvalidValue, "cuLaunchKernel %s: extra is not supported", name);
  int n = (int)k.params.size();
  if (n > 0 && params == nullptr) return fail(kInvalidValue, "cuLaunchKernel %s: %d parameters, none passed", name, n);
  // The parameters are copied now, each from its own size at its pointer.
  // lcttop's binding passes each in an 8-byte slot and ends the array with
  // NULL, so the count and the sizes can be checked too.
  std::vector<uint64_t> slots(n + 1);
  std::vector<uint8_t> sizes(n + 1);
  for (int i = 0; i < n; i++) {
    if (params[i] == nullptr)
      return fail(kInvalidValue, "cuLaunchKernel %s: the PTX has %d parameters, the launch passed %d", name, n, i);
    memcpy(&slots[i], params[i], k.params[i]);
    sizes[i] = (uint8_t)k.params[i];
    uint64_t whole;
    memcpy(&whole, params[i], 8);
    if (k.params[i] < 8 && (whole >> (8 * k.params[i])) != 0)
      return fail(kInvalidValue, "cuLaunchKernel %s: parameter %d is %d bytes in the PTX, the launch passed %#llx", name, i,
                  k.params[i], (unsigned long long)whole);
  }
  if (n < 64 && params != nullptr && params[n] != nullptr)
    return fail(kInvalidValue, "cuLaunchKernel %s: the PTX has %d parameters, the launch passed more", name, n);
  std::string kname = k.name;
  unsigned grid = gx, block = bx;
  enqueue(s, "kernel " + kname, [=](std::string* err) {
    char msg[256] = "";
    if (kernels_emu_launch(kname.c_str(), grid, block, smem, slots.data(), sizes.data(), n, msg, sizeof msg) != 0) {
      *err = msg;
      return kLaunchFailed;
    }
    return kSuccess;
  });
  return kSuccess;
}

API CUresult cuLaunchHostFunc(CUstream hs, CUhostFn fn, void* data) {
  Lock l;
  if (CUresult r = needContext("cuLaunchHostFunc")) return r;
  Stream* s;
  if (CUresult r = stream("cuLaunchHostFunc", hs, &s)) return r;
  if (fn == nullptr) return fail(kInvalidValue, "cuLaunchHostFunc: no function");
  enqueue(s, "host function", [=](std::string*) {
    fn(data);
    return kSuccess;
  });
  return kSuccess;
}

// ---- memory ---------------------------------------------------------------

API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  Lock l;
  if (CUresult r = needContext("cuMemAlloc")) return r;
  if (p == nullptr || n == 0) return fail(kInvalidValue, "cuMemAlloc: %zu bytes", n);
  size_t size = (n + kAlign - 1) / kAlign * kAlign;
  if (deviceBytes + size > kTotalMemory) return fail(kOutOfMemory, "cuMemAlloc: %zu bytes", n);
  void* m = aligned_alloc(kAlign, size);
  if (m == nullptr) return fail(kOutOfMemory, "cuMemAlloc: %zu bytes: out of host memory", n);
  memset(m, 0xA5, size);  // what was never written shows
  device[(uint64_t)(uintptr_t)m] = n;
  deviceBytes += size;
  *p = (uint64_t)(uintptr_t)m;
  return kSuccess;
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
  Lock l;
  if (CUresult r = needContext("cuMemFree")) return r;
  auto it = device.find(p);
  if (it == device.end()) return fail(kInvalidValue, "cuMemFree: %#llx is not an allocation", (unsigned long long)p);
  runAll();  // as a real driver, the free waits for the device
  deviceBytes -= (it->second + kAlign - 1) / kAlign * kAlign;
  device.erase(it);
  free((void*)(uintptr_t)p);
  return sticky;
}

API CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  Lock l;
  if (CUresult r = needContext("cuMemGetAddressRange")) return r;
  Range r;
  if (!find(device, p, 0, &r) || p == r.base + r.size)
    return fail(kNotFound, "cuMemGetAddressRange: %#llx is in no allocation", (unsigned long long)p);
  if (base) *base = r.base;
  if (size) *size = r.size;
  return kSuccess;
}

API CUresult cuMemAllocHost_v2(void** p, size_t n) {
  Lock l;
  if (CUresult r = needContext("cuMemAllocHost")) return r;
  if (p == nullptr || n == 0) return fail(kInvalidValue, "cuMemAllocHost: %zu bytes", n);
  void* m = malloc(n);
  if (m == nullptr) return fail(kOutOfMemory, "cuMemAllocHost: %zu bytes", n);
  pinned[(uint64_t)(uintptr_t)m] = n;
  *p = m;
  return kSuccess;
}

API CUresult cuMemFreeHost(void* p) {
  Lock l;
  if (CUresult r = needContext("cuMemFreeHost")) return r;
  auto it = pinned.find((uint64_t)(uintptr_t)p);
  if (it == pinned.end()) return fail(kInvalidValue, "cuMemFreeHost: %p is not from cuMemAllocHost", p);
  runAll();
  pinned.erase(it);
  free(p);
  return sticky;
}

API CUresult cuMemGetInfo_v2(size_t* freeBytes, size_t* total) {
  Lock l;
  if (CUresult r = needContext("cuMemGetInfo")) return r;
  if (freeBytes) *freeBytes = kTotalMemory - deviceBytes;
  if (total) *total = kTotalMemory;
  return kSuccess;
}

namespace {

// upload queues a copy from the host; from pageable memory the bytes are
// staged now, from pinned memory read when the copy runs.
CUresult upload(const char* call, CUdeviceptr dst, const void* src, size_t n, Stream* s, uint64_t* seq) {
  if (CUresult r = inDevice(call, "destination", dst, n)) return r;
  if (n > 0 && src == nullptr) return fail(kInvalidValue, "%s: NULL source", call);
  void* to = (void*)(uintptr_t)dst;
  if (isPinned(src, n)) {
    *seq = enqueue(s, call, [=](std::string*) {
      memcpy(to, src, n);
      return kSuccess;
    });
  } else {
    std::vector<unsigned char> staged((const unsigned char*)src, (const unsigned char*)src + n);
    *seq = enqueue(s, call, [to, staged = std::move(staged)](std::string*) {
      memcpy(to, staged.data(), staged.size());
      return kSuccess;
    });
  }
  return kSuccess;
}

// download queues a copy to the host; into pageable memory the call waits
// for it, into pinned memory the bytes land when it runs, poisoned till then.
CUresult download(const char* call, void* dst, CUdeviceptr src, size_t n, Stream* s, bool wait) {
  if (CUresult r = inDevice(call, "source", src, n)) return r;
  if (n > 0 && dst == nullptr) return fail(kInvalidValue, "%s: NULL destination", call);
  const void* from = (const void*)(uintptr_t)src;
  bool pin = isPinned(dst, n);
  if (pin && !wait) memset(dst, 0x5A, n);
  uint64_t seq = enqueue(s, call, [=](std::string*) {
    memcpy(dst, from, n);
    return kSuccess;
  });
  if (wait || !pin) runUntil(s, seq);
  return sticky;
}

}  // namespace

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  Lock l;
  if (CUresult r = needContext("cuMemcpyHtoD")) return r;
  // The legacy stream's work before it is done when it returns; the copy
  // itself, staged, may still be queued.
  if (legacyStream.queued > legacyStream.done) runUntil(&legacyStream, legacyStream.queued);
  uint64_t seq;
  return upload("cuMemcpyHtoD", dst, src, n, &legacyStream, &seq);
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream hs) {
  Lock l;
  if (CUresult r = needContext("cuMemcpyHtoDAsync")) return r;
  Stream* s;
  if (CUresult r = stream("cuMemcpyHtoDAsync", hs, &s)) return r;
  uint64_t seq;
  return upload("cuMemcpyHtoDAsync", dst, src, n, s, &seq);
}

API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  Lock l;
  if (CUresult r = needContext("cuMemcpyDtoH")) return r;
  return download("cuMemcpyDtoH", dst, src, n, &legacyStream, true);
}

API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream hs) {
  Lock l;
  if (CUresult r = needContext("cuMemcpyDtoHAsync")) return r;
  Stream* s;
  if (CUresult r = stream("cuMemcpyDtoHAsync", hs, &s)) return r;
  return download("cuMemcpyDtoHAsync", dst, src, n, s, false);
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hs) {
  Lock l;
  if (CUresult r = needContext("cuMemcpyDtoDAsync")) return r;
  Stream* s;
  if (CUresult r = stream("cuMemcpyDtoDAsync", hs, &s)) return r;
  if (CUresult r = inDevice("cuMemcpyDtoDAsync", "source", src, n)) return r;
  if (CUresult r = inDevice("cuMemcpyDtoDAsync", "destination", dst, n)) return r;
  enqueue(s, "cuMemcpyDtoDAsync", [=](std::string*) {
    memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, n);
    return kSuccess;
  });
  return kSuccess;
}

API CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char b, size_t n, CUstream hs) {
  Lock l;
  if (CUresult r = needContext("cuMemsetD8Async")) return r;
  Stream* s;
  if (CUresult r = stream("cuMemsetD8Async", hs, &s)) return r;
  if (CUresult r = inDevice("cuMemsetD8Async", "destination", p, n)) return r;
  enqueue(s, "cuMemsetD8Async", [=](std::string*) {
    memset((void*)(uintptr_t)p, b, n);
    return kSuccess;
  });
  return kSuccess;
}

API CUresult cuMemsetD32Async(CUdeviceptr p, unsigned v, size_t n, CUstream hs) {
  Lock l;
  if (CUresult r = needContext("cuMemsetD32Async")) return r;
  Stream* s;
  if (CUresult r = stream("cuMemsetD32Async", hs, &s)) return r;
  if (p % 4 != 0) return fail(kInvalidValue, "cuMemsetD32Async: %#llx is not 4-byte aligned", (unsigned long long)p);
  if (n > SIZE_MAX / 4) return fail(kInvalidValue, "cuMemsetD32Async: %zu words", n);
  if (CUresult r = inDevice("cuMemsetD32Async", "destination", p, 4 * n)) return r;
  enqueue(s, "cuMemsetD32Async", [=](std::string*) {
    uint32_t* w = (uint32_t*)(uintptr_t)p;
    for (size_t i = 0; i < n; i++) w[i] = v;
    return kSuccess;
  });
  return kSuccess;
}

// ---- streams and events ------------------------------------------------------

// The greatest stream priority, as a Hopper GPU's driver reports it.
constexpr int kGreatestPriority = -5;

API CUresult cuStreamCreate(CUstream* h, unsigned flags) {
  Lock l;
  if (CUresult r = needContext("cuStreamCreate")) return r;
  if (h == nullptr) return kInvalidValue;
  if (flags > 1) return fail(kInvalidValue, "cuStreamCreate: flags %#x", flags);
  auto* s = new Stream;
  s->handle = nextHandle += 16;
  s->blocking = flags == 0;
  streams.push_back(s);
  streamByHandle[s->handle] = s;
  *h = (CUstream)(uintptr_t)s->handle;
  return kSuccess;
}

// Priorities are accepted and have no effect: the stand-in's streams run in
// the order the host's waits need.
API CUresult cuStreamCreateWithPriority(CUstream* h, unsigned flags, int priority) {
  if (priority < kGreatestPriority || priority > 0) {
    Lock l;
    return fail(kInvalidValue, "cuStreamCreateWithPriority: priority %d outside %d..0", priority, kGreatestPriority);
  }
  return cuStreamCreate(h, flags);
}

API CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  Lock l;
  if (CUresult r = needContext("cuCtxGetStreamPriorityRange")) return r;
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = kGreatestPriority;
  return kSuccess;
}

API CUresult cuStreamDestroy_v2(CUstream h) {
  Lock l;
  if (CUresult r = needContext("cuStreamDestroy")) return r;
  Stream* s;
  if (CUresult r = stream("cuStreamDestroy", h, &s)) return r;
  if (s->legacy) return fail(kInvalidHandle, "cuStreamDestroy: the legacy default stream");
  s->live = false;  // its queued work still runs
  return kSuccess;
}

API CUresult cuStreamSynchronize(CUstream h) {
  Lock l;
  if (CUresult r = needContext("cuStreamSynchronize")) return r;
  Stream* s;
  if (CUresult r = stream("cuStreamSynchronize", h, &s)) return r;
  runUntil(s, s->queued);
  return sticky;
}

API CUresult cuStreamWaitEvent(CUstream h, CUevent he, unsigned flags) {
  Lock l;
  if (CUresult r = needContext("cuStreamWaitEvent")) return r;
  Stream* s;
  if (CUresult r = stream("cuStreamWaitEvent", h, &s)) return r;
  Event* e;
  if (CUresult r = event("cuStreamWaitEvent", he, &e)) return r;
  if (flags != 0) return fail(kInvalidValue, "cuStreamWaitEvent: flags %#x", flags);
  if (!e->recorded) return kSuccess;  // an event never recorded is complete
  enqueue(s, "cuStreamWaitEvent", nullptr, {{e->stream, e->seq}});
  return kSuccess;
}

API CUresult cuEventCreate(CUevent* h, unsigned flags) {
  Lock l;
  if (CUresult r = needContext("cuEventCreate")) return r;
  if (h == nullptr) return kInvalidValue;
  if (flags & ~3u) return fail(kInvalidValue, "cuEventCreate: flags %#x", flags);
  auto* e = new Event;
  e->handle = nextHandle += 16;
  e->timed = (flags & 2) == 0;
  eventByHandle[e->handle] = e;
  *h = (CUevent)(uintptr_t)e->handle;
  return kSuccess;
}

API CUresult cuEventRecord(CUevent he, CUstream hs) {
  Lock l;
  if (CUresult r = needContext("cuEventRecord")) return r;
  Event* e;
  if (CUresult r = event("cuEventRecord", he, &e)) return r;
  Stream* s;
  if (CUresult r = stream("cuEventRecord", hs, &s)) return r;
  uint64_t record = ++e->records;
  e->stamped = false;
  e->recorded = true;
  e->stream = s;
  e->seq = enqueue(s, "cuEventRecord", [e, record](std::string*) {
    if (e->records == record) {
      e->ms = nowMs();
      e->stamped = true;
    }
    return kSuccess;
  });
  return kSuccess;
}

API CUresult cuEventSynchronize(CUevent he) {
  Lock l;
  if (CUresult r = needContext("cuEventSynchronize")) return r;
  Event* e;
  if (CUresult r = event("cuEventSynchronize", he, &e)) return r;
  if (e->recorded) runUntil(e->stream, e->seq);
  return sticky;
}

API CUresult cuEventElapsedTime(float* ms, CUevent ha, CUevent hb) {
  Lock l;
  if (CUresult r = needContext("cuEventElapsedTime")) return r;
  Event *a, *b;
  if (CUresult r = event("cuEventElapsedTime", ha, &a)) return r;
  if (CUresult r = event("cuEventElapsedTime", hb, &b)) return r;
  if (!a->timed || !b->timed) return fail(kInvalidHandle, "cuEventElapsedTime: an event made without timing");
  if (!a->recorded || !b->recorded) return fail(kInvalidHandle, "cuEventElapsedTime: an event never recorded");
  if (!a->stamped || !b->stamped) return fail(kNotReady, "cuEventElapsedTime: an event's work is not done");
  if (ms) *ms = (float)(b->ms - a->ms);
  return kSuccess;
}

API CUresult cuEventDestroy_v2(CUevent he) {
  Lock l;
  if (CUresult r = needContext("cuEventDestroy")) return r;
  Event* e;
  if (CUresult r = event("cuEventDestroy", he, &e)) return r;
  e->live = false;  // a queued record of it still runs
  return kSuccess;
}

// ---- errors -------------------------------------------------------------------

namespace {
const struct {
  CUresult code;
  const char *name, *text;
} kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
};
}  // namespace

API CUresult cuGetErrorName(CUresult code, const char** s) {
  for (auto& e : kErrors)
    if (e.code == code) {
      *s = e.name;
      return kSuccess;
    }
  *s = nullptr;
  return kInvalidValue;
}

// cuGetErrorString is the code's text and, where the stand-in refused a
// call with it, what it refused last.
API CUresult cuGetErrorString(CUresult code, const char** s) {
  std::lock_guard<std::mutex> g(mu);
  for (auto& e : kErrors) {
    if (e.code != code) continue;
    auto it = lastMessage.find(code);
    *s = e.text;
    if (it != lastMessage.end()) *s = messages.insert(std::string(e.text) + " (stand-in: " + *it->second + ")").first->c_str();
    return kSuccess;
  }
  *s = nullptr;
  return kInvalidValue;
}
