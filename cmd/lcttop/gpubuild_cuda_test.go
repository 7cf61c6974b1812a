//go:build !kernelemu

package main

const gpuBuild = true
