#!/usr/bin/env bash
# A rank floods snrun with PMI queries and never reads the replies (behave flood 1):
# snrun must cut it off and end the job naming it, with its own peak memory (VmHWM,
# sampled while it runs) under LIMIT_MB.  Prints the peak.
# Usage: flood.sh LIMIT_MB SNRUN BEHAVE   (SNRUN_PMI_MODE is passed through)
set -u
limit=$1 snrun=$2 prog=$3
"$snrun" -n 3 "$prog" flood 1 &
job=$!
peak=0
while [ -e /proc/$job/status ]; do
    kb=$(awk '/^VmHWM:/ {print $2}' /proc/$job/status 2>/dev/null)
    [ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
    grep -q '^State:.*Z' /proc/$job/status 2>/dev/null && break
    sleep 0.02
done
wait $job
rc=$?
echo "flood: snrun exit $rc, peak RSS (VmHWM) $((peak / 1024)) MiB ($peak kB), limit $limit MiB"
[ $rc != 0 ] && [ $peak -gt 0 ] && [ $peak -le $((limit * 1024)) ]
