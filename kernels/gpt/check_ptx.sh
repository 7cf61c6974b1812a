#!/usr/bin/env bash
# check_ptx.sh: regenerate gpt.ptx from gpt.cu with nvcc and fail if it
# differs from the committed one. Without nvcc 11.8 it says so and passes.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v nvcc >/dev/null 2>&1; then
	echo "check_ptx: nvcc not found; kernels/gpt/gpt.ptx not checked"
	exit 0
fi
version=$(nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
if [ "$version" != "11.8" ]; then
	echo "check_ptx: nvcc $version, the committed PTX is made by 11.8; kernels/gpt/gpt.ptx not checked"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the same command as the go:generate line in gpt.go
cmd=$(sed -n 's|^//go:generate ||p' gpt.go)
cp gpt.cu gpt_emu.h "$tmp"/
(cd "$tmp" && eval "$cmd")
if ! cmp -s "$tmp/gpt.ptx" gpt.ptx; then
	echo "check_ptx: kernels/gpt/gpt.ptx is stale: run go generate ./kernels/gpt and commit it" >&2
	exit 1
fi
echo "check_ptx: kernels/gpt/gpt.ptx matches gpt.cu"
