#!/usr/bin/env bash
# sharded_check.sh: a sharded PyTorch run followed by lcttop, on a machine with 2 or more GPUs and
# PyTorch 2.4 or later but no Go: build here with scripts/gpu_build.sh, take devrun/ along (the
# binaries, ptyrun.py), then from the repository root
#
#   bash scripts/sharded_check.sh            # STAGES="cost check" MODES="fsdp ddp" NPROC=2
#
# For each of FSDP (full shard) and DDP on NPROC ranks, scripts/pytorch_reference.py --model
# MODEL (gpt162m), STEPS steps (100) after 5 warm-up steps, the dump helper every EVERY (20):
#   cost   scripts/dump_cost.sh under the launcher: ROUNDS (2) runs without the helper and with
#          it, interleaved; the mean step with it against without, per round and the median.
#   check  one run that also writes, at every dumped step, the full state PyTorch gathers
#          (--gather-at; FSDP: its full state dict), while lcttop watch follows the live folder
#          under a 160x48 pseudo-terminal (devrun/ptyrun.py, CAPTURE_S seconds; replay the .cap
#          files in tmux at 160x48 with stty -echo); then lcttop watch --headless --once on the
#          folder (the history, per-class ratios, file and LCT bytes), and the merge check,
#          cmd/lcttop's TestShardedRunFolder through bin/cli.test: at every gathered step the
#          ranks' files put together are the gathered state bit for bit, and watch merges them
#          into one checkpoint with that state's elements and exponents for every tensor.
# The two stages take about 4 minutes each on two H200s: run them in two calls (STAGES=cost,
# STAGES=check) where a call is limited to 10 minutes. Dumps go to $DUMP, outside $OUT (a gpt162m
# step is 1.3 GB over the ranks, its gathered state as much again), removed after each mode.
#
# Without GPUs (gloo, a small model), e.g. with Debian's PyTorch 1.13, whose torchrun does not
# start (scripts/ranks.sh starts the ranks instead); FSDP needs PyTorch 2.4 and is refused there:
#   DEVICE=cpu MODES=ddp MODEL=tiny STEPS=4 EVERY=2 ROUNDS=1 CAPTURE_S=40 \
#     LAUNCH="bash scripts/ranks.sh 2 /usr/bin/python3" bash scripts/sharded_check.sh
set -uo pipefail
root=$(pwd)
OUT=${OUT:-$root/devrun/out/sharded}
DUMP=${DUMP:-/tmp/lcttop-sharded}
STAGES=${STAGES:-cost check}
MODES=${MODES:-fsdp ddp}
NPROC=${NPROC:-2}
MODEL=${MODEL:-gpt162m}
STEPS=${STEPS:-100}
EVERY=${EVERY:-20}
ROUNDS=${ROUNDS:-2}
DEVICE=${DEVICE:-cuda}
CAPTURE_S=${CAPTURE_S:-90}
PYTHON=${PYTHON:-python3}
if [ -z "${LAUNCH:-}" ]; then
	if command -v torchrun >/dev/null; then
		LAUNCH="torchrun --standalone --nproc-per-node $NPROC"
	else
		LAUNCH="$PYTHON -m torch.distributed.run --standalone --nproc-per-node $NPROC"
	fi
fi
DEVARGS=""
[ "$DEVICE" = cpu ] && DEVARGS="--device cpu"
mkdir -p "$OUT" "$DUMP"
[ -d bin ] || tar xzf devrun/bin.tgz
bin=$root/bin/lcttop
pty=$root/devrun/ptyrun.py
exec > >(tee "$OUT/sharded_check.log") 2>&1
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
stage() { echo; echo "=== $1 ($(date +%T))"; }
results=()

stage machine
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv
$PYTHON -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")'
echo "launcher: $LAUNCH"
df -h "$DUMP" | tail -1

