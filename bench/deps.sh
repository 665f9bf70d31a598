#!/bin/bash
# Installs the peers `make bench` compares against, from Debian's packages, when
# missing: MPICH (mpicc, mpiexec), UCX (ucx_perftest, headers), libfabric (headers,
# fi_info) and matplotlib for the plot.  `apt-get update` runs once, only when
# something is missing.  A failed install is reported, not fatal: the runner then
# records the affected benchmarks as skipped with the reason.
# Prints the python interpreter that has matplotlib (or python3) on the last line.
SUDO=${SUDO-}
[ "$(id -u)" = 0 ] || SUDO=${SUDO:-sudo}
need=()
command -v mpicc >/dev/null 2>&1 && command -v mpiexec >/dev/null 2>&1 || need+=(mpich libmpich-dev)
command -v ucx_perftest >/dev/null 2>&1 || need+=(ucx-utils)
[ -f /usr/include/ucp/api/ucp.h ] || need+=(libucx-dev)
[ -f /usr/include/rdma/fabric.h ] || need+=(libfabric-dev)
command -v fi_info >/dev/null 2>&1 || need+=(libfabric-bin)
py=""
for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || need+=(python3-matplotlib)
if [ ${#need[@]} -gt 0 ]; then
    echo "bench: installing ${need[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null; } >&2; then
        echo "bench: apt-get install failed; benchmarks needing ${need[*]} will be skipped" >&2
    fi
    if [ -z "$py" ]; then
        for p in /usr/bin/python3 python3; do
            if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
        done
        if [ -z "$py" ] && python3 -m pip install -q matplotlib >&2; then py=python3; fi
    fi
fi
echo "${py:-python3}"
