//go:build cuda && !kernelemu

package main

const gpuBuild = true
