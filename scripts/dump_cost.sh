#!/usr/bin/env bash
# One device call: what scripts/lcttop_dump.py costs a training step, and the folder it writes,
# read by lcttop. From the repository root on a GPU machine with PyTorch:
#
#   bash scripts/dump_cost.sh                 # OUT=device-out ROUNDS=3 STEPS=100 EVERY=20 MODEL=gpt162m
#
# Runs scripts/pytorch_reference.py ROUNDS times without the helper and ROUNDS times with it
# (--dump-dir, --dump-every EVERY), interleaved (without, with, without, ...), STEPS timed steps
# each after 5 warm-up steps, and prints per run the median and mean step time, the mean of the
# steps that dumped and of the others, and the files written; then the cost: the mean step with
# the helper against without, per round and as the median of the rounds. The dumps go to $DUMP,
# outside $OUT (a gpt162m dump is 1.3 GB); the last run's folder is read, where BIN/lcttop
# exists (go build -o bin/lcttop ./cmd/lcttop), with lcttop watch --headless --once and lcttop
# open --headless, and shown in the UI under tmux when tmux is there (text captures in $OUT).
# LAUNCH starts the script (default python3; "torchrun --nproc-per-node 2" for several ranks)
# and ARGS are added to each run (--fsdp, --ddp, --device cpu): scripts/sharded_check.sh does so;
# TIMEOUT (300) is the most seconds a run may take; PYTHON (python3) is the one with PyTorch.
set -uo pipefail
OUT=${OUT:-device-out}
BIN=${BIN:-bin}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-100}
EVERY=${EVERY:-20}
MODEL=${MODEL:-gpt162m}
DUMP=${DUMP:-/tmp/lcttop-dump}
LAUNCH=${LAUNCH:-python3}
ARGS=${ARGS:-}
TIMEOUT=${TIMEOUT:-300}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
exec > >(tee "$OUT/dump_cost.log") 2>&1
stage() { echo; echo "=== $1 ($(date +%T))"; }

stage machine
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm --format=csv
$PYTHON -c 'import torch; print("torch", torch.__version__)'
df -h "$OUT" | tail -1

run() { # name, extra args...
  local name=$1
  shift
  # shellcheck disable=SC2086 # LAUNCH and ARGS are words
  PYTHONUNBUFFERED=1 timeout "$TIMEOUT" $LAUNCH scripts/pytorch_reference.py --model "$MODEL" --steps "$STEPS" --warmup 5 $ARGS "$@" \
    >"$OUT/$name.jsonl" 2>"$OUT/$name.err"
  echo "$name rc=$? $(tail -1 "$OUT/$name.jsonl" | cut -c1-300)"
  tail -2 "$OUT/$name.err"
}

for r in $(seq 1 "$ROUNDS"); do
  stage "round $r"
  run "plain-$r"
  rm -rf "$DUMP"
  run "dump-$r" --dump-dir "$DUMP" --dump-every "$EVERY"
  ls -la "$DUMP" | tail -n +2
done

stage "cost"
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def summary(name):
    try:
        rows = [json.loads(l) for l in open(os.path.join(out, name + ".jsonl")) if l.startswith("{")]
    except FileNotFoundError:
        return None
    rows = [r for r in rows if "median_step_ms" in r]
    return rows[-1] if rows else None
fmt = "{:<8} {:>10} {:>9} {:>12} {:>12} {:>8} {:>8}"
print(fmt.format("run", "median ms", "mean ms", "dump steps", "other steps", "written", "skipped"))
costs = []
for r in range(1, rounds + 1):
    a, b = summary("plain-%d" % r), summary("dump-%d" % r)
    for name, s in (("plain-%d" % r, a), ("dump-%d" % r, b)):
        if not s:
            print(name, "failed")
            continue
        d = lambda k: "—" if s.get(k) is None else "%.2f" % s[k]
        print(fmt.format(name, "%.2f" % s["median_step_ms"], "%.2f" % s["mean_step_ms"], d("dump_step_mean_ms"),
                         d("other_step_mean_ms"), s.get("dumps_written", "—"), s.get("dumps_skipped", "—")))
        if s.get("dump_errors"):
            print("  errors:", s["dump_errors"])
    if a and b:
        costs.append(b["mean_step_ms"] / a["mean_step_ms"] - 1)
        print("  round %d: mean step with the helper %+.2f%% (%.2f vs %.2f ms)" % (r, 100 * costs[-1], b["mean_step_ms"], a["mean_step_ms"]))
if costs:
    print("cost per step, median of %d rounds: %+.2f%% of the mean step" % (len(costs), 100 * statistics.median(costs)))
PY

if [ -x "$BIN/lcttop" ] && [ -d "$DUMP" ]; then
  stage "lcttop watch --headless --once"
  /usr/bin/time -v "$BIN/lcttop" watch --headless --once "$DUMP" >"$OUT/watch.txt" 2>"$OUT/watch.time"
  echo "rc=$?"; cat "$OUT/watch.txt"; grep -E 'Maximum resident|Elapsed' "$OUT/watch.time"
  stage "lcttop open --headless (the newest step)"
  /usr/bin/time -v "$BIN/lcttop" open --headless "$DUMP" >"$OUT/open.txt" 2>"$OUT/open.time"
  echo "rc=$?"; grep -v '^exact pass' "$OUT/open.txt"; grep -E 'Maximum resident|Elapsed' "$OUT/open.time"
  if command -v tmux >/dev/null; then
    stage "the UI, under tmux (160x48)"
    tmux new-session -d -s lcttop-watch -x 160 -y 48 "$BIN/lcttop watch $DUMP"
    sleep 30
    tmux capture-pane -p -t lcttop-watch >"$OUT/watch-ui.txt"
    tmux send-keys -t lcttop-watch Tab Tab
    sleep 1
    tmux capture-pane -p -t lcttop-watch >"$OUT/watch-ui-history.txt"
    tmux send-keys -t lcttop-watch q
    sleep 1
    tmux kill-session -t lcttop-watch 2>/dev/null
    head -12 "$OUT/watch-ui.txt"
  fi
fi
du -sh "$DUMP" 2>/dev/null
