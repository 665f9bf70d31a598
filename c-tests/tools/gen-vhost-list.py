#!/usr/bin/env python3
"""Writes a manifest that re-runs every multi-rank uGNI and DMAPP test spread over 2 and 3
virtual hosts (c-tests/tools/vhrun), for `make check-full`: ranks on different hosts can
reach each other only through the network engine.  `$SNRUN -n N [-N K]` becomes
`vhrun H N` (the hosts replace snrun's virtual nodes), `mpiexec -n N` becomes `vhrun 3 N`.
Tests that need two separate jobs are left out (two jobs on separate virtual hosts are
separate machines: a uGNI domain is claimed per machine) and those counting what only
shared memory does, and expectations about the node
layout (`expect=`) are dropped where the hosts replace snrun's nodes or mpiexec's one node.  Usage: gen-vhost-list.py LIST... > OUT"""
import re
import sys

# dmapp_straddle_pieces counts pins, which only shared memory makes.  The checker's race
# tests expect a race between two ranks' operations on a third's memory, which it finds
# only where it sees both (one machine's shared tables; c-tests/net.list checks what it
# finds across machines); check_smsg_abort expects snrun's exit status for a rank's abort
# (hydra reports its own).  mem_window_unparked asks for registration windows with
# parking disabled, which the library may take only when the caller is the process's
# only thread: a network job always has the engine's progress thread, so it rightly
# rebinds just the page asked for there.  xjob_dmapp_control expects the launcher to end
# the job when its intruder ranks fail: snrun does, hydra leaves the owner ranks to wait
# out their 60 s deadline, and the job's status is then whichever of their endings hydra
# reports first (their own failure, or its kill).
SKIP = {"data_routing_jobs", "dmapp_straddle_pieces", "check_race_n3", "check_race_getput_n3", "check_race_mpiexec",
        "dmapp_check_race_n3", "dmapp_check_race_getput_n3", "check_smsg_abort",
        "mem_window_unparked_n2", "xjob_dmapp_control"}
for path in sys.argv[1:]:
    for line in open(path):
        line = line.split("#")[0].rstrip()
        if " -- " not in line:
            continue
        head, cmd = line.split(" -- ", 1)
        name = head.split()[0]
        if name in SKIP or "twojobs" in cmd:
            continue
        opts = re.sub(r"need=\S+", "", head[len(name):]).strip()
        if re.search(r"\$SNRUN -n \d+ -N \d+|mpiexec -n", cmd):
            opts = re.sub(r"expect='[^']*'", "", opts).strip()
        opts += " needok='c-tests/tools/net-ok vhost'"
        snrun = re.search(r"\$SNRUN -n (\d+)( -N \d+)?", cmd)
        mpi = re.search(r"mpiexec -n (\d+)", cmd)
        if snrun:
            n = int(snrun.group(1))
            for hosts in (2, 3):
                if hosts <= n:
                    print(f"vh{hosts}_{name} {opts} -- {cmd.replace(snrun.group(0), f'c-tests/tools/vhrun {hosts} {n}')}")
        elif mpi:
            n = int(mpi.group(1))
            print(f"vh3m_{name} {opts} -- {cmd.replace(mpi.group(0), f'c-tests/tools/vhrun 3 {n}')}")
