#!/usr/bin/env bash
# check_ptx.sh [FOLDER...]: regenerate each kernel folder's PTX with nvcc, by
# the //go:generate line of its Go file, and fail if it differs from the
# committed PTX. FOLDERs are relative to the repository root; with none it
# checks every kernel folder, kernels and kernels/gpt (what CI runs).
# Without nvcc 11.8, the version that made the committed PTX, it says so and passes.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
folders=("$@")
if [ ${#folders[@]} -eq 0 ]; then
	folders=(kernels kernels/gpt)
fi
if ! command -v nvcc >/dev/null 2>&1; then
	echo "check_ptx: nvcc not found; PTX of ${folders[*]} not checked"
	exit 0
fi
version=$(nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
if [ "$version" != "11.8" ]; then
	echo "check_ptx: nvcc $version, the committed PTX is made by 11.8; PTX of ${folders[*]} not checked"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# check DIR: regenerate DIR's PTX in a scratch folder and compare. It reports
# its own failures (set -e does not reach into a function called with ||).
check() {
	local dir=$1 gen cmd ptx cu out gofiles
	gofiles=("$dir"/*.go)
	gen=
	if [ ${#gofiles[@]} -gt 0 ]; then
		gen=$(grep -l '^//go:generate nvcc ' "${gofiles[@]}" | head -1 || true)
	fi
	if [ -z "$gen" ]; then
		echo "check_ptx: $dir: no Go file with a //go:generate nvcc line" >&2
		return 1
	fi
	# the same command as the go:generate line
	cmd=$(sed -n 's|^//go:generate ||p' "$gen")
	ptx=$(sed -n 's|.* -o \([^ ]*\.ptx\).*|\1|p' <<<"$cmd")
	cu=${cmd##* }
	if [ -z "$ptx" ] || [ ! -f "$dir/$ptx" ]; then
		echo "check_ptx: $gen: the go:generate line names no committed .ptx (-o) in $dir" >&2
		return 1
	fi
	out="$tmp/${dir//\//_}"
	mkdir -p "$out"
	cp "$dir"/*.cu "$dir"/*.h "$out"/
	if ! (cd "$out" && eval "$cmd"); then
		echo "check_ptx: $dir: nvcc failed on $cu" >&2
		return 1
	fi
	if ! cmp -s "$out/$ptx" "$dir/$ptx"; then
		echo "check_ptx: $dir/$ptx is stale: run go generate ./$dir and commit it" >&2
		diff <(head -c 2000 "$dir/$ptx") <(head -c 2000 "$out/$ptx") | head -20 >&2 || true
		return 1
	fi
	echo "check_ptx: $dir/$ptx matches $cu"
}

status=0
for dir in "${folders[@]}"; do
	check "${dir%/}" || status=1
done
exit $status
