#!/usr/bin/env bash
# sharded_check.sh: a sharded PyTorch run followed by lcttop, in one call on a machine with 2 or
# more GPUs and PyTorch 2.4 or later but no Go. Build where Go is (scripts/gpu_build.sh), take
# devrun/ along (the binaries packed, ptyrun.py), then from the repository root
#
#   LOGS=/tmp/sharded ARCHIVE=/somewhere/sharded.tgz bash scripts/sharded_check.sh
#
# Nothing is built there. For each of FSDP (full shard) and DDP on NPROC ranks (2),
# scripts/pytorch_reference.py --model MODEL (gpt162m), STEPS steps (100) after 5 warm-up steps,
# the dump helper every EVERY (20):
#   check  one run that also writes, at every dumped step, the full state PyTorch gathers
#          (--gather-at; FSDP: its full state dict), while lcttop watch follows the live folder
#          under a 160x48 pseudo-terminal (devrun/ptyrun.py, CAPTURE_S seconds from before the
#          ranks start; the screen kept at 15, 25, 35 and 45 s as .k0-.k3, the history view at
#          the end; replay the .cap files in tmux at 160x48 with stty -echo); then lcttop watch
#          --headless --once on the folder (the history, per-class ratios, file and LCT bytes)
#          and the merge check, cmd/lcttop's TestShardedRunFolder through bin/cli.test: at
#          every gathered step the ranks' files put together are the gathered state bit for
#          bit, and watch merges them into one checkpoint with that state's elements and
#          exponents for every tensor (and open into the same one, with watch's figures).
#   cost   scripts/dump_cost.sh under the launcher: ROUNDS (2) runs without the helper and with
#          it, interleaved; the mean step with it against without, per round and the median.
# STAGES (default "check cost") and MODES ("fsdp ddp") pick. Full logs go to $LOGS (default
# devrun/out/sharded), packed into $ARCHIVE as well when it is set (a device call brings back few
# files); a short summary is printed last and kept as $LOGS/summary.txt. The whole run keeps
# within DEADLINE_S seconds (540): a run is given at most what is left, and a mode that no longer
# fits is skipped and says so. Dumps go to $DUMP, outside $LOGS (a gpt162m step is 1.3 GB over
# the ranks, its gathered state as much again), removed after each mode unless KEEP is set.
# Exits non-zero if a run or a check failed or was skipped.
#
# Without GPUs (gloo, a small model), e.g. with Debian's PyTorch 1.13, whose torchrun does not
# start (scripts/ranks.sh starts the ranks instead); FSDP needs PyTorch 2.4 and is refused there:
#   DEVICE=cpu MODES=ddp MODEL=tiny STEPS=4 EVERY=2 ROUNDS=1 PYTHON=/usr/bin/python3 \
#     LAUNCH="bash scripts/ranks.sh 2 /usr/bin/python3" bash scripts/sharded_check.sh
set -uo pipefail
root=$(pwd)
LOGS=${LOGS:-$root/devrun/out/sharded}
DUMP=${DUMP:-/tmp/lcttop-sharded}
STAGES=${STAGES:-check cost}
MODES=${MODES:-fsdp ddp}
NPROC=${NPROC:-2}
MODEL=${MODEL:-gpt162m}
STEPS=${STEPS:-100}
EVERY=${EVERY:-20}
ROUNDS=${ROUNDS:-2}
DEVICE=${DEVICE:-cuda}
CAPTURE_S=${CAPTURE_S:-60}
DEADLINE_S=${DEADLINE_S:-540}
PYTHON=${PYTHON:-python3}
# NVLink multicast stays off, in every process the launcher starts.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -z "${LAUNCH:-}" ]; then
	if command -v torchrun >/dev/null; then
		LAUNCH="torchrun --standalone --nproc-per-node $NPROC"
	else
		LAUNCH="$PYTHON -m torch.distributed.run --standalone --nproc-per-node $NPROC"
	fi
fi
DEVARGS=""
[ "$DEVICE" = cpu ] && DEVARGS="--device cpu"
mkdir -p "$LOGS" "$DUMP"
# Unpacked every time: a warm machine keeps the last call's bin/.
[ -f devrun/bin.tgz ] && tar xzf devrun/bin.tgz
bin=$root/bin/lcttop
pty=$root/devrun/ptyrun.py
timed=/usr/bin/time
[ -x "$timed" ] && timed="$timed -v" || timed=""
exec > >(tee "$LOGS/sharded_check.log") 2>&1
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
stage() { echo; echo "=== $1 ($(date +%T), $SECONDS s in)"; }
left() { echo $((DEADLINE_S - SECONDS)); }
results=() failed=()
note() { results+=("$1"); }
fail() { results+=("$1"); failed+=("$2"); }

