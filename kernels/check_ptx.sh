#!/usr/bin/env bash
# check_ptx.sh: regenerate the committed PTX of kernels/ with nvcc, by each
# //go:generate nvcc line of its Go files, and fail if any differs from what
# is committed (what CI runs). Without nvcc 11.8, the version that made the
# committed PTX, it says so and passes.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v nvcc >/dev/null 2>&1; then
	echo "check_ptx: nvcc not found; the PTX is not checked"
	exit 0
fi
version=$(nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
if [ "$version" != "11.8" ]; then
	echo "check_ptx: nvcc $version, the committed PTX is made by 11.8; the PTX is not checked"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp ./*.cu ./*.h "$tmp"/
status=0
found=0
while IFS= read -r cmd; do
	found=1
	ptx=$(sed -n 's|.* -o \([^ ]*\.ptx\).*|\1|p' <<<"$cmd")
	cu=${cmd##* }
	if [ -z "$ptx" ] || [ ! -f "$ptx" ]; then
		echo "check_ptx: '$cmd' names no committed .ptx (-o)" >&2
		status=1
		continue
	fi
	if ! (cd "$tmp" && eval "$cmd"); then
		echo "check_ptx: nvcc failed on $cu" >&2
		status=1
		continue
	fi
	if ! cmp -s "$tmp/$ptx" "$ptx"; then
		echo "check_ptx: kernels/$ptx is stale: run go generate ./kernels and commit it" >&2
		diff <(head -c 2000 "$ptx") <(head -c 2000 "$tmp/$ptx") | head -20 >&2 || true
		status=1
		continue
	fi
	echo "check_ptx: kernels/$ptx matches $cu"
done < <(sed -n 's|^//go:generate \(nvcc .*\)|\1|p' ./*.go)
if [ $found = 0 ]; then
	echo "check_ptx: no //go:generate nvcc line in kernels/" >&2
	exit 1
fi
exit $status
