#!/usr/bin/env bash
# ranks.sh N COMMAND...: starts N processes of COMMAND on this host with the environment torchrun
# gives its workers (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT on a
# free port), for a PyTorch whose torchrun does not start (Debian's 1.13 under Python 3.11, whose
# launcher cannot parse its own default --redirects). Waits for all; if one fails the others are
# stopped and its exit status is returned.
#
#   bash scripts/ranks.sh 2 /usr/bin/python3 scripts/pytorch_reference.py --device cpu --ddp ...
set -u
n=${1:?usage: ranks.sh N COMMAND...}
shift
case $n in '' | *[!0-9]* | 0) echo "ranks.sh: N must be a whole number of 1 or more, not \"$n\"" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "ranks.sh: no command to start" >&2; exit 2; }
port=${MASTER_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
pids=()
# Stopped (a timeout, ^C): the ranks stop too.
trap 'kill "${pids[@]}" 2>/dev/null; exit 143' TERM INT
for ((r = 0; r < n; r++)); do
	RANK=$r LOCAL_RANK=$r GROUP_RANK=0 WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$@" &
	pids+=($!)
done
rc=0
for ((left = n; left > 0; left--)); do
	wait -n
	s=$?
	if [ $s -ne 0 ] && [ $rc -eq 0 ]; then
		rc=$s
		for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	fi
done
exit $rc
