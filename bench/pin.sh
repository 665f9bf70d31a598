#!/bin/sh
# Pins one rank of a launched job to its own core: rank r runs on core r mod ncores
# (taskset -c).  snrun and MPICH's mpiexec both set PMI_RANK.
ncores=$(nproc)
rank=${PMI_RANK:-${SOFTNIC_LOCAL_RANK:-0}}
exec taskset -c $((rank % ncores)) "$@"
