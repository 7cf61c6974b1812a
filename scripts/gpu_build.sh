#!/usr/bin/env bash
# gpu_build.sh: build what scripts/gpu_check.sh runs on a GPU machine (which
# has no Go): the command and the test binaries into bin/, the shared real
# tensors into devrun/tensors (from LCTTOP_TENSORS or ../shared/data/tensors);
# devrun/ is what travels (the binaries packed in devrun/bin.tgz).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin devrun/tensors
go build -ldflags="-s -w" -o bin/lcttop ./cmd/lcttop
for p in kernels gpu gpu/lct gpu/bench trainer/cudabackend cmd/lcttop ui; do
	name=$(basename "$p")
	[ "$p" = cmd/lcttop ] && name=cli
	go test -c -ldflags="-s -w" -o "bin/$name.test" "./$p"
done
cp "${LCTTOP_TENSORS:-../shared/data/tensors}"/*.safetensors devrun/tensors/
cp ../shared/tools/ptyrun.py devrun/ 2>/dev/null || true
# What travels to the GPU machine is limited in size: the binaries go packed.
tar czf devrun/bin.tgz bin
du -sh devrun
