#!/usr/bin/env bash
# A process outside the job attacks snrun's PMI port while the job runs (see
# pmi_intrude.c); the job must still end with status 0.
# Usage: intrude.sh SNRUN RANKS PROG
set -u
snrun=$1 n=$2 prog=$3
dir=$(mktemp -d /tmp/snrun-intrude.XXXXXX)
trap 'rm -rf "$dir"' EXIT
SNRUN_PMI_MODE=port "$snrun" -n "$n" "$prog" rank "$dir" &
job=$!
env -u SOFTNIC_JOB_SECRET "$prog" outsider "$dir"
orc=$?
touch "$dir/done"
wait $job
rc=$?
echo "intrude: outsider exit $orc, job exit $rc"
[ $orc = 0 ] && [ $rc = 0 ]