if want cost; then
	for mode in $MODES; do
		stage "cost: $mode"
		OUT=$OUT/cost-$mode BIN=none DUMP=$DUMP/cost-$mode LAUNCH=$LAUNCH ARGS="--$mode $DEVARGS" \
			ROUNDS=$ROUNDS STEPS=$STEPS EVERY=$EVERY MODEL=$MODEL bash scripts/dump_cost.sh >/dev/null
		sed -n '/^=== cost/,$p' "$OUT/cost-$mode/dump_cost.log"
		cost=$(grep -o 'median of [0-9]* rounds: [-+0-9.]*%' "$OUT/cost-$mode/dump_cost.log")
		results+=("$mode cost: ${cost:-no figure (see $OUT/cost-$mode)}")
		rm -rf "${DUMP:?}/cost-$mode"
	done
fi

if want check; then
	last=$((STEPS + 5))
	gather=$(seq -s, "$EVERY" "$EVERY" "$last")
	for mode in $MODES; do
		stage "check: $mode, the full state gathered at steps $gather"
		d=$DUMP/$mode f=$DUMP/$mode-full
		rm -rf "$d" "$f"
		mkdir -p "$d"
		ptypid=""
		if [ -x "$bin" ] && [ -f "$pty" ]; then
			# The live folder from before the first dump: a down and an up arrow at 30 s and
			# 31 s keep what the screen showed then (.k0, .k1); tab twice at the end: the history.
			keys="\x1b[B@30,\x1b[A@31,\t@$((CAPTURE_S - 6)),\t@$((CAPTURE_S - 5))"
			python3 "$pty" "$OUT/$mode-watch.cap" "$CAPTURE_S" 160 48 "$keys" -- "$bin" watch "$d" \
				>"$OUT/$mode-pty.log" 2>&1 &
			ptypid=$!
		fi
		t0=$SECONDS
		# shellcheck disable=SC2086 # LAUNCH and DEVARGS are words
		PYTHONUNBUFFERED=1 timeout 600 $LAUNCH scripts/pytorch_reference.py --$mode $DEVARGS --model "$MODEL" \
			--steps "$STEPS" --warmup 5 --dump-dir "$d" --dump-every "$EVERY" --gather-at "$gather" --gather-dir "$f" \
			>"$OUT/$mode-check.jsonl" 2>"$OUT/$mode-check.err"
		rc=$?
		echo "training: exit $rc in $((SECONDS - t0)) s: $(tail -1 "$OUT/$mode-check.jsonl" | cut -c1-400)"
		[ $rc -eq 0 ] || tail -5 "$OUT/$mode-check.err"
		ls -la "$d" "$f" | grep -v '^total'
		[ -n "$ptypid" ] && wait "$ptypid"
		[ -n "$ptypid" ] && echo "capture: $(ls "$OUT" | grep "^$mode-watch.cap" | tr '\n' ' ')"

		if [ -x "$bin" ]; then
			stage "check: $mode: lcttop watch --headless --once"
			/usr/bin/time -v "$bin" watch --headless --once "$d" >"$OUT/$mode-watch.txt" 2>"$OUT/$mode-watch.time"
			echo "exit $?"
			cat "$OUT/$mode-watch.txt"
			grep -E 'Maximum resident|Elapsed' "$OUT/$mode-watch.time"

			stage "check: $mode: the ranks' files against the gathered state (TestShardedRunFolder)"
			(cd cmd/lcttop && LCTTOP_BIN=$bin LCTTOP_SHARDED_DUMP=$d LCTTOP_SHARDED_FULL=$f \
				"$root/bin/cli.test" -test.run '^TestShardedRunFolder$' -test.v -test.timeout 10m) >"$OUT/$mode-merge.log" 2>&1
			rc=$?
			grep -E '^(---|ok|FAIL|PASS)|sharded_test.go' "$OUT/$mode-merge.log" | cut -c1-400 | head -40
			equal=$(grep -c 'bit for bit' "$OUT/$mode-merge.log")
			results+=("$mode merge check: exit $rc, $equal of $(echo "$gather" | tr ',' '\n' | wc -l) gathered steps equal")
		else
			results+=("$mode merge check: not run (no $bin)")
		fi
		du -sh "$d" "$f" 2>/dev/null
		[ -n "${KEEP:-}" ] || rm -rf "$d" "$f"
	done
fi

stage summary
printf '%s\n' "${results[@]}"
