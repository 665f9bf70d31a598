#!/usr/bin/env python3
"""Writes a manifest that re-runs the network-engine tests of LIST (c-tests/net.list) with
the engine's own transport (SOFTNIC_NET_TRANSPORT=sockets, fabric/src/sock.rs) instead of
libfabric: each test renamed sk_NAME.  Tests about libfabric providers (another provider
chosen with FI_PROVIDER, a provider refused) are left out: the transport replaces the
provider.  Usage: gen-sockets-list.py LIST > OUT"""
import sys

for line in open(sys.argv[1]):
    line = line.split("#")[0].rstrip()
    if " -- " not in line:
        continue
    head, cmd = line.split(" -- ", 1)
    name = head.split()[0]
    if "FI_PROVIDER" in cmd or "rxd" in name or "provider" in name:
        continue
    print(f"sk_{name}{head[len(name):]} -- export SOFTNIC_NET_TRANSPORT=sockets; {cmd}")