stage machine
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,driver_version,memory.used --format=csv
$PYTHON -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")'
echo "launcher: $LAUNCH"
df -h "$DUMP" | tail -1
[ -x "$bin" ] || echo "no $bin: watch, the capture and the merge check are left out (scripts/gpu_build.sh makes devrun/bin.tgz)"

# training MODE JSONL: one line on the run's last JSON line (its summary).
training() {
	python3 - "$1" "$2" <<'PY'
import json, sys
mode, path = sys.argv[1:]
try:
    s = json.loads([l for l in open(path) if l.startswith("{")][-1])
except (OSError, IndexError, ValueError):
    print("%s training: no summary in %s" % (mode, path))
    sys.exit()
ms = lambda k: "—" if s.get(k) is None else "%.2f ms" % s[k]
print("%s training: %s ranks (%s), median step %s, %s files written, %s skipped, errors %s, gathered at %s"
      % (mode, s.get("world"), s.get("dist_backend"), ms("median_step_ms"), s.get("dumps_written"),
         s.get("dumps_skipped"), len(s.get("dump_errors") or []), s.get("gathered")))
PY
}

if want check; then
	last=$((STEPS + 5))
	gather=$(seq -s, "$EVERY" "$EVERY" "$last")
	ngather=$(echo "$gather" | tr ',' '\n' | grep -c .)
	for mode in $MODES; do
		stage "check: $mode, the full state gathered at steps $gather"
		if [ "$(left)" -lt $((CAPTURE_S + 60)) ]; then
			fail "$mode check: skipped, $(left) s left of DEADLINE_S" "$mode check"
			continue
		fi
		d=$DUMP/$mode f=$DUMP/$mode-full
		rm -rf "$d" "$f"
		mkdir -p "$d"
		ptypid=""
		if [ -x "$bin" ] && [ -f "$pty" ]; then
			# From before the ranks start: a down and an up arrow, twice, keep the screen at
			# 15, 25, 35 and 45 s (.k0-.k3); tab twice at the end: the history view.
			keys="\x1b[B@15,\x1b[A@25,\x1b[B@35,\x1b[A@45,\t@$((CAPTURE_S - 6)),\t@$((CAPTURE_S - 5))"
			python3 "$pty" "$LOGS/$mode-watch.cap" "$CAPTURE_S" 160 48 "$keys" -- "$bin" watch "$d" \
				>"$LOGS/$mode-pty.log" 2>&1 &
			ptypid=$!
		fi
		t0=$SECONDS
		limit=$(($(left) - 40))
		[ "$limit" -gt 300 ] && limit=300
		# shellcheck disable=SC2086 # LAUNCH and DEVARGS are words
		PYTHONUNBUFFERED=1 timeout "$limit" $LAUNCH scripts/pytorch_reference.py --$mode $DEVARGS --model "$MODEL" \
			--steps "$STEPS" --warmup 5 --dump-dir "$d" --dump-every "$EVERY" --gather-at "$gather" --gather-dir "$f" \
			>"$LOGS/$mode-check.jsonl" 2>"$LOGS/$mode-check.err"
		rc=$?
		echo "training: exit $rc in $((SECONDS - t0)) s (limit $limit s)"
		train=$(training "$mode" "$LOGS/$mode-check.jsonl")
		echo "$train"
		if [ $rc -ne 0 ]; then
			tail -5 "$LOGS/$mode-check.err"
			fail "$mode training: exit $rc in $((SECONDS - t0)) s: $(grep -v '^ *$' "$LOGS/$mode-check.err" | tail -1 | cut -c1-200)" "$mode training"
		else
			note "$train; $((SECONDS - t0)) s"
		fi
		ls -la --time-style=+%T "$d" "$f" | grep -v '^total'

		if [ $rc -ne 0 ]; then
			note "$mode watch and merge check: not run (the training failed)"
		elif [ -x "$bin" ]; then
			# While the capture goes on: the folder as watch reads it once, then the merge check.
			stage "check: $mode: lcttop watch --headless --once"
			# shellcheck disable=SC2086 # timed is words
			$timed "$bin" watch --headless --once "$d" >"$LOGS/$mode-watch.txt" 2>"$LOGS/$mode-watch.time"
			wrc=$?
			echo "exit $wrc"
			cat "$LOGS/$mode-watch.txt"
			grep -E 'Maximum resident|Elapsed' "$LOGS/$mode-watch.time"
			if [ $wrc -eq 0 ]; then
				note "$mode merged checkpoint (watch --headless --once, the last step):"
				while IFS= read -r line; do note "  $line"; done < <(sed -n '/^ *class  *tensors/,/^ *total /p' "$LOGS/$mode-watch.txt")
			else
				fail "$mode watch --headless --once: exit $wrc" "$mode watch"
			fi

			stage "check: $mode: the ranks' files against the gathered state (TestShardedRunFolder)"
			(cd cmd/lcttop && LCTTOP_BIN=$bin LCTTOP_SHARDED_DUMP=$d LCTTOP_SHARDED_FULL=$f \
				timeout "$(($(left) > 30 ? $(left) - 20 : 10))" "$root/bin/cli.test" -test.run '^TestShardedRunFolder$' -test.v) \
				>"$LOGS/$mode-merge.log" 2>&1
			mrc=$?
			grep -E '^(---|ok|FAIL|PASS)|sharded_test.go' "$LOGS/$mode-merge.log" | cut -c1-400 | head -40
			equal=$(grep -c 'bit for bit' "$LOGS/$mode-merge.log")
			line="$mode merge check: exit $mrc, $equal of $ngather gathered steps: the ranks' files put together are PyTorch's gathered state bit for bit, and watch and open merged them"
			if [ $mrc -eq 0 ] && [ "$equal" -eq "$ngather" ]; then
				note "$line"
				note "  $(grep -m1 'bit for bit' "$LOGS/$mode-merge.log" | sed 's/^ *sharded_test.go:[0-9]*: //' | cut -c1-300)"
			else
				fail "$line (see $mode-merge.log)" "$mode merge check"
			fi
		else
			fail "$mode merge check: not run (no $bin)" "$mode merge check"
		fi
		if [ -n "$ptypid" ]; then
			wait "$ptypid"
			note "$mode capture (${CAPTURE_S} s, 160x48): $(cd "$LOGS" && ls | grep "^$mode-watch.cap" | tr '\n' ' ')"
		fi
		du -sh "$d" "$f" 2>/dev/null
		[ -n "${KEEP:-}" ] || rm -rf "$d" "$f"
	done
