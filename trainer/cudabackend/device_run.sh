#!/usr/bin/env bash
# One run of the CUDA trainer backend's checks and measurements on a GPU
# machine, from the repository root, with binaries built beforehand on a
# machine with Go (the GPU machine has none):
#
#   bash scripts/gpu_build.sh      (bin/cudabackend.test, bin/lcttop, packed in devrun/)
#
# Stages, each under its own time limit, most important first: the backend's
# tests against the CPU ops on the GPU; 200 steps of the 162M model; the
# PyTorch reference on the same configuration; the batch-1 sequence sweep
# under a budget; compute-sanitizer over the kernel tests. Full logs go to
# $OUT (default ./device-out); a short table is printed last.
set -uo pipefail
OUT=${OUT:-device-out}
mkdir -p "$OUT"
STEPS=${STEPS:-200}
BUDGET_GIB=${BUDGET_GIB:-8}
exec > >(tee "$OUT/run.log") 2>&1

stage() { echo; echo "=== $1 ($(date +%T))"; }

stage "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv
if [ -z "${LCTTOP_CUBLAS:-}" ]; then
  lib=$(ldconfig -p 2>/dev/null | awk '/libcublas\.so\.[0-9]+ /{print $NF; exit}')
  [ -n "$lib" ] || lib=$(find /usr/local /opt /usr/lib -name 'libcublas.so.[0-9]*' 2>/dev/null | sort -V | tail -1)
  if [ -n "$lib" ]; then export LCTTOP_CUBLAS="$lib"; fi
fi
echo "cuBLAS: ${LCTTOP_CUBLAS:-(search path)}"

STAGES=${STAGES:-tests dense torch lctsmall lct162 sweep sanitizer}
want() { case " $STAGES " in *" $1 "*) return 0;; esac; return 1; }

if want tests; then
  stage "tests on the GPU"
  timeout 120 bin/cudabackend.test -test.v -test.count=1 -test.timeout 115s >"$OUT/tests.log" 2>&1
  echo "tests rc=$?"
  grep -E '^(--- |ok|PASS|FAIL)|identical to the CPU|loss .* vs|no CUDA|less;' "$OUT/tests.log" | head -90
fi

if want dense; then
  stage "162M, $STEPS steps (dense run)"
  timeout 80 bin/lcttop train --headless --backend cuda --shadow-only --model gpt162m --steps "$STEPS" --val-every 50 --val-batches 4 --json >"$OUT/train162m.jsonl"
  echo "train rc=$?"
  tail -1 "$OUT/train162m.jsonl"
fi

if want torch; then
  stage "PyTorch reference, 162M"
  PYTHONUNBUFFERED=1 timeout 80 python3 scripts/pytorch_reference.py --model gpt162m --steps 30 --warmup 5 >"$OUT/torch.jsonl" 2>"$OUT/torch.err"
  echo "torch rc=$?"; tail -1 "$OUT/torch.jsonl"; tail -3 "$OUT/torch.err"
fi

if want lctsmall; then
  stage "medium model, 200 steps, LCT run beside the shadow"
  timeout 90 bin/lcttop train --headless --backend cuda --model medium --steps 200 --check-every 50 --val-every 50 --json >"$OUT/lct_medium.jsonl"
  echo "lct medium rc=$?"; tail -1 "$OUT/lct_medium.jsonl"
fi

if want lct162; then
  stage "162M, LCT run (GPU codec) beside the shadow"
  timeout 240 bin/lcttop train --headless --backend cuda --model gpt162m --steps "${LCT_STEPS:-200}" --check-every 50 --val-every 0 --timing-warmup 3 --json |
    python3 -c 'import json,sys; [print(json.dumps({k: v for k, v in json.loads(l).items() if k != "tensors"}), flush=True) for l in sys.stdin]' >"$OUT/lct162m.jsonl"  # per-tensor figures dropped: ~2 MB a step
  echo "lct 162M rc=$?"; tail -1 "$OUT/lct162m.jsonl"
fi

if want sweep; then
  stage "sweeps at batch 1 within $BUDGET_GIB GiB"
  timeout 100 bin/lcttop train --headless --backend cuda --shadow-only --model gpt162m --sweep --mem-budget "$BUDGET_GIB" --sweep-min 2048 --sweep-max 65536 --sweep-quantum 2048 --json >"$OUT/sweep.jsonl"
  echo "sweep dense rc=$?"
  timeout 170 bin/lcttop train --headless --backend cuda --model gpt162m --sweep --mem-budget "$BUDGET_GIB" --sweep-min 2048 --sweep-max 65536 --sweep-quantum 2048 --json >>"$OUT/sweep.jsonl"
  echo "sweep lct rc=$?"; cat "$OUT/sweep.jsonl"
fi

if want sanitizer; then
  stage "compute-sanitizer memcheck over the kernel tests"
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 bin/cudabackend.test -test.count=1 \
    -test.run 'TestAddGELU|TestEmbedding|TestLayerNorm|TestCrossEntropy|TestOptimizers|TestLinearMatchesCPU|TestAttentionMatchesCPU' \
    >"$OUT/sanitizer.log" 2>&1
  echo "sanitizer rc=$?"; tail -5 "$OUT/sanitizer.log"
fi

stage "summary"
python3 - "$OUT" <<'EOF'
import json, sys, os
out = sys.argv[1]
def lines(name):
    try:
        return [json.loads(l) for l in open(os.path.join(out, name)) if l.startswith("{")]
    except FileNotFoundError:
        return []
tr = [l for l in lines("train162m.jsonl") if l.get("summary")]
to = lines("torch.jsonl")
sw = [l for l in lines("sweep.jsonl") if "sweep_longest" in l]
for name in ("lct_medium.jsonl", "lct162m.jsonl"):
    s = [l for l in lines(name) if l.get("summary")]
    if s:
        s = s[-1]
        print(f"{name}: {s['steps']} steps, all bit-identical {s['all_bit_identical']} (weights checked at {s['weights_checked']}), "
              f"peak {s['peak_bytes_shadow']/2**20:.0f} MiB (shadow) vs {s['peak_bytes_lct']/2**20:.0f} MiB (LCT): "
              f"{100*(1-s['peak_bytes_lct']/s['peak_bytes_shadow']):.1f}% less; step {s['median_step_ms_shadow']:.1f} ms vs {s['median_step_ms_lct']:.1f} ms (host codec)")
if tr:
    s = tr[-1]
    print(f"ours   162M: median step {s['median_step_ms_shadow']:.1f} ms, peak {s['peak_bytes_shadow']/2**20:.0f} MiB, "
          f"loss {s['first_loss']:.3f} -> {s['last_loss']:.3f}, val {s['first_val_loss']:.3f} -> {s['last_val_loss']:.3f}")
if to:
    t = to[-1]
    print(f"torch  162M: median step {t['median_step_ms']:.1f} ms, peak {t['peak_allocated_bytes']/2**20:.0f} MiB "
          f"(reserved {t['peak_reserved_bytes']/2**20:.0f}), {t['pytorch']}")
if tr and to:
    print(f"ours/torch step time: {tr[-1]['median_step_ms_shadow']/to[-1]['median_step_ms']:.2f}")
for l in sw:
    print(f"sweep: longest {'LCT' if l['lct'] else 'dense'} sequence at batch 1 within {l['budget_bytes']/2**30:.0f} GiB: {l['sweep_longest']}")
EOF
