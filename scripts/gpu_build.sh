#!/usr/bin/env bash
# gpu_build.sh: build what scripts/gpu_check.sh runs on a GPU machine (which
# has no Go): the command and the test binaries into bin/, the shared real
# tensors into devrun/tensors (from LCTTOP_TENSORS or ../shared/data/tensors);
# devrun/ is what travels (the binaries packed in devrun/bin.tgz).
# BASE=COMMIT also builds that commit's command into devrun/base/lcttop.gz,
# for scripts/gpu_ab.sh; TENSORS=0 leaves the tensors out (gpu_ab.sh needs
# none), which keeps what travels within the device's limit beside a base.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin devrun
go build -ldflags="-s -w" -o bin/lcttop ./cmd/lcttop
for p in kernels gpu gpu/lct gpu/bench trainer/cudabackend cmd/lcttop ui; do
	name=$(basename "$p")
	[ "$p" = cmd/lcttop ] && name=cli
	go test -c -ldflags="-s -w" -o "bin/$name.test" "./$p"
done
if [ "${TENSORS:-1}" = 0 ]; then
	rm -rf devrun/tensors
else
	mkdir -p devrun/tensors
	cp "${LCTTOP_TENSORS:-../shared/data/tensors}"/*.safetensors devrun/tensors/
fi
rm -rf devrun/base
if [ -n "${BASE:-}" ]; then
	tree=$(mktemp -d)
	trap 'git worktree remove --force "$tree"' EXIT
	git worktree add -q --detach "$tree" "$BASE"
	mkdir -p devrun/base
	(cd "$tree" && go build -ldflags="-s -w" -o "$OLDPWD/devrun/base/lcttop" ./cmd/lcttop)
	gzip -f devrun/base/lcttop
fi
cp ../shared/tools/ptyrun.py devrun/ 2>/dev/null || true
# What travels to the GPU machine is limited in size: the binaries go packed.
tar czf devrun/bin.tgz bin
du -sh devrun
# The device takes the working tree and devrun/ together, 64 MiB at most.
travel=$(( $(git ls-files -z | xargs -0 stat -c %s | awk '{n += $1} END {print n + 0}') + $(du -sb devrun | cut -f1) ))
if [ "$travel" -gt $((64 << 20)) ]; then
	echo "gpu_build: the tracked files and devrun/ come to $((travel >> 20)) MiB, over the 64 MiB a device call carries (TENSORS=0 leaves the tensors out)" >&2
	exit 1
fi
