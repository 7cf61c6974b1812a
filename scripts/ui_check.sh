#!/usr/bin/env bash
# ui_check.sh: the interactive UI on the GPU, on a machine with an NVIDIA
# GPU and python3 (no Go): build here with scripts/gpu_build.sh and take
# devrun/ along, then run `bash scripts/ui_check.sh` from the repository root.
#   screen  lcttop --backend cuda --model gpt162m under a 160x48 pseudo-
#           terminal (devrun/ptyrun.py): after 40 s the filter shows the
#           adam_v tensors, the down arrow picks the second (wpe.v: the first,
#           wte.v, is one of the small tensors kept as they are), d changes
#           their class's distribution, c compares every codec on it, t opens
#           the teaching view and > > walk to block 2; the capture replays in
#           tmux with echo off (stty -echo: the program's terminal queries
#           would otherwise be answered onto the screen) (docs/ui.md).
#   cost    steps per second with the UI at its default refresh against
#           lcttop train --headless, same model, ROUNDS interleaved rounds:
#           the UI's rate from two snapshots exported (e) 30 s apart, the
#           headless run's from the arrival times of its step lines.
# Output goes to $OUT (default devrun/out); a short table is printed last.
set -u
root=$(pwd)
OUT=${OUT:-$root/devrun/out}
mkdir -p "$OUT"
# Unpacked every time: a warm machine keeps the last call's bin/.
[ -f devrun/bin.tgz ] && tar xzf devrun/bin.tgz
STAGES=${STAGES:-screen cost}
ROUNDS=${ROUNDS:-2}
MODEL=${MODEL:-gpt162m}
want() { case " $STAGES " in *" $1 "*) return 0 ;; esac; return 1; }
bin=$root/bin/lcttop
pty=$root/devrun/ptyrun.py

if want screen; then
	mkdir -p "$OUT/screen"
	python3 "$pty" "$OUT/screen/ui.cap" 75 160 48 "/@42,adam_v@43,\r@44,\x1b[B@45,d@46,c@52,t@60,>@64,>@67" -- \
		"$bin" --backend cuda --model "$MODEL" --export-dir "$OUT/screen" >"$OUT/screen/pty.log" 2>&1
	echo "screen: $(ls "$OUT/screen" | tr '\n' ' ')"
fi

if want cost; then
	for r in $(seq "$ROUNDS"); do
		d="$OUT/cost-ui-$r"
		mkdir -p "$d"
		python3 "$pty" "$d/ui.cap" 45 160 48 "e@12,e@42" -- "$bin" --backend cuda --model "$MODEL" --export-dir "$d" >/dev/null 2>&1
		"$bin" train --headless --backend cuda --model "$MODEL" --steps "${HEADLESS_STEPS:-200}" 2>&1 | python3 -c '
import sys, time, json
t = {}
for line in sys.stdin:
    p = line.split()
    if len(p) > 1 and p[0] == "step":
        t[int(p[1])] = time.time()
steps = sorted(t)
lo, hi = steps[len(steps) // 6], steps[-1]
print(json.dumps({"steps": hi - lo, "seconds": t[hi] - t[lo], "rate": (hi - lo) / (t[hi] - t[lo])}))
' >"$OUT/cost-headless-$r.json"
	done
	python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys, glob, os, datetime
out, rounds = sys.argv[1], int(sys.argv[2])
def when(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
rows = []
for r in range(1, rounds + 1):
    snaps = sorted(glob.glob(os.path.join(out, "cost-ui-%d" % r, "lcttop-step*[0-9].json")))
    if len(snaps) < 2:
        print("round %d: %d UI exports, want 2" % (r, len(snaps)))
        continue
    a, b = (json.load(open(p)) for p in (snaps[0], snaps[-1]))
    ui = (b["step"] - a["step"]) / (when(b["time"]) - when(a["time"]))
    h = json.load(open(os.path.join(out, "cost-headless-%d.json" % r)))
    rows.append((r, ui, h["rate"]))
    print("round %d: UI %.2f steps/s (steps %d..%d), headless %.2f steps/s (%d steps): UI/headless %.4f" % (r, ui, a["step"], b["step"], h["rate"], h["steps"], ui / h["rate"]))
if rows:
    ui = sum(x[1] for x in rows) / len(rows)
    hl = sum(x[2] for x in rows) / len(rows)
    print("mean: UI %.2f, headless %.2f steps/s: UI/headless %.4f" % (ui, hl, ui / hl))
PY
fi
