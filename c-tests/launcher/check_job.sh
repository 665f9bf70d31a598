#!/usr/bin/env bash
# Runs a job and checks how it ended: exit status, elapsed time, and that no
# process it recorded (ranks and their children, see behave.c) survives.
# Usage: check_job.sh WANT_RC MAX_SECONDS [--signal SIG NPIDS] -- COMMAND...
#   --signal SIG NPIDS: once NPIDS pids are recorded, send SIG to COMMAND
#   (snrun) and time from then on.
set -u
want=$1 max=$2; shift 2
sig="" npids=0
if [ "${1:-}" = --signal ]; then sig=$2 npids=$3; shift 3; fi
[ "${1:-}" = -- ] && shift
SNTEST_PIDDIR=$(mktemp -d /tmp/snrun-test.XXXXXX); export SNTEST_PIDDIR
trap 'rm -rf "$SNTEST_PIDDIR"' EXIT

start=$(date +%s%N)
"$@" &
job=$!
if [ -n "$sig" ]; then
    for _ in $(seq 200); do
        [ "$(ls "$SNTEST_PIDDIR" | wc -l)" -ge "$npids" ] && break
        sleep 0.05
    done
    [ "$(ls "$SNTEST_PIDDIR" | wc -l)" -ge "$npids" ] || { echo "check_job: only $(ls "$SNTEST_PIDDIR" | wc -l) of $npids pids recorded"; kill -KILL $job; exit 1; }
    start=$(date +%s%N)
    kill -"$sig" $job
fi
wait $job
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "check_job: exit $rc after ${ms} ms (want $want within ${max} s)"
ok=1
[ "$rc" = "$want" ] || { echo "check_job: FAIL exit status $rc, expected $want"; ok=0; }
[ "$ms" -le $((max * 1000)) ] || { echo "check_job: FAIL took ${ms} ms, limit ${max} s"; ok=0; }

# Everything recorded must be gone (a zombie waiting for a reaper counts as gone).
alive() { [ -e /proc/$1 ] && ! grep -q '^[^)]*) Z' /proc/$1/stat 2>/dev/null; }
for p in $(ls "$SNTEST_PIDDIR"); do
    for _ in $(seq 20); do alive "$p" || break; sleep 0.05; done
    if alive "$p"; then echo "check_job: FAIL pid $p survived the job"; kill -KILL "$p"; ok=0; fi
done
echo "check_job: $(ls "$SNTEST_PIDDIR" | wc -l) recorded pids checked"
[ $ok = 1 ] && echo "check_job: ok"
[ $ok = 1 ]
