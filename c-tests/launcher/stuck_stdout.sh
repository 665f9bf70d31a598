#!/usr/bin/env bash
# snrun --label with a stdout nobody reads for 6 s while the ranks write without end:
# snrun must still act on --timeout 2 (its stderr says so within 4.5 s), then end 124
# once the reader drains what it kept (at most its 1 MiB bound per stream).
# Usage: stuck_stdout.sh SNRUN BEHAVE
set -u
snrun=$1 prog=$2
tmp=$(mktemp -d /tmp/snrun-stuck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s%N)
{ "$snrun" --label --timeout 2 -n 2 "$prog" spew 2>"$tmp/err"; echo $? >"$tmp/rc"; } | { sleep 6; wc -c >"$tmp/bytes"; } &
pipeline=$!
seen=""
while [ -z "$seen" ]; do
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    grep -q 'timed out' "$tmp/err" 2>/dev/null && seen=$ms
    [ $ms -gt 15000 ] && break
    [ -z "$seen" ] && sleep 0.05
done
wait $pipeline
cat "$tmp/err"
echo "stuck_stdout: timeout acted on after ${seen:-never} ms; snrun exit $(cat "$tmp/rc"); reader got $(cat "$tmp/bytes") bytes"
[ -n "$seen" ] && [ "$seen" -le 4500 ] && [ "$(cat "$tmp/rc")" = 124 ]
