#!/usr/bin/env python3
"""Writes a manifest that re-runs the network-engine tests of LIST (c-tests/net.list) over
libfabric (SOFTNIC_NET_TRANSPORT=libfabric: its tcp;ofi_rxm provider and RMA) instead of
the engine's own transport, its default (fabric/src/sock.rs): each test renamed lf_NAME.
Tests that already choose a transport (those about libfabric providers) are left out:
they run as listed.  Usage: gen-libfabric-list.py LIST > OUT"""
import sys

for line in open(sys.argv[1]):
    line = line.split("#")[0].rstrip()
    if " -- " not in line:
        continue
    head, cmd = line.split(" -- ", 1)
    name = head.split()[0]
    if "SOFTNIC_NET_TRANSPORT" in cmd:
        continue
    print(f"lf_{name}{head[len(name):]} -- export SOFTNIC_NET_TRANSPORT=libfabric; {cmd}")
