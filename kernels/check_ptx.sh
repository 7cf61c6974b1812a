#!/usr/bin/env bash
# check_ptx.sh: regenerate the kernels' PTX with nvcc and fail if it differs
# from the committed kernels/lct.ptx. Without nvcc it says so and passes.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v nvcc >/dev/null 2>&1; then
	echo "check_ptx: nvcc not found; PTX not checked"
	exit 0
fi
version=$(nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
if [ "$version" != "11.8" ]; then
	echo "check_ptx: nvcc $version, the committed PTX is made by 11.8; not checked"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the same command as the go:generate line in kernels.go
cmd=$(sed -n 's|^//go:generate ||p' kernels.go)
cp lct.cu lct_emu.h "$tmp"/
(cd "$tmp" && eval "$cmd")
if ! cmp -s "$tmp/lct.ptx" lct.ptx; then
	echo "check_ptx: kernels/lct.ptx is stale: run go generate ./kernels and commit it" >&2
	diff <(head -c 2000 lct.ptx) <(head -c 2000 "$tmp/lct.ptx") | head -20 >&2 || true
	exit 1
fi
echo "check_ptx: kernels/lct.ptx matches lct.cu"
