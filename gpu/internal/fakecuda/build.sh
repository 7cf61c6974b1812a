#!/usr/bin/env bash
# build.sh DIR: builds the stand-in driver (DIR/libcuda.so.1) and cuBLAS
# (DIR/libcublas.so.12) with the system C and C++ compilers. The driver
# links its own copy of the kernels' CPU emulation; hidden visibility, an
# export list and -Bsymbolic keep that copy's state apart from the one a
# Go test binary links through package kernels.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kernels=$(cd "$here/../../../kernels" && pwd)
out=${1:?usage: build.sh DIR}
mkdir -p "$out"
obj=$(mktemp -d)
trap 'rm -rf "$obj"' EXIT
cxx=(${CXX:-g++} -std=c++20 -O2 -fno-strict-aliasing -Wno-unused-function -fPIC -fvisibility=hidden -I "$kernels")
pids=()
for src in "$here/driver.cc" "$here/ptx.cc" "$kernels/emu.cc" "$kernels/emu_lct.cc" "$kernels/emu_gpt.cc"; do
  "${cxx[@]}" -c "$src" -o "$obj/$(basename "$src").o" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
"${cxx[@]}" -shared -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -Wl,--version-script="$here/exports.map" \
  -o "$out/libcuda.so.1" "$obj"/*.o
${CC:-gcc} -std=c11 -O2 -ffp-contract=off -fPIC -fvisibility=hidden -shared -Wl,-Bsymbolic \
  -Wl,-soname,libcublas.so.12 -o "$out/libcublas.so.12" "$here/cublas.c" -ldl -lpthread
