//go:build kernelemu

package main

// gpuBuild is false under kernelemu: the kernels run in a slow CPU emulation.
const gpuBuild = false
