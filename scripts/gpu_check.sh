#!/usr/bin/env bash
# gpu_check.sh: every GPU check and measurement of lcttop in one go, on a
# machine with an NVIDIA GPU and no Go toolchain. Build first, where Go is
# (scripts/gpu_build.sh), and take devrun/ along; then run
#   bash scripts/gpu_check.sh
# from the repository root. STAGES picks stages (default: all but step, ui
# and dump: the step's figures beside PyTorch's, scripts/ui_check.sh and
# scripts/dump_cost.sh); full logs go to $LOGS (default devrun/out), packed
# into $ARCHIVE as well when it is set (a device call brings back few
# files); a short table is printed last.
# Exits non-zero if a stage failed.
set -uo pipefail
root=$(pwd)
LOGS=${LOGS:-$root/devrun/out}
mkdir -p "$LOGS"
# Unpacked every time: a warm machine keeps the last call's bin/.
[ -f devrun/bin.tgz ] && tar xzf devrun/bin.tgz
export LCTTOP_TENSORS=${LCTTOP_TENSORS:-$root/devrun/tensors}
# On a GPU machine a test must not pass on the CPU emulation unseen.
export LCTTOP_REQUIRE_GPU=1
STAGES=${STAGES:-tests pack train memory bench fuzz}
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
failed=()
step() { # step NAME LOG COMMAND...: run, log, remember a failure
	local name=$1 log=$2
	shift 2
	local t0=$SECONDS
	"$@" >"$log" 2>&1
	local rc=$?
	echo "$name: exit $rc in $((SECONDS - t0)) s" | tee -a "$LOGS/steps.txt"
	[ $rc -eq 0 ] || failed+=("$name")
}
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv >"$LOGS/nvidia-smi.txt" 2>&1

if want tests; then
	# The test binaries at once: correctness, not timing.
	tests() { # name dir binary args...
		local name=$1 dir=$2
		shift 2
		(cd "$dir" && "$@") >"$LOGS/$name-test.log" 2>&1
		echo $? >"$LOGS/$name-test.rc"
	}
	tests kernels kernels "$root/bin/kernels.test" -test.v -test.timeout 5m &
	tests gpu gpu "$root/bin/gpu.test" -test.v -test.timeout 10m &
	tests lct gpu/lct "$root/bin/lct.test" -test.v -test.timeout 10m &
	tests bench gpu/bench "$root/bin/bench.test" -test.v -test.timeout 10m &
	tests cudabackend trainer/cudabackend "$root/bin/cudabackend.test" -test.v -test.timeout 10m &
	tests ui ui "$root/bin/ui.test" -test.v -test.run 'TestRealTrainer' -test.timeout 5m &
	LCTTOP_BIN="$root/bin/lcttop" tests cli cmd/lcttop "$root/bin/cli.test" -test.v -test.run 'CUDA|GPU' -test.timeout 10m &
	wait
	for n in kernels gpu lct bench cudabackend ui cli; do
		rc=$(cat "$LOGS/$n-test.rc")
		echo "$n tests: exit $rc" | tee -a "$LOGS/steps.txt"
		[ "$rc" -eq 0 ] || failed+=("$n tests")
	done
fi
if want pack; then
	# The GPU codec writes the CPU codec's bytes for every shared file under
	# four codecs, in each format version pack writes (both sides ask for
	# the same one; the kernels code both), and unpacks them to the
	# original bytes.
	pack_all() {
		local bad=0 f p d s u v
		for f in "$LCTTOP_TENSORS"/*.safetensors; do
			for v in 2 3; do
				for pd in auto/empirical clean/gaussian clean/empirical high/laplace; do
					p=${pd%/*} d=${pd#*/}
					"$root/bin/lcttop" pack --format-version "$v" --preset "$p" --dist "$d" "$f" "$LOGS/cpu.lct" >/dev/null &&
						"$root/bin/lcttop" pack --format-version "$v" --backend cuda --preset "$p" --dist "$d" "$f" "$LOGS/gpu.lct" >/dev/null || return 1
					cmp -s "$LOGS/cpu.lct" "$LOGS/gpu.lct" && s="same bytes" || { s=DIFFER; bad=1; }
					rm -f "$LOGS/back.safetensors"
					"$root/bin/lcttop" unpack --backend cuda "$LOGS/gpu.lct" "$LOGS/back.safetensors" >/dev/null &&
						cmp -s "$LOGS/back.safetensors" "$f" && u="unpacks to the original" || { u="UNPACK DIFFERS"; bad=1; }
					echo "$s, $u: $(basename "$f") v$v $pd"
				done
			done
		done
		rm -f "$LOGS/cpu.lct" "$LOGS/gpu.lct" "$LOGS/back.safetensors"
		return $bad
	}
	step "pack cuda = cpu" "$LOGS/pack.log" pack_all
fi
if want train; then
	step "train gpt162m 200" "$LOGS/train.jsonl" "$root/bin/lcttop" train --headless --backend cuda --model gpt162m --steps 200 \
		--check-every 50 --val-every 50 --val-batches 4 --timing-warmup 3 --json
fi
if want memory; then
	# the ledger's peak beside the pool's, the driver allocations' and NVML's, each run alone
	# (and the pool's traffic, to replay under other policies)
	step "memory: dense alone" "$LOGS/mem-dense.jsonl" "$root/bin/lcttop" bench step --shadow-only --model gpt162m --steps 30 --check-every 0 --val-every 0 --json --pool-trace "$LOGS/pool-dense.trace"
	step "memory: LCT alone" "$LOGS/mem-lct.jsonl" "$root/bin/lcttop" bench step --alone --model gpt162m --steps 30 --check-every 0 --val-every 0 --json --pool-trace "$LOGS/pool-lct.trace"
