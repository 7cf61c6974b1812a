#!/usr/bin/env bash
# cpu_vs_torch.sh: the CPU trainer's step against PyTorch's on the same GPT
# (the tool TORCH_CPU, default ../shared/tools/torch_cpu.py beside the
# repository: BF16, AdamW, the same shapes), with the same threads, in
# interleaved rounds on one machine, so that other load falls on both alike.
# From the repository root:
#
#   go build -o lcttop ./cmd/lcttop && bash scripts/cpu_vs_torch.sh
#
# Each round runs, for each model: PyTorch, then lcttop train --headless
# (its summary's median step of the dense run and of the LCT run). A line per
# run: round, model, the 1-minute load average before it, the figures;
# then the medians over the rounds. ROUNDS (default 3), MODELS (tiny small),
# THREADS (2), PYTHON (/usr/bin/python3, the Debian python3-torch); BASE, a
# second lcttop (an earlier commit's), runs after BIN in each round too. On a
# machine that other jobs load, OMP_WAIT_POLICY=PASSIVE keeps PyTorch's
# threads from spinning while they wait for a core (they then take many
# times their time); the figures say which was set.
set -u
bin=${BIN:-./lcttop}
torch=${TORCH_CPU:-../shared/tools/torch_cpu.py}
python=${PYTHON:-/usr/bin/python3}
rounds=${ROUNDS:-3}
threads=${THREADS:-2}
models=${MODELS:-tiny small}
steps() { case $1 in tiny) echo 30 ;; *) echo 10 ;; esac; }
out=$(mktemp)
for r in $(seq "$rounds"); do
	for m in $models; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		t=$("$python" "$torch" "$m" "$(steps "$m")" bf16 "$threads" | sed -n 's/.*"median_step_ms": \([0-9.]*\).*/\1/p')
		echo "round $r $m torch load $load median_ms $t" | tee -a "$out"
		load=$(cut -d' ' -f1 /proc/loadavg)
		s=$(GOMAXPROCS=$threads "$bin" train --headless --backend cpu --model "$m" --steps "$(steps "$m")" --val-every 0 --check-every 0 --json | tail -1)
		shadow=$(echo "$s" | sed -n 's/.*"median_step_ms_shadow":\([0-9.]*\).*/\1/p')
		lct=$(echo "$s" | sed -n 's/.*"median_step_ms_lct":\([0-9.]*\).*/\1/p')
		peak=$(echo "$s" | sed -n 's/.*"peak_bytes_lct":\([0-9]*\),"peak_bytes_shadow":\([0-9]*\).*/\1 \2/p')
		echo "round $r $m lcttop load $load shadow_ms $shadow lct_ms $lct peak_lct_shadow $peak" | tee -a "$out"
		if [ -n "${BASE:-}" ]; then
			load=$(cut -d' ' -f1 /proc/loadavg)
			s=$(GOMAXPROCS=$threads "$BASE" train --headless --backend cpu --model "$m" --steps "$(steps "$m")" --val-every 0 --check-every 0 --json | tail -1)
			echo "round $r $m base load $load shadow_ms $(echo "$s" | sed -n 's/.*"median_step_ms_shadow":\([0-9.]*\).*/\1/p') lct_ms $(echo "$s" | sed -n 's/.*"median_step_ms_lct":\([0-9.]*\).*/\1/p')" | tee -a "$out"
		fi
	done
done
echo "== OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(unset)}, $threads threads"
echo "== medians over $rounds rounds (shadow and LCT against PyTorch; LCT against its shadow)"
for m in $models; do
	python3 - "$out" "$m" <<'PY'
import statistics, sys
path, model = sys.argv[1], sys.argv[2]
t, s, l, bs, bl = [], [], [], [], []
for line in open(path):
    f = line.split()
    if f[2] != model:
        continue
    if f[3] == "torch":
        t.append(float(f[7]))
    elif f[3] == "base":
        bs.append(float(f[7])); bl.append(float(f[9]))
    else:
        s.append(float(f[7])); l.append(float(f[9]))
mt, ms, ml = statistics.median(t), statistics.median(s), statistics.median(l)
print(f"{model}: torch {mt:.1f} ms, shadow {ms:.1f} ms ({ms/mt:.2f}x torch), LCT {ml:.1f} ms ({ml/ms:.2f}x its shadow); "
      f"torch {min(t):.1f}-{max(t):.1f}, shadow {min(s):.1f}-{max(s):.1f}, LCT {min(l):.1f}-{max(l):.1f}")
if bs:
    mbs, mbl = statistics.median(bs), statistics.median(bl)
    print(f"{model} base: shadow {mbs:.1f} ms ({mbs/mt:.2f}x torch), LCT {mbl:.1f} ms ({mbl/mbs:.2f}x its shadow)")
PY
done
rm -f "$out"
