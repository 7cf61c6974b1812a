#!/usr/bin/env bash
# cover.sh [PROFILE]: the statement coverage of package gpu and its driver
# binding (go test -coverpkg=./gpu/...) when the GPU suites run through the
# real binding on the stand-in driver (seed 1), per file of the binding.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$root"
lib=$(mktemp -d)
trap 'rm -rf "$lib"' EXIT
profile=${1:-$lib/cover.out}
bash gpu/internal/fakecuda/build.sh "$lib"
unset LCTTOP_EMULATE
LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LCTTOP_CUBLAS=$lib/libcublas.so.12 LCTTOP_REQUIRE_GPU=1 \
  LCTTOP_FAKECUDA_SEED=1 go test -count=1 -coverpkg=./gpu/... -coverprofile="$profile" \
  ./gpu/... ./trainer/cudabackend
# A block appears once per test package: covered if any covered it.
awk 'NR > 1 { split($1, a, ":"); if (!($1 in n)) { n[$1] = $2; f[$1] = a[1] } if ($3 > 0) hit[$1] = 1 }
  END { for (b in n) { tot[f[b]] += n[b]; if (b in hit) cov[f[b]] += n[b] }
        for (x in tot) printf "%-40s %5.1f%% of %d statements\n", x, 100 * cov[x] / tot[x], tot[x] }' "$profile" |
  sort | grep -E 'gpu/(cuda/cuda|cublas/cublas|driver_cuda|compute|side|status_async)\.go'
