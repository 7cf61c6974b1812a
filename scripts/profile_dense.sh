#!/usr/bin/env bash
# One device call: where the dense CUDA step's time goes, before and after a
# change, beside PyTorch. From the repository root, with binaries built
# beforehand on a machine with Go (BIN, default bin/c):
#
#   $BIN/cudabackend.test   go test -c ./trainer/cudabackend/
#   $BIN/lcttop             go build ./cmd/lcttop   (the change)
#   $BIN/old-lcttop         the same from the commit before it (optional)
#
# Stages: the backend's tests on the GPU; for each binary the per-op profile
# of STEPS dense gpt162m steps (LCTTOP_PROFILE_OPS, table on stderr) and an
# unprofiled run for the median step; the PyTorch reference; compute-sanitizer
# over the kernel tests. Logs go to $OUT.
set -uo pipefail
OUT=${OUT:-device-out}
BIN=${BIN:-bin/c}
STEPS=${STEPS:-20}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
stage() { echo; echo "=== $1 ($(date +%T))"; }

stage machine
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm,clocks.mem,power.draw --format=csv
if [ -z "${LCTTOP_CUBLAS:-}" ]; then
  lib=$(ldconfig -p 2>/dev/null | awk '/libcublas\.so\.[0-9]+ /{print $NF; exit}')
  [ -n "$lib" ] || lib=$(find /usr/local /opt /usr/lib -name 'libcublas.so.[0-9]*' 2>/dev/null | sort -V | tail -1)
  if [ -n "$lib" ]; then export LCTTOP_CUBLAS="$lib"; fi
fi
echo "cuBLAS: ${LCTTOP_CUBLAS:-(search path)}"

train() { # binary, extra env..., writes $OUT/<name>.jsonl and .err
  local name=$1 bin=$2 steps=$3
  shift 3
  env "$@" timeout 70 "$bin" train --headless --backend cuda --shadow-only --model gpt162m --steps "$steps" \
    --val-every 0 --timing-warmup 3 --json >"$OUT/$name.jsonl" 2>"$OUT/$name.err"
  echo "$name rc=$?"
  tail -1 "$OUT/$name.jsonl" | cut -c1-400
}

for b in lcttop old-lcttop; do
  [ -x "$BIN/$b" ] || continue
  stage "$b: per-op profile, $STEPS steps"
  train "$b.profile" "$BIN/$b" "$STEPS" LCTTOP_PROFILE_OPS=2
  cat "$OUT/$b.profile.err"
  stage "$b: plain, 30 steps"
  train "$b.plain" "$BIN/$b" 30
done

stage "PyTorch reference"
PYTHONUNBUFFERED=1 timeout 70 python3 scripts/pytorch_reference.py --model gpt162m --steps 30 --warmup 5 >"$OUT/torch.jsonl" 2>"$OUT/torch.err"
echo "torch rc=$?"; tail -1 "$OUT/torch.jsonl"; tail -3 "$OUT/torch.err"

stage "tests on the GPU"
(cd trainer/cudabackend && timeout "${TEST_TIMEOUT:-100}" "../../$BIN/cudabackend.test" -test.v -test.count=1 \
  -test.timeout "$((${TEST_TIMEOUT:-100} - 5))s" >"$OUT/tests.log" 2>&1)
echo "tests rc=$?"
grep -E '^(--- |ok|PASS|FAIL|panic)|Attention\.(Forward|Backward)' "$OUT/tests.log" | head -80

if command -v compute-sanitizer >/dev/null; then
  stage "compute-sanitizer memcheck over the attention and element-wise tests"
  (cd trainer/cudabackend && timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 "../../$BIN/cudabackend.test" \
    -test.count=1 -test.run 'TestAttention|TestElementwise|TestLayerNorm|TestLinear' >"$OUT/sanitizer.log" 2>&1)
  echo "sanitizer rc=$?"; tail -4 "$OUT/sanitizer.log"
fi

stage summary
python3 - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
def last(name, key):
    try:
        rows = [json.loads(l) for l in open(os.path.join(out, name)) if l.startswith("{")]
    except FileNotFoundError:
        return None
    rows = [r for r in rows if key in r]
    return rows[-1] if rows else None
torch = last("torch.jsonl", "median_step_ms")
for b in ("old-lcttop", "lcttop"):
    for kind in ("plain", "profile"):
        s = last(f"{b}.{kind}.jsonl", "median_step_ms_shadow")
        if s:
            ratio = f", {s['median_step_ms_shadow'] / torch['median_step_ms']:.2f}x PyTorch" if torch else ""
            print(f"{b:10s} {kind:7s}: median step {s['median_step_ms_shadow']:.1f} ms{ratio}, loss {s['first_loss']:.4f} -> {s['last_loss']:.4f}")
if torch:
    print(f"PyTorch: median step {torch['median_step_ms']:.1f} ms ({torch.get('pytorch', '?')})")
EOF
