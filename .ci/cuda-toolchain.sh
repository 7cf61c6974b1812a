#!/usr/bin/env bash
# Installs nvcc 11.8 on a Debian 12 machine, the compiler that made the
# committed PTX: `go generate ./kernels ./kernels/gpt` regenerates it and CI
# checks it against its sources. Building and running lcttop needs none of
# this. The toolkit lives in Debian's non-free component, so this adds
# contrib/non-free through a private sources list built from the mirror and
# suite the machine already uses, leaving its own lists alone.
# Idempotent. Run as root; the first run takes minutes and about 3 GB.
set -euo pipefail

if command -v nvcc >/dev/null; then
  echo "cuda-toolchain: already installed ($(nvcc --version | tail -1))"
  exit 0
fi

sources=/etc/apt/sources.list.d/debian.sources
if [ ! -f "$sources" ]; then
  echo "cuda-toolchain: $sources is missing; this script expects Debian 12" >&2
  exit 2
fi
mirror=$(awk '/^URIs:/ {print $2; exit}' "$sources")
suite=$(awk '/^Suites:/ {print $2; exit}' "$sources")
if [ -z "$mirror" ] || [ -z "$suite" ]; then
  echo "cuda-toolchain: cannot read the mirror and suite from $sources" >&2
  exit 2
fi

state=/var/cache/lcttop-cuda-apt
mkdir -p "$state/lists/partial" "$state/archives/partial"
echo "deb $mirror $suite main contrib non-free non-free-firmware" >"$state/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$state/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$state/lists" -o "Dir::Cache::archives=$state/archives")

apt-get "${apt_opts[@]}" update -qq
DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends nvidia-cuda-toolkit >/dev/null
rm -f "$state"/archives/*.deb
echo "cuda-toolchain: installed $(nvcc --version | tail -1)"
