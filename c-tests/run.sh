#!/usr/bin/env bash
# Runs the C tests listed in one or more manifests and ends with "N passed, N failed".
# Usage: run.sh MANIFEST...   (TEST_FILTER=substring runs only matching names)
#
# Manifest lines:   NAME [key=value ...] -- COMMAND...
#   exit=N        expected exit status (default 0)
#   timeout=S     seconds before the test is killed and failed (default 120)
#   need=PROG     skip (with the reason printed) when PROG is not on PATH
#   needok=CMD    skip (printing CMD's last output line as the reason) when CMD fails
#   expect=RE     the combined output must contain a line matching RE (grep -E)
#   reject=RE     the combined output must not contain a line matching RE
#   lines=RE:N    exactly N output lines match RE
# COMMAND is run by bash from the repository root with $SNRUN (build/bin/snrun),
# $T (build/tests) and $BUILD set; the environment has build/bin on PATH.
set -u
[ $# -ge 1 ] || { echo "usage: run.sh MANIFEST..."; exit 2; }
filter=${TEST_FILTER:-}
BUILD=${BUILD:-$(pwd)/build}
export BUILD SNRUN="$BUILD/bin/snrun" T="$BUILD/tests" PATH="$BUILD/bin:$PATH"
logdir="$BUILD/test-logs"; mkdir -p "$logdir"
pass=0; fail=0; skip=0; failed=()

for manifest in "$@"; do
while IFS= read -r line || [ -n "$line" ]; do
    line=${line%%#*}
    [[ "$line" =~ [^[:space:]] ]] || continue
    head=${line%% -- *}; cmd=${line#* -- }
    read -r name opts <<<"$head"
    [ -n "$filter" ] && [[ "$name" != *$filter* ]] && continue
    want=0; tmo=120; need=""; needok=""; expect=""; reject=""; lines=""
    # options are simple key=value words; values may be single-quoted
    eval "set -- $opts"
    for kv in "$@"; do
        case "$kv" in
            exit=*) want=${kv#exit=} ;; timeout=*) tmo=${kv#timeout=} ;;
            need=*) need=${kv#need=} ;; needok=*) needok=${kv#needok=} ;; expect=*) expect=${kv#expect=} ;;
            reject=*) reject=${kv#reject=} ;; lines=*) lines=${kv#lines=} ;;
            *) echo "run.sh: $name: unknown option $kv"; exit 2 ;;
        esac
    done
    # A lines= without its count would take the rest of the pattern as the count.
    if [ -n "$lines" ] && ! [[ "${lines##*:}" =~ ^[0-9]+$ ]]; then
        echo "run.sh: $name: lines='$lines' does not end in :COUNT"; exit 2
    fi
    if [ -n "$need" ] && ! command -v "$need" >/dev/null 2>&1; then
        echo "SKIP $name: $need not installed"; skip=$((skip+1)); continue
    fi
    if [ -n "$needok" ] && ! why_not=$(bash -c "$needok" 2>&1 </dev/null); then
        echo "SKIP $name: ${why_not##*$'\n'}"; skip=$((skip+1)); continue
    fi
    log="$logdir/$name.log"
    start=$(date +%s%N)
    timeout -k 5 "$tmo" bash -c "$cmd" </dev/null >"$log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 )); secs="$((ms / 1000)).$((ms % 1000 / 100))"
    why=""
    if [ "$rc" = 124 ] && [ "$want" != 124 ]; then why="timed out after ${tmo}s"
    elif [ "$rc" != "$want" ]; then why="exit $rc, expected $want"
    elif [ -n "$expect" ] && ! grep -Eq -- "$expect" "$log"; then why="no line matches /$expect/"
    elif [ -n "$reject" ] && grep -Eq -- "$reject" "$log"; then why="a line matches /$reject/"
    elif [ -n "$lines" ]; then
        re=${lines%:*}; n=${lines##*:}; got=$(grep -Ec -- "$re" "$log")
        [ "$got" = "$n" ] || why="$got lines match /$re/, expected $n"
    fi
    if [ -z "$why" ]; then
        echo "PASS $name (${secs}s)"; pass=$((pass+1))
    else
        echo "FAIL $name: $why (${secs}s; log $log)"; tail -n 15 "$log" | sed 's/^/    | /'
        fail=$((fail+1)); failed+=("$name")
    fi
done < "$manifest"
done

[ "$fail" -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