fi
if want bench; then
	step "bench" "$LOGS/bench.log" bash -c "'$root/bin/lcttop' bench --sizes 256Mi --step-sizes 256Mi --tensors '$LCTTOP_TENSORS' --real-size 67108864 >'$LOGS/bench.txt'"
fi
if want fuzz; then
	# The GPU decoders on corrupt streams, each for a fixed time (no coverage
	# guidance in a prebuilt test binary; the mutations still reach every
	# byte): format version 2's streams, then version 3's, whose decode
	# goes through the host each time (fewer executions). The log's last
	# line says how many ran.
	for f in FuzzDecodeCorrupt FuzzDecode3Corrupt; do
		step "fuzz gpu $f ${FUZZ_SECONDS:-80}s" "$LOGS/$f.log" bash -c "cd gpu && '$root/bin/gpu.test' -test.run '^$' -test.fuzz '^$f\$' -test.fuzztime ${FUZZ_SECONDS:-80}s -test.parallel 8 -test.fuzzcachedir /tmp/lcttop-fuzzcache"
	done
fi
if want step; then
	# Where the step's time goes, batch 32, the run repeated, and PyTorch
	# on the same model (eager, compiled, batch 32).
	step "train gpt162m 200 again" "$LOGS/train-again.jsonl" "$root/bin/lcttop" train --headless --backend cuda --model gpt162m --steps 200 \
		--check-every 50 --val-every 50 --val-batches 4 --timing-warmup 3 --json
	step "train gpt162m batch 32" "$LOGS/train-b32.jsonl" "$root/bin/lcttop" train --headless --backend cuda --model gpt162m --batch 32 --steps 40 \
		--check-every 20 --val-every 0 --timing-warmup 3 --json
	step "dense step by op" "$LOGS/dense-ops.err" env LCTTOP_PROFILE_OPS=2 "$root/bin/lcttop" train --headless --backend cuda --shadow-only \
		--model gpt162m --steps 20 --val-every 0 --timing-warmup 3 --json
	step "codec by kind" "$LOGS/codec-ops.jsonl" "$root/bin/lcttop" bench step --codec-profile --model gpt162m --steps 20 --check-every 0 --val-every 0 --json
	for t in "eager 8" "compile 8" "eager 32"; do
		set -- $t
		flag=""
		[ "$1" = compile ] && flag=--compile
		step "pytorch $1 batch $2" "$LOGS/torch-$1-$2.jsonl" env PYTHONUNBUFFERED=1 timeout 200 python3 scripts/pytorch_reference.py \
			--model gpt162m --batch "$2" --steps 30 --warmup 5 $flag
	done
fi
if want ui; then
	step "ui" "$LOGS/ui_check.log" env OUT="$LOGS/ui" STAGES="screen cost" bash scripts/ui_check.sh
fi
if want dump; then
	step "dump helper" "$LOGS/dump.log" env OUT="$LOGS/dump" BIN="$root/bin" bash scripts/dump_cost.sh
fi

summary() {
	echo
	echo "== summary"
	grep -hE "^(--- (FAIL|SKIP)|FAIL|panic)" "$LOGS"/*-test.log 2>/dev/null | sort | uniq -c
	for f in "$LOGS"/*-test.log; do [ -f "$f" ] && echo "$(basename "$f"): $(grep -c -- '--- PASS' "$f") PASS, $(grep -c -- '--- SKIP' "$f") SKIP, $(grep -c -- '--- FAIL' "$f") FAIL"; done
	sed 's/: .*//' "$LOGS/pack.log" 2>/dev/null | sort | uniq -c
	tail -1 "$LOGS/train.jsonl" 2>/dev/null | cut -c1-1500
	for f in "$LOGS"/mem-*.jsonl; do [ -f "$f" ] && echo "$(basename "$f"): $(tail -1 "$f")"; done
	sed -n '/^lcttop bench:/,$p' "$LOGS/bench.txt" 2>/dev/null
	tail -3 "$LOGS"/FuzzDecode*.log 2>/dev/null
	for f in train-again train-b32 codec-ops torch-eager-8 torch-compile-8 torch-eager-32; do
		[ -f "$LOGS/$f.jsonl" ] && echo "$f: $(grep '^{' "$LOGS/$f.jsonl" | tail -1 | cut -c1-700)"
	done
	[ -f "$LOGS/train.jsonl" ] && [ -f "$LOGS/train-again.jsonl" ] && python3 - "$LOGS/train.jsonl" "$LOGS/train-again.jsonl" <<'PY'
import json, sys
runs = [[(r.get("step"), r.get("loss_lct"), r.get("loss_shadow"), r.get("val_loss")) for r in map(json.loads, open(f)) if "step" in r and not r.get("summary")] for f in sys.argv[1:]]
print("two runs of 200 steps: %d and %d step lines, %s" % (len(runs[0]), len(runs[1]), "the same losses at every step" if runs[0] == runs[1] and runs[0] else "LOSSES DIFFER"))
PY
	tail -4 "$LOGS/ui_check.log" 2>/dev/null
	grep -A12 "=== cost" "$LOGS/dump/dump_cost.log" 2>/dev/null
	cat "$LOGS/steps.txt"
}
summary | tee "$LOGS/summary.txt"
[ -n "${ARCHIVE:-}" ] && tar czf "$ARCHIVE" -C "$LOGS" .
if [ ${#failed[@]} -gt 0 ]; then
	echo "FAILED: ${failed[*]}"
	exit 1
fi
echo "all stages passed"