fi

if want cost; then
	for mode in $MODES; do
		stage "cost: $mode"
		runs=$((2 * ROUNDS))
		per=$((($(left) - 20) / runs))
		if [ "$per" -lt 40 ]; then
			fail "$mode cost: skipped, $(left) s left of DEADLINE_S for $runs runs" "$mode cost"
			continue
		fi
		[ "$per" -gt 300 ] && per=300
		LOGS_COST=$LOGS/cost-$mode
		OUT=$LOGS_COST BIN=none DUMP=$DUMP/cost-$mode LAUNCH=$LAUNCH ARGS="--$mode $DEVARGS" TIMEOUT=$per PYTHON=$PYTHON \
			ROUNDS=$ROUNDS STEPS=$STEPS EVERY=$EVERY MODEL=$MODEL bash scripts/dump_cost.sh >/dev/null
		sed -n '/^=== cost/,$p' "$LOGS_COST/dump_cost.log"
		cost=$(grep -o 'median of [0-9]* rounds: [-+0-9.]*%' "$LOGS_COST/dump_cost.log")
		if [ -n "$cost" ]; then
			note "$mode cost of the helper per step (mean step with it vs without, interleaved): $cost"
			# The table's head and its runs with the helper: files written and dumps skipped.
			while IFS= read -r line; do note "  $line"; done < <(grep -E '^(run  |dump-[0-9]+ +[0-9]|  round [0-9]+:)' "$LOGS_COST/dump_cost.log")
		else
			fail "$mode cost: no figure (see cost-$mode/dump_cost.log)" "$mode cost"
		fi
		rm -rf "${DUMP:?}/cost-$mode"
	done
fi

stage summary
{
	echo "sharded_check: $MODEL, $STEPS steps, a dump every $EVERY, on $NPROC ranks ($DEVICE), $SECONDS s"
	printf '%s\n' "${results[@]}"
	[ ${#failed[@]} -eq 0 ] && echo "all passed" || echo "FAILED: ${failed[*]}"
} | tee "$LOGS/summary.txt"
[ -n "${ARCHIVE:-}" ] && tar czf "$ARCHIVE" -C "$LOGS" .
[ ${#failed[@]} -eq 0 ]
