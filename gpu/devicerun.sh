#!/usr/bin/env bash
# devicerun.sh runs every GPU test and benchmark of lcttop in one go, on a
# machine with an NVIDIA GPU and no Go toolchain. Build first, where Go is:
#
#   go test -c -tags cuda -o bin/gpu.test ./gpu/
#   go test -c -tags cuda -o bin/cli.test ./cmd/lcttop/
#   go build -tags cuda -o bin/lcttop ./cmd/lcttop
#   go build -o bin/lcttop-cpu ./cmd/lcttop
#   mkdir -p devrun && cp -r <the real tensors> devrun/tensors
#
# then run `bash gpu/devicerun.sh` from the repository root (bin/ and devrun/
# are ignored by git; take them along). Full logs go to $OUT (default
# devrun/out); a summary is printed last. PROFILE=1 adds an Nsight Compute
# profile of the main kernels at 256 Mi elements. Exits non-zero if any step
# failed.
set -u
root=$(pwd)
OUT=${OUT:-$root/devrun/out}
mkdir -p "$OUT"
export LCTTOP_TENSORS=${LCTTOP_TENSORS:-$root/devrun/tensors}
# the CLI tests run this binary for their no-CUDA cases (a default build)
export LCTTOP_BIN=$root/bin/lcttop-cpu
failed=()

step() { # step NAME LOG COMMAND...: run, log, remember a failure
	local name=$1 log=$2
	shift 2
	local t0=$SECONDS
	"$@" >"$log" 2>&1
	local rc=$?
	echo "$name: exit $rc in $((SECONDS - t0)) s" | tee -a "$OUT/steps.txt"
	[ $rc -eq 0 ] || failed+=("$name")
}

nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used,memory.total --format=csv >>"$OUT/nvidia-smi.txt" 2>&1

step "gpu tests" "$OUT/gpu-test.log" bash -c "cd gpu && '$root/bin/gpu.test' -test.v -test.timeout 20m"
step "cli tests" "$OUT/cli-test.log" bash -c "cd cmd/lcttop && '$root/bin/cli.test' -test.v -test.timeout 10m"
step "bench" "$OUT/bench.log" bash -c "'$root/bin/lcttop' bench --json-out '$OUT/bench.json' >'$OUT/bench.txt'"
# The 256 Mi figures once more: how much they move from run to run.
step "bench again" "$OUT/bench.log" bash -c "echo; echo 'again, 256 Mi only:' >>'$OUT/bench.txt'; '$root/bin/lcttop' bench --sizes 256Mi --step-sizes 256Mi --tensors '' >>'$OUT/bench.txt' 2>>'$OUT/bench.log'"
if [ "${PROFILE:-0}" = 1 ]; then
	step "ncu" "$OUT/ncu.txt" timeout 400 ncu --clock-control none \
		-k 'regex:^lct_(encode|decode|sgd_lct|adamw_lct|sgd_bf16|adamw_bf16)$' -c 16 \
		--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
		--section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
		"$root/bin/lcttop" bench --profile --sizes 256Mi --step-sizes 256Mi --reps 1
fi

echo
echo "== summary"
grep -hE "^(--- (FAIL|SKIP)|FAIL|ok |PASS$|panic)" "$OUT/gpu-test.log" "$OUT/cli-test.log" | sort | uniq -c
grep -hE "^--- PASS" "$OUT/gpu-test.log" "$OUT/cli-test.log" | sed 's/^/  /'
grep -hE "identical|detected|bit for bit" "$OUT/gpu-test.log" | sed 's/^ */  /'
cat "$OUT/bench.txt" 2>/dev/null
if [ "${PROFILE:-0}" = 1 ]; then
	grep -E "^  lct_|Duration|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Dynamic Shared" "$OUT/ncu.txt" | head -120
fi
cat "$OUT/steps.txt"
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED: ${failed[*]}"
	exit 1
fi
echo "all steps passed"
