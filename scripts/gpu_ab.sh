#!/usr/bin/env bash
# gpu_ab.sh: the LCT step of two builds side by side on a GPU machine, in
# interleaved rounds of one call: devrun/base/lcttop.gz (BASE=COMMIT bash
# scripts/gpu_build.sh builds it) against bin/lcttop. Each round runs
#   lcttop bench step --model MODEL --steps STEPS --check-every CHECK --val-every 0 --json
# with each build, then each build once with --codec-profile; a line per run
# gives the dense and LCT median steps, LCT ÷ dense, the encodes made again
# a step, the settles' host wait and the LCT peak. Logs go to $LOGS (default
# devrun/ab), packed into $ARCHIVE when it is set.
set -uo pipefail
root=$(pwd)
LOGS=${LOGS:-$root/devrun/ab}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-60}
CHECK=${CHECK:-30}
MODEL=${MODEL:-gpt162m}
mkdir -p "$LOGS"
: >"$LOGS/exits.txt"
# Unpacked every time: a warm machine keeps the last call's bin/ and base.
[ -f devrun/bin.tgz ] && tar xzf devrun/bin.tgz
gunzip -kf devrun/base/lcttop.gz || { echo "gpu_ab: no devrun/base/lcttop.gz (BASE=COMMIT bash scripts/gpu_build.sh)"; exit 1; }
chmod +x devrun/base/lcttop
report() { # report NAME LOG: one line from a bench step --json log
	python3 - "$1" "$2" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(path) if l.startswith("{")]
steps = [l for l in lines if "step" in l and not l.get("summary")]
summary = next((l for l in reversed(lines) if l.get("summary")), None)
if summary is None:
    print(f"{name}: no summary (see {path})")
    sys.exit(0)
dense, lct = summary.get("median_step_ms_shadow"), summary.get("median_step_ms_lct")
tail = steps[5:] or steps
again = sum(s.get("lct_encoded_again", 0) for s in tail) / max(len(tail), 1)
wait = sum(s.get("lct_settle_wait_ms", 0) for s in tail) / max(len(tail), 1)
codec = sum(s.get("lct_codec_device_ms", 0) for s in tail) / max(len(tail), 1)
ratio = f"{lct / dense:.4f}" if dense and lct else "-"
print(f"{name}: dense {dense} ms, LCT {lct} ms, LCT/dense {ratio}, encodes again {again:.2f}/step, "
      f"settle wait {wait:.2f} ms/step, codec device {codec:.2f} ms/step, peak {summary.get('peak_bytes_lct')}, "
      f"bit-identical {summary.get('all_bit_identical')}")
PY
}
run() { # run NAME BINARY ARGS...
	local name=$1 bin=$2
	shift 2
	"$bin" bench step --model "$MODEL" --val-every 0 --json "$@" >"$LOGS/$name.jsonl" 2>&1
	echo "$name: exit $?" >>"$LOGS/exits.txt"
	report "$name" "$LOGS/$name.jsonl" | tee -a "$LOGS/summary.txt"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$LOGS/summary.txt"
for r in $(seq "$ROUNDS"); do
	run "base-$r" devrun/base/lcttop --steps "$STEPS" --check-every "$CHECK"
	run "new-$r" bin/lcttop --steps "$STEPS" --check-every "$CHECK"
done
run base-profile devrun/base/lcttop --steps 20 --check-every 0 --codec-profile
run new-profile bin/lcttop --steps 20 --check-every 0 --codec-profile
[ -n "${ARCHIVE:-}" ] && tar czf "$ARCHIVE" -C "$LOGS" .
! grep -qv ": exit 0$" "$LOGS/exits.txt"
