#!/usr/bin/env bash
# gpu_check.sh: every GPU check and measurement of lcttop in one go, on a
# machine with an NVIDIA GPU and no Go toolchain. Build first, where Go is
# (scripts/gpu_build.sh), and take devrun/ along; then run
#   bash scripts/gpu_check.sh
# from the repository root. STAGES picks stages (default: all); full logs go
# to $OUT (default devrun/out); a short table is printed last. Exits non-zero
# if a stage failed.
set -uo pipefail
root=$(pwd)
OUT=${OUT:-$root/devrun/out}
mkdir -p "$OUT"
[ -d bin ] || tar xzf devrun/bin.tgz
export LCTTOP_TENSORS=${LCTTOP_TENSORS:-$root/devrun/tensors}
STAGES=${STAGES:-tests pack train memory bench fuzz}
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
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
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv >"$OUT/nvidia-smi.txt" 2>&1

if want tests; then
	step "kernels tests" "$OUT/kernels-test.log" bash -c "cd kernels && '$root/bin/kernels.test' -test.v -test.timeout 5m"
	step "gpu tests" "$OUT/gpu-test.log" bash -c "cd gpu && '$root/bin/gpu.test' -test.v -test.timeout 10m"
	step "cudabackend tests" "$OUT/cudabackend-test.log" bash -c "cd trainer/cudabackend && '$root/bin/cudabackend.test' -test.v -test.timeout 10m"
	step "ui tests (GPU)" "$OUT/ui-test.log" bash -c "cd ui && '$root/bin/ui.test' -test.v -test.run 'TestRealTrainer' -test.timeout 5m"
	step "cli tests (GPU)" "$OUT/cli-test.log" bash -c "cd cmd/lcttop && LCTTOP_BIN='$root/bin/lcttop' '$root/bin/cli.test' -test.v -test.run 'CUDA|GPU' -test.timeout 10m"
fi
if want pack; then
	# the GPU codec writes the CPU codec's bytes for every shared file
	pack_all() {
		local bad=0
		for f in "$LCTTOP_TENSORS"/*.safetensors; do
			"$root/bin/lcttop" pack "$f" "$OUT/cpu.lct" && "$root/bin/lcttop" pack --backend cuda "$f" "$OUT/gpu.lct" || return 1
			if cmp -s "$OUT/cpu.lct" "$OUT/gpu.lct"; then echo "same bytes: $(basename "$f")"; else echo "DIFFER: $(basename "$f")"; bad=1; fi
		done
		rm -f "$OUT/cpu.lct" "$OUT/gpu.lct"
		return $bad
	}
	step "pack cuda = cpu" "$OUT/pack.log" pack_all
fi
if want train; then
	step "train gpt162m 200" "$OUT/train.jsonl" "$root/bin/lcttop" train --headless --backend cuda --model gpt162m --steps 200 \
		--check-every 50 --val-every 50 --val-batches 4 --timing-warmup 3 --json
fi
if want memory; then
	# the ledger's peak beside NVML's, each run alone (bench step --alone and --shadow-only)
	step "memory: dense alone" "$OUT/mem-dense.jsonl" "$root/bin/lcttop" bench step --shadow-only --model gpt162m --steps 30 --check-every 0 --val-every 0 --json
	step "memory: LCT alone" "$OUT/mem-lct.jsonl" "$root/bin/lcttop" bench step --alone --model gpt162m --steps 30 --check-every 0 --val-every 0 --json
fi
if want bench; then
	step "bench" "$OUT/bench.log" bash -c "'$root/bin/lcttop' bench --sizes 256Mi --step-sizes 256Mi --tensors '$LCTTOP_TENSORS' --real-size 67108864 >'$OUT/bench.txt'"
fi
if want fuzz; then
	# the GPU decoder on corrupt streams: 1M executions (no coverage guidance
	# in a prebuilt test binary; the mutations still reach every byte)
	step "fuzz gpu decode 1M" "$OUT/fuzz.log" bash -c "cd gpu && timeout ${FUZZ_SECONDS:-150} '$root/bin/gpu.test' -test.run '^$' -test.fuzz '^FuzzDecodeCorrupt$' -test.fuzztime 1000000x -test.parallel 8 -test.fuzzcachedir '$OUT/fuzzcache'"
fi

echo
echo "== summary"
grep -hE "^(--- (FAIL|SKIP)|FAIL|ok |panic)" "$OUT"/*-test.log 2>/dev/null | sort | uniq -c
for f in "$OUT"/*-test.log; do [ -f "$f" ] && echo "$(basename "$f"): $(grep -c '^--- PASS' "$f") PASS, $(grep -c '^--- SKIP' "$f") SKIP, $(grep -c '^--- FAIL' "$f") FAIL"; done
grep -hE "DIFFER|same bytes" "$OUT/pack.log" 2>/dev/null | sort | uniq -c | head
tail -1 "$OUT/train.jsonl" 2>/dev/null | cut -c1-1500
for f in "$OUT"/mem-*.jsonl; do [ -f "$f" ] && echo "$(basename "$f"): $(tail -1 "$f")"; done
cat "$OUT/bench.txt" 2>/dev/null | head -60
tail -3 "$OUT/fuzz.log" 2>/dev/null
cat "$OUT/steps.txt"
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED: ${failed[*]}"
	exit 1
fi
echo "all stages passed"
