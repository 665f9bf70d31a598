#!/usr/bin/env bash
# kill -9 of snrun: every process of the job (pmi_orphan.c's four ranks and one rank's
# child) must be gone within MAX_SECONDS.  Prints the time it took.
# Usage: kill9.sh MAX_SECONDS SNRUN PROG   (SNRUN_PMI_MODE is passed through)
set -u
max=$1 snrun=$2 prog=$3
SNTEST_PIDDIR=$(mktemp -d /tmp/snrun-kill9.XXXXXX); export SNTEST_PIDDIR
trap 'rm -rf "$SNTEST_PIDDIR"' EXIT
"$snrun" -n 4 "$prog" &
job=$!
for _ in $(seq 600); do
    [ "$(ls "$SNTEST_PIDDIR" | wc -l)" -ge 5 ] && break
    sleep 0.05
done
pids=$(ls "$SNTEST_PIDDIR")
[ "$(echo $pids | wc -w)" -ge 5 ] || { echo "kill9: only $(echo $pids | wc -w) of 5 pids recorded"; kill -KILL $job; exit 1; }
sleep 0.2 # let the barrier requests reach snrun
alive() { [ -e /proc/$1 ] && ! grep -q '^[^)]*) Z' /proc/$1/stat 2>/dev/null; }
start=$(date +%s%N)
kill -KILL $job
left=$pids
while [ -n "$left" ]; do
    now=$(( ($(date +%s%N) - start) / 1000000 ))
    [ $now -gt $((max * 1000)) ] && break
    next=""
    for p in $left; do alive "$p" && next="$next $p"; done
    left=$next
    [ -n "$left" ] && sleep 0.01
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait $job 2>/dev/null
if [ -n "$left" ]; then
    for p in $left; do echo "kill9: FAIL $(cat "$SNTEST_PIDDIR/$p") (pid $p) survived ${max} s"; kill -KILL "$p"; done
    exit 1
fi
for p in $pids; do echo "kill9: $(cat "$SNTEST_PIDDIR/$p") (pid $p) gone"; done
echo "kill9: every process of the job gone ${ms} ms after kill -9 of snrun (limit ${max} s)"
