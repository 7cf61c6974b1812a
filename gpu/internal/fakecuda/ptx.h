// What the stand-in driver reads of a PTX module: its version and target,
// and for each kernel its parameters' sizes, its .maxntid and the static
// shared memory its body declares. Enough to check a launch as a real
// driver would (and a little more), not a PTX compiler.
#pragma once

#include <string>
#include <vector>

struct PtxKernel {
  std::string name;
  std::vector<int> params;  // each parameter's size in bytes
  unsigned maxThreads = 1024;  // .maxntid (or .reqntid) x·y·z, else the device's limit
  unsigned staticShared = 0;   // bytes of .shared declared in the body
};

struct PtxModule {
  int versionMajor = 0, versionMinor = 0;
  int targetSM = 0;  // .target sm_NN
  std::vector<PtxKernel> kernels;
};

// parsePtx reads src; it returns false with a message in err (as ptxas
// would word it) when the text is not a PTX module it understands.
bool parsePtx(const char* src, PtxModule* out, std::string* err);
