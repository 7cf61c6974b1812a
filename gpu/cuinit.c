//go:build cuda

// gorgonia.org/cu calls cuInit from its package init and exits the process
// when it fails, which is what happens on a machine that has the NVIDIA
// driver but no usable GPU (none installed, or CUDA_VISIBLE_DEVICES empty).
// This definition of cuInit, linked into the executable, takes precedence
// over the driver library's: it calls the driver's own cuInit, keeps its
// result for openDriver to report as an error, and lets the package init
// go on, so that a cuda build can say "no CUDA device" and carry on (tests
// skip, the CPU paths still work).

#define _GNU_SOURCE
#include <dlfcn.h>
#include <cuda.h>

#include "cuinit.h"

static CUresult lct_cuinit_result = CUDA_ERROR_NOT_INITIALIZED;
static int lct_cuinit_called = 0;

CUresult CUDAAPI cuInit(unsigned int flags) {
	CUresult (*driver_init)(unsigned int) = (CUresult(*)(unsigned int))dlsym(RTLD_NEXT, "cuInit");
	if (driver_init == NULL) {
		lct_cuinit_result = CUDA_ERROR_NOT_FOUND;
	} else {
		lct_cuinit_result = driver_init(flags);
	}
	lct_cuinit_called = 1;
	return CUDA_SUCCESS;
}

int lct_cuinit_status(void) {
	if (!lct_cuinit_called) {
		cuInit(0);
	}
	return (int)lct_cuinit_result;
}
