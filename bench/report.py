#!/usr/bin/env python3
"""Turns bench/results/latest.json (+ latest-notes.json) into latest.md and latest.png.

    bench/report.py [results-dir]

The table gives every measured value, then ours divided by each peer at the
same size, then the issue's goals marked met or missed with what the floor
(plain shared memory, no library; for the network goals the sleeping TCP floor,
floor-tcp-sleep) allows.  The plot needs matplotlib; without
it latest.png is not written and latest.md says so.
"""
import json
import os
import sys

OURS = ("softnic-ugni", "softnic-dmapp", "softnic-utofu", "softnic-sisci", "softnic-portals", "softnic-ugni-net",
        "softnic-ugni-ofi", "softnic-portals-net")

# (our series, [peer series]) compared at equal sizes.  Latency: ours / peer, < 1 is
# faster than the peer.  Bandwidth and rate: ours / peer, > 1 is faster.
PINGPONG_PEERS = [("mpich", "pingpong"), ("ucx", "put_lat"), ("ucx", "tag_lat"), ("libfabric-shm", "pingpong"),
                  ("floor", "pingpong")]
COMPARE = [
    (("softnic-ugni", "fma_put_pingpong"), PINGPONG_PEERS),
    (("softnic-ugni", "put_event_pingpong"), PINGPONG_PEERS),
    (("softnic-ugni", "smsg_pingpong"), [("mpich", "pingpong"), ("ucx", "tag_lat"), ("libfabric-shm", "pingpong"),
                                         ("floor", "pingpong")]),
    (("softnic-ugni", "amo_fadd_lat"), [("mpich", "fadd_lat"), ("mpich", "put_flush"), ("floor", "amo_lat")]),
    (("softnic-dmapp", "put_lat"), [("mpich", "put_flush"), ("floor", "put_lat")]),
    (("softnic-dmapp", "get_lat"), [("mpich", "get_flush"), ("floor", "put_lat")]),
    (("softnic-dmapp", "put_pingpong"), PINGPONG_PEERS),
    (("softnic-dmapp", "afadd_lat"), [("mpich", "fadd_lat"), ("mpich", "put_flush"), ("floor", "amo_lat")]),
    (("softnic-ugni", "rdma_put_bw"), [("ucx", "put_bw"), ("mpich", "put_bw"), ("libfabric-shm", "write_bw"),
                                       ("floor", "memcpy_bw")]),
    (("softnic-ugni", "rdma_get_bw"), [("ucx", "get_bw"), ("mpich", "put_bw"), ("floor", "memcpy_bw")]),
    (("softnic-dmapp", "put_nbi_bw"), [("ucx", "put_bw"), ("mpich", "put_bw"), ("libfabric-shm", "write_bw"),
                                       ("floor", "memcpy_bw")]),
    (("softnic-ugni", "put_msgrate"), [("ucx", "put_msgrate")]),
    (("softnic-utofu", "put_pingpong"), PINGPONG_PEERS),
    (("softnic-utofu", "armw_fadd_lat"), [("mpich", "fadd_lat"), ("floor", "amo_lat")]),
    (("softnic-utofu", "put_bw"), [("ucx", "put_bw"), ("mpich", "put_bw"), ("libfabric-shm", "write_bw"),
                                   ("floor", "memcpy_bw")]),
    (("softnic-sisci", "pio_pingpong"), PINGPONG_PEERS),
    (("softnic-portals", "put_pingpong"), PINGPONG_PEERS),
    (("softnic-portals", "getput_lat"), [("mpich", "fadd_lat"), ("floor", "amo_lat")]),
    (("softnic-sisci", "dma_bw"), [("ucx", "put_bw"), ("mpich", "put_bw"), ("libfabric-shm", "write_bw"),
                                   ("floor", "memcpy_bw")]),
    (("softnic-sisci", "intr_lat"), [("mpich", "pingpong")]),
    (("softnic-ugni-net", "fma_put_pingpong"), [("libfabric-tcp", "fi_pingpong"), ("ucx-tcp", "put_lat"),
                                                ("floor-tcp-sleep", "tcp_pingpong")]),
    (("softnic-ugni-net", "put_event_pingpong"), [("libfabric-tcp", "fi_pingpong"), ("ucx-tcp", "put_lat"),
                                                  ("floor-tcp-sleep", "tcp_pingpong")]),
    (("softnic-ugni-net", "rdma_put_bw"), [("ucx-tcp", "put_bw"), ("libfabric-tcp", "write_bw"),
                                           ("floor-tcp-sleep", "tcp_bw")]),
    # The network engine over libfabric (SOFTNIC_NET_TRANSPORT=libfabric), beside the same
    # rows on its own transport, the default.
    (("softnic-ugni-ofi", "fma_put_pingpong"), [("softnic-ugni-net", "fma_put_pingpong"), ("floor-tcp-sleep", "tcp_pingpong")]),
    (("softnic-ugni-ofi", "put_event_pingpong"), [("softnic-ugni-net", "put_event_pingpong"), ("libfabric-tcp", "fi_pingpong")]),
    (("softnic-ugni-ofi", "amo_fadd_lat"), [("softnic-ugni-net", "amo_fadd_lat")]),
    (("softnic-ugni-ofi", "rdma_put_bw"), [("softnic-ugni-net", "rdma_put_bw"), ("floor-tcp-sleep", "tcp_bw")]),
    # Issue 20: register + deregister per buffer, beside what pinning the same pages costs
    # the kernel (the floor of a NIC's registration) and beside an ordinary 8 B message
    # (SMSG half round trip, what a zero-copy transfer is weighed against): a peer with a
    # third element is taken at that size for every size.
    (("softnic-ugni", "reg_fresh"), [("floor", "pin_unpin"), ("softnic-ugni", "smsg_pingpong", 8)]),
    (("softnic-ugni", "reg_fresh_mean"), [("floor", "pin_unpin"), ("softnic-ugni", "smsg_pingpong", 8)]),
    (("softnic-ugni", "reg_fresh_threaded"), [("floor", "pin_unpin"), ("softnic-ugni", "smsg_pingpong", 8)]),
    (("softnic-ugni", "reg_same"), [("floor", "pin_unpin"), ("softnic-ugni", "smsg_pingpong", 8)]),
]

# (text, ours, peer, size, op, target, floor series)
GOALS = [
    ("uGNI FMA put ping-pong 8 B <= 1.0 x MPICH ping-pong 8 B", ("softnic-ugni", "fma_put_pingpong"), ("mpich", "pingpong"),
     8, "<=", 1.0, ("floor", "pingpong")),
    ("SMSG ping-pong 8 B <= 1.5 x MPICH ping-pong 8 B", ("softnic-ugni", "smsg_pingpong"), ("mpich", "pingpong"),
     8, "<=", 1.5, ("floor", "pingpong")),
    ("uGNI AMO fetch-add <= 1.0 x MPICH put+flush 8 B", ("softnic-ugni", "amo_fadd_lat"), ("mpich", "put_flush"),
     8, "<=", 1.0, ("floor", "amo_lat")),
    ("uGNI RDMA put 1 MiB >= 0.8 x UCX put bandwidth", ("softnic-ugni", "rdma_put_bw"), ("ucx", "put_bw"),
     1048576, ">=", 0.8, ("floor", "memcpy_bw")),
    ("DMAPP blocking put 8 B <= 1.0 x MPICH put+flush 8 B", ("softnic-dmapp", "put_lat"), ("mpich", "put_flush"),
     8, "<=", 1.0, ("floor", "put_lat")),
]

# Issue 10: uTofu, beside the same peers.
UTOFU_GOALS = [
    ("uTofu put ping-pong 8 B <= 1.0 x UCX put_lat 8 B", ("softnic-utofu", "put_pingpong"), ("ucx", "put_lat"),
     8, "<=", 1.0, ("floor", "pingpong")),
    ("uTofu ARMW fetch-add <= 1.0 x MPICH fetch-and-op", ("softnic-utofu", "armw_fadd_lat"), ("mpich", "fadd_lat"),
     8, "<=", 1.0, ("floor", "amo_lat")),
    ("uTofu put 1 MiB >= 0.9 x UCX put bandwidth", ("softnic-utofu", "put_bw"), ("ucx", "put_bw"),
     1048576, ">=", 0.9, ("floor", "memcpy_bw")),
]

# Issue 13: SISCI, beside the same peers.
SISCI_GOALS = [
    ("SISCI PIO ping-pong 8 B <= 1.5 x the shared-memory floor ping-pong 8 B", ("softnic-sisci", "pio_pingpong"),
     ("floor", "pingpong"), 8, "<=", 1.5, ("floor", "pingpong")),
    ("SISCI DMA 1 MiB >= 0.9 x UCX put bandwidth", ("softnic-sisci", "dma_bw"), ("ucx", "put_bw"),
     1048576, ">=", 0.9, ("floor", "memcpy_bw")),
]

# Issue 12: Portals (put ping-pong with events waited in PtlEQWait).
PORTALS_GOALS = [
    ("Portals put ping-pong 8 B <= 1.0 x MPICH ping-pong 8 B", ("softnic-portals", "put_pingpong"), ("mpich", "pingpong"),
     8, "<=", 1.0, ("floor", "pingpong")),
    ("Portals put 1 MiB >= 0.9 x UCX put bandwidth", ("softnic-portals", "put_bw"), ("ucx", "put_bw"),
     1048576, ">=", 0.9, ("floor", "memcpy_bw")),
]

# Issue 20: registering a fresh buffer per message.  peer None: the target is an absolute
# value in the metric's unit (the cost of pinning and translating on the real NIC is in
# that range); the floor column is mlock + munlock of the same pages.
REG_GOALS = [
    ("uGNI register + deregister, 100 B on a fresh page (median) <= 10 us", ("softnic-ugni", "reg_fresh"), None,
     100, "<=", 10.0, ("floor", "pin_unpin")),
    ("the same with a second thread alive (median) <= 10 us", ("softnic-ugni", "reg_fresh_threaded"), None,
     100, "<=", 10.0, ("floor", "pin_unpin")),
]
REG_FLOOR = ("mlock + munlock of the same pages", "mlock + munlock of the same pages")

# Issue 11: the network engine (two virtual hosts, loopback), beside the peers over tcp.
# The peers busy-poll; the engine's progress thread must sleep, so the floor shown is
# the sleeping TCP floor (floor_bench tcp_pingpong / tcp_bw), not shared memory.
NET_GOALS = [
    ("uGNI FMA put ping-pong 8 B over the network <= 1.3 x fi_pingpong 8 B", ("softnic-ugni-net", "fma_put_pingpong"),
     ("libfabric-tcp", "fi_pingpong"), 8, "<=", 1.3, ("floor-tcp-sleep", "tcp_pingpong")),
    ("uGNI RDMA put 1 MiB over the network >= 0.9 x the best peer", ("softnic-ugni-net", "rdma_put_bw"),
     [("ucx-tcp", "put_bw"), ("libfabric-tcp", "write_bw")], 1048576, ">=", 0.9, ("floor-tcp-sleep", "tcp_bw")),
]
NET_FLOOR = ("sleeping TCP floor (best ratio a non-polling design allows)", "the sleeping TCP floor (floor-tcp-sleep)")

# Issue 25: the cost of one operation, beside UCX and the floor.
PERF25_GOALS = [
    ("uGNI FMA put ping-pong 8 B <= 1.0 x UCX put_lat 8 B", ("softnic-ugni", "fma_put_pingpong"), ("ucx", "put_lat"),
     8, "<=", 1.0, ("floor", "pingpong")),
    ("Portals put ping-pong 8 B <= 1.5 x UCX put_lat 8 B", ("softnic-portals", "put_pingpong"), ("ucx", "put_lat"),
     8, "<=", 1.5, ("floor", "pingpong")),
    ("DMAPP fetch-add <= 10 x the floor's atomic", ("softnic-dmapp", "afadd_lat"), ("floor", "amo_lat"),
     8, "<=", 10.0, ("floor", "amo_lat")),
    ("uGNI fetch-add with its CQ event <= 15 x the floor's atomic", ("softnic-ugni", "amo_fadd_lat"), ("floor", "amo_lat"),
     8, "<=", 15.0, ("floor", "amo_lat")),
    ("uTofu ARMW fetch-add <= 10 x the floor's atomic", ("softnic-utofu", "armw_fadd_lat"), ("floor", "amo_lat"),
     8, "<=", 10.0, ("floor", "amo_lat")),
    ("DMAPP blocking put 8 B <= 4 x the floor's store", ("softnic-dmapp", "put_lat"), ("floor", "put_lat"),
     8, "<=", 4.0, ("floor", "put_lat")),
    ("DMAPP put_nbi 8 B rate >= 1.0 x UCX put_msgrate", ("softnic-dmapp", "put_nbi_msgrate"), ("ucx", "put_msgrate"),
     8, ">=", 1.0, None),
    ("uGNI put rate, a CQ event per put >= 0.5 x UCX put_msgrate", ("softnic-ugni", "put_msgrate"), ("ucx", "put_msgrate"),
     8, ">=", 0.5, None),
] + [("%s put %s >= 0.9 x UCX put_bw" % (name, "4 KiB" if size == 4096 else "16 KiB"), ours, ("ucx", "put_bw"), size, ">=", 0.9,
      ("floor", "memcpy_bw"))
     for size in (4096, 16384)
     for name, ours in (("uGNI RDMA", ("softnic-ugni", "rdma_put_bw")), ("DMAPP put_nbi", ("softnic-dmapp", "put_nbi_bw")),
                        ("uTofu", ("softnic-utofu", "put_bw")), ("SISCI DMA", ("softnic-sisci", "dma_bw")),
                        ("Portals", ("softnic-portals", "put_bw")))]
PERF25_NET_GOALS = [
    ("uGNI FMA put ping-pong 8 B over the network <= 1.3 x the sleeping TCP floor", ("softnic-ugni-net", "fma_put_pingpong"),
     ("floor-tcp-sleep", "tcp_pingpong"), 8, "<=", 1.3, ("floor-tcp-sleep", "tcp_pingpong")),
    ("uGNI put-with-event ping-pong 8 B over the network <= 1.5 x fi_pingpong", ("softnic-ugni-net", "put_event_pingpong"),
     ("libfabric-tcp", "fi_pingpong"), 8, "<=", 1.5, ("floor-tcp-sleep", "tcp_pingpong")),
    ("uGNI RDMA put 1 MiB over the network >= 0.9 x the sleeping TCP floor", ("softnic-ugni-net", "rdma_put_bw"),
     ("floor-tcp-sleep", "tcp_bw"), 1048576, ">=", 0.9, ("floor-tcp-sleep", "tcp_bw")),
]

# Issue 25: where the time of one 8 B operation goes, per API.  Each step is a measured
# call (op_cost benchmarks and the latency rows) or the difference between two: (API,
# step, [(sign, library, benchmark)], how).  Values in ns; a message rate enters as its
# time per message.
BREAKDOWN = [
    ("uGNI", "the program fills the descriptor (memset of its 184 bytes, then the fields a put reads)",
     [(1, "softnic-ugni", "cost_fill")], "cost_fill"),
    ("uGNI", "+ GNI_PostFma rejected (EP lookup, descriptor checks, the error return)",
     [(1, "softnic-ugni", "cost_rejected"), (-1, "softnic-ugni", "cost_fill")], "cost_rejected - cost_fill"),
    ("uGNI", "+ the put itself (SILENT; through the endpoint's pin)",
     [(1, "softnic-ugni", "cost_put_silent"), (-1, "softnic-ugni", "cost_rejected")], "cost_put_silent - cost_rejected"),
    ("uGNI", "+ its CQ event (token, CQ push, GNI_CqGetEvent, GNI_GetCompleted)",
     [(1, "softnic-ugni", "cost_put_event"), (-1, "softnic-ugni", "cost_put_silent")], "cost_put_event - cost_put_silent"),
    ("uGNI", "= one put with its event", [(1, "softnic-ugni", "cost_put_event")], "cost_put_event"),
    ("uGNI", "one put in a window of 64, each with its event", [(1, "softnic-ugni", "put_msgrate")], "1 / put_msgrate"),
    ("uGNI", "one SILENT put in a window of 64, one event per window", [(1, "softnic-ugni", "put_msgrate_silent")],
     "1 / put_msgrate_silent"),
    ("uGNI", "fetch-add, SILENT (descriptor fill and GNI_PostFma)", [(1, "softnic-ugni", "cost_fadd_silent")],
     "cost_fadd_silent"),
    ("uGNI", "+ its CQ event (token, CQ push, GNI_CqGetEvent, GNI_GetCompleted)",
     [(1, "softnic-ugni", "amo_fadd_lat"), (-1, "softnic-ugni", "cost_fadd_silent")], "amo_fadd_lat - cost_fadd_silent"),
    ("uGNI", "= fetch-add with its event", [(1, "softnic-ugni", "amo_fadd_lat")], "amo_fadd_lat"),
    ("uGNI", "GNI_CqGetEvent of an empty CQ", [(1, "softnic-ugni", "cost_cq_empty")], "cost_cq_empty"),
    ("uGNI", "one put with its event, traced (SOFTNIC_TRACE: the post's span)", [(1, "softnic-ugni-traced", "cost_put_event")],
     "cost_put_event, traced"),
    ("uGNI", "what tracing adds to it", [(1, "softnic-ugni-traced", "cost_put_event"), (-1, "softnic-ugni", "cost_put_event")],
     "traced - untraced"),
    ("uGNI", "what the checker adds to it (SOFTNIC_CHECK=1: the source watched till GNI_GetCompleted)",
     [(1, "softnic-ugni-checked", "cost_put_event"), (-1, "softnic-ugni", "cost_put_event")], "checked - unchecked"),
    ("DMAPP", "dmapp_put rejected (job lookup, checks, the error return)", [(1, "softnic-dmapp", "cost_rejected")],
     "cost_rejected"),
    ("DMAPP", "+ the blocking put itself", [(1, "softnic-dmapp", "put_lat"), (-1, "softnic-dmapp", "cost_rejected")],
     "put_lat - cost_rejected"),
    ("DMAPP", "= one blocking put", [(1, "softnic-dmapp", "put_lat")], "put_lat"),
    ("DMAPP", "one put_nbi in a window of 256 and a gsync", [(1, "softnic-dmapp", "put_nbi_msgrate")], "1 / put_nbi_msgrate"),
    ("DMAPP", "fetch-add", [(1, "softnic-dmapp", "afadd_lat")], "afadd_lat"),
    ("Portals", "PtlPutRegion rejected (invalid MD handle)", [(1, "softnic-portals", "cost_rejected")], "cost_rejected"),
    ("Portals", "+ the put, matched at the target, its SEND_END waited for (PtlEQWait)",
     [(1, "softnic-portals", "cost_put_event"), (-1, "softnic-portals", "cost_rejected")], "cost_put_event - cost_rejected"),
    ("Portals", "= one put with its SEND_END", [(1, "softnic-portals", "cost_put_event")], "cost_put_event"),
    ("Portals", "+ an ack, waited for", [(1, "softnic-portals", "cost_put_ack"), (-1, "softnic-portals", "cost_put_event")],
     "cost_put_ack - cost_put_event"),
    ("Portals", "one get with its REPLY_END", [(1, "softnic-portals", "get_lat")], "get_lat"),
    ("Portals", "PtlEQGet of an empty queue", [(1, "softnic-portals", "cost_eq_empty")], "cost_eq_empty"),
    ("uTofu", "ARMW fetch-add, its TCQ and MRQ notices polled", [(1, "softnic-utofu", "armw_fadd_lat")], "armw_fadd_lat"),
    ("UCX", "one put in a window, completed in bulk", [(1, "ucx", "put_msgrate")], "1 / put_msgrate"),
    ("floor", "a store to shared memory", [(1, "floor", "put_lat")], "put_lat"),
    ("floor", "an atomic fetch-add on shared memory", [(1, "floor", "amo_lat")], "amo_lat"),
    # The same two operations in every API, row by row (SISCI and Portals 3.2 have no
    # fetch-add; the floor's atomic is the row above).
    ("uGNI", "8 B put ping-pong, half round trip (PUT_W_SYNCFLAG, its event reaped)",
     [(1, "softnic-ugni", "fma_put_pingpong")], "fma_put_pingpong"),
    ("uGNI", "the same, each descriptor filled before the wait (only the flag value set after it)",
     [(1, "softnic-ugni", "fma_put_pingpong_prefilled")], "fma_put_pingpong_prefilled"),
    ("DMAPP", "8 B put ping-pong, half round trip (blocking dmapp_put)", [(1, "softnic-dmapp", "put_pingpong")],
     "put_pingpong"),
    ("uTofu", "8 B put ping-pong, half round trip (TCQ drained)", [(1, "softnic-utofu", "put_pingpong")], "put_pingpong"),
    ("SISCI", "8 B PIO ping-pong, half round trip", [(1, "softnic-sisci", "pio_pingpong")], "pio_pingpong"),
    ("Portals", "8 B put ping-pong, half round trip (PUT_END waited for)", [(1, "softnic-portals", "put_pingpong")],
     "put_pingpong"),
    ("UCX", "8 B put ping-pong, half round trip", [(1, "ucx", "put_lat")], "put_lat"),
    ("floor", "8 B store ping-pong, half round trip", [(1, "floor", "pingpong")], "pingpong"),
    ("uGNI", "fetch-add (its CQ event reaped)", [(1, "softnic-ugni", "amo_fadd_lat")], "amo_fadd_lat"),
    ("uGNI", "8 B FMA get, its CQ event reaped", [(1, "softnic-ugni", "fma_get_lat")], "fma_get_lat"),
    ("DMAPP", "8 B blocking get", [(1, "softnic-dmapp", "get_lat")], "get_lat"),
    ("uTofu", "8 B get, its LCL_GET notice polled", [(1, "softnic-utofu", "get_lat")], "get_lat"),
    ("uTofu", "8 B put, its TCQ entry polled", [(1, "softnic-utofu", "put_lat")], "put_lat"),
    ("uTofu", "the same into a 1 MiB region straddling an aligned GiB (two backings: pinned by blocks)",
     [(1, "softnic-utofu", "put_straddle_lat")], "put_straddle_lat"),
    ("Portals", "8 B get, its REPLY_END waited for", [(1, "softnic-portals", "get_lat")], "get_lat"),
    ("DMAPP", "fetch-add (blocking dmapp_afadd_qw)", [(1, "softnic-dmapp", "afadd_lat")], "afadd_lat"),
    ("uTofu", "fetch-add (ARMW, notices polled)", [(1, "softnic-utofu", "armw_fadd_lat")], "armw_fadd_lat"),
    ("Portals", "8 B swap (PtlGetPut, Portals 3.2's only atomic), its REPLY_END waited for",
     [(1, "softnic-portals", "getput_lat")], "getput_lat"),
    ("MPICH", "fetch-and-op, flushed", [(1, "mpich", "fadd_lat")], "fadd_lat"),
]


def breakdown(series, metric):
    out = ["Each step is a measured call of the `op_cost` benchmarks or a latency row, or the difference "
           "between two (column *from*); the benchmark's own work (filling a descriptor, the loop) is "
           "inside every row (uGNI's descriptor fill is also measured alone: its first row).  Differences "
           "of medians taken in different runs: read them to ±5 ns.", "",
           "| API | step | ns | from |", "|---|---|---:|---|"]
    for api, step, terms, how in BREAKDOWN:
        total, ok = 0.0, True
        for sign, lib, bench in terms:
            v = series.get((lib, bench), {}).get(8)
            if v is None:
                ok = False
                break
            ns = 1e3 / v if metric.get((lib, bench)) == "Mmsgps" else v * 1e3
            total += sign * ns
        out.append("| %s | %s | %s | %s |" % (api, step, ("%.1f" % total) if ok else "n/a", how))
    return out + [""]


def budgets(series, metric):
    """Issue 25: what two uGNI goals leave for GNI_PostFma itself, in one run's numbers,
    once the program's own descriptor fill and (where it is on the path) the event are
    paid.  A goal whose budget is below what the post costs cannot be met by the library
    alone; one whose budget is negative cannot be met at all while the benchmark fills
    its descriptors this way."""
    def ns(lib, bench, size=8):
        v = series.get((lib, bench), {}).get(size)
        if v is None:
            return None
        return 1e3 / v if metric.get((lib, bench)) == "Mmsgps" else v * 1e3

    u = "softnic-ugni"
    fill, silent, event = ns(u, "cost_fill"), ns(u, "cost_put_silent"), ns(u, "cost_put_event")
    fadd_silent, fadd = ns(u, "cost_fadd_silent"), ns(u, "amo_fadd_lat")
    floor_amo, ucx_rate = ns("floor", "amo_lat"), ns("ucx", "put_msgrate")

    def sub(a, *b):
        return None if a is None or any(x is None for x in b) else a - sum(b)

    # Not the ping-pong: its steps overlap (the event is reaped while the flag travels,
    # part of the fill with the post), so its costs do not add up this way; the rows
    # "8 B put ping-pong" and "the same, each descriptor filled before the wait" above
    # show what the fill adds there.
    rows = [
        ("fetch-add with its CQ event <= 15 x the floor's atomic",
         None if floor_amo is None else 15 * floor_amo, fill, sub(fadd, fadd_silent), sub(fadd_silent, fill)),
        ("put rate, a CQ event per put >= 0.5 x UCX put_msgrate (time per put)",
         None if ucx_rate is None else 2 * ucx_rate, fill, sub(event, silent), sub(silent, fill)),
    ]
    out = ["What the uGNI fetch-add and message-rate goals of issue 25 leave for `GNI_PostFma` itself once the benchmark's "
           "descriptor fill and the event (its push, `GNI_CqGetEvent`, `GNI_GetCompleted`) are paid; "
           "*post* is a whole SILENT post (put: `cost_put_silent - cost_fill`; fetch-add: "
           "`cost_fadd_silent - cost_fill`).  Same run, ns.", "",
           "| goal | allowed | descriptor fill | event | left for the post | post |", "|---|---:|---:|---:|---:|---:|"]
    f = lambda x: "n/a" if x is None else "%.1f" % x
    for goal, allowed, fl, ev, post in rows:
        out.append("| %s | %s | %s | %s | %s | %s |" % (goal, f(allowed), f(fl), f(ev), f(sub(allowed, fl, ev)), f(post)))
    return out + [""]


UNIT = {"half_rtt_us": "µs (half RTT)", "us": "µs", "GBps": "GB/s", "Mmsgps": "M msg/s"}


def size_label(s):
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return "%d MiB" % (s >> 20)
    if s >= 1024 and s % 1024 == 0:
        return "%d KiB" % (s >> 10)
    return "%d B" % s


def fmt(v):
    if v is None:
        return ""
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    if v >= 1:
        return "%.2f" % v
    return "%.3f" % v


def load(outdir):
    with open(os.path.join(outdir, "latest.json")) as f:
        doc = json.load(f)
    notes = {}
    p = os.path.join(outdir, "latest-notes.json")
    if os.path.exists(p):
        with open(p) as f:
            notes = json.load(f)
    series, metric = {}, {}
    for r in doc["results"]:
        key = (r["library"], r["benchmark"])
        series.setdefault(key, {})[r["size"]] = r["value"]
        metric[key] = r["metric"]
    return doc, notes, series, metric


def lower_is_better(m):
    return m in ("half_rtt_us", "us")


def value_table(series, metric, metrics):
    keys = [k for k in series if metric[k] in metrics]
    keys.sort(key=lambda k: (k[0] not in OURS, k[0] == "floor", k[0], k[1]))
    if not keys:
        return ["(no results)", ""]
    sizes = sorted({s for k in keys for s in series[k]})
    out = ["| library | benchmark | unit | " + " | ".join(size_label(s) for s in sizes) + " |",
           "|---|---|---|" + "---:|" * len(sizes)]
    for k in keys:
        name = "**%s**" % k[0] if k[0] in OURS else k[0]
        out.append("| %s | %s | %s | " % (name, k[1], UNIT[metric[k]]) +
                   " | ".join(fmt(series[k].get(s)) for s in sizes) + " |")
    return out + [""]


def ratio_tables(series, metric):
    out = []
    for group, metrics, note in (("Latency", ("half_rtt_us", "us"), "ours ÷ peer; below 1 means softnic is faster"),
                                 ("Bandwidth and message rate", ("GBps", "Mmsgps"),
                                  "ours ÷ peer; above 1 means softnic is faster")):
        rows = []
        for ours, peers in COMPARE:
            if ours not in series or metric[ours] not in metrics:
                continue
            for p in peers:
                if p[:2] not in series:
                    continue
                if len(p) == 3:
                    at = series[p[:2]].get(p[2])
                    common = {s: series[ours][s] / at for s in series[ours] if at}
                    name = "%s %s ÷ %s %s %s" % (ours[0], ours[1], p[0], p[1], size_label(p[2]))
                else:
                    common = {s: series[ours][s] / series[p][s] for s in series[ours] if s in series[p] and series[p][s] > 0}
                    name = "%s %s ÷ %s %s" % (ours[0], ours[1], p[0], p[1])
                if common:
                    rows.append((name, common))
        if not rows:
            continue
        sizes = sorted({s for _, c in rows for s in c})
        out += ["### %s ratios (%s)" % (group, note), "",
                "| comparison | " + " | ".join(size_label(s) for s in sizes) + " |",
                "|---|" + "---:|" * len(sizes)]
        for name, c in rows:
            out.append("| %s | " % name + " | ".join(("%.2f" % c[s]) if s in c else "" for s in sizes) + " |")
        out.append("")
    return out


def goal_values(series, ours, peer, size, op):
    """(ours, the peer's value, the peer's series) of one goal; the value is None where
    missing, and 1.0 for an absolute target (peer None: the ratio is our value)."""
    a = series.get(ours, {}).get(size)
    if peer is None:
        return a, 1.0, None
    if isinstance(peer, list):
        # The best of several peers: the lowest latency, the highest bandwidth.
        have = [(series[p][size], p) for p in peer if size in series.get(p, {})]
        b, peer = (min(have) if op == "<=" else max(have)) if have else (None, peer[0])
        return a, b, peer
    return a, series.get(peer, {}).get(size), peer


def pass_series(notes):
    """Each pass's own series ({(library, benchmark): {size: value}}), from the per-pass
    values run.py keeps when it runs the list more than once."""
    n = notes.get("passes", 1)
    out = [{} for _ in range(n)]
    for k, vals in (notes.get("per_pass") or {}).items():
        lib, bench, size, _metric = k.split("|")
        for i, v in enumerate(vals[:n]):
            if v is not None:
                out[i].setdefault((lib, bench), {})[int(size)] = v
    return out


def goals_by_pass(passes, tables):
    """Every goal's ratio in each pass, ours and the peer's taken from the same pass: the
    spread a noisy machine gives (a goal met in the median may be missed in a pass)."""
    n = len(passes)
    out = ["| goal | ratio in pass %s | target | met in |" % " / ".join(str(i + 1) for i in range(n)),
           "|---|---|---:|---:|"]
    every = total = 0
    for table in tables:
        for text, ours, peer, size, op, target, _floor in table:
            ratios, met = [], 0
            for series in passes:
                a, b, _ = goal_values(series, ours, peer, size, op)
                if a is None or not b:
                    ratios.append("-")
                    continue
                r = a / b
                ratios.append(fmt(r) if peer is None else "%.2f" % r)
                met += r <= target if op == "<=" else r >= target
            total += 1
            every += met == n
            out.append("| %s | %s | %s %.1f | %d of %d |" % (text, " / ".join(ratios), op, target, met, n))
    out += ["", "Met in every pass: %d of %d goals." % (every, total), ""]
    return out


def goals(series, metric, table=None, floor_names=("floor (best ratio the floor allows)", "the floor")):
    """floor_names: (column header, name in the Missed lines) of the table's floor series."""
    out = ["| goal | ours | peer | ratio | target | status | %s |" % floor_names[0],
           "|---|---:|---:|---:|---:|---|---|"]
    missed = []
    for text, ours, peer, size, op, target, floor in (GOALS if table is None else table):
        a, b, peer = goal_values(series, ours, peer, size, op)
        f = series.get(floor, {}).get(size) if floor else None
        unit = UNIT.get(metric.get(ours) or metric.get(peer) or "us", "")
        if a is None or b is None:
            why = "no result for %s %s" % (ours if a is None else peer)
            out.append("| %s | %s | %s | | %s %.1f | n/a (%s) | |" % (text, fmt(a), fmt(b), op, target, why))
            missed.append((text, "not measured: %s" % why))
            continue
        ratio = a / b
        ok = ratio <= target if op == "<=" else ratio >= target
        if peer is None:
            fl = "%s %s" % (fmt(f), unit) if f is not None else "n/a"
            out.append("| %s | %s %s | (absolute) | | %s %.1f %s | %s | %s |" % (
                text, fmt(a), unit, op, target, unit, "**met**" if ok else "**missed**", fl))
            if not ok:
                missed.append((text, "ours %s %s, target %s %.1f %s; %s is %s" % (fmt(a), unit, op, target, unit, floor_names[1], fl)))
            continue
        fl = "%s %s (%.2f x peer)" % (fmt(f), unit, f / b) if f is not None and b > 0 else "n/a"
        out.append("| %s | %s %s | %s %s | %.2f | %s %.1f | %s | %s |" % (
            text, fmt(a), unit, fmt(b), unit, ratio, op, target, "**met**" if ok else "**missed**", fl))
        if not ok:
            missed.append((text, "ours %s %s vs %s %s (ratio %.2f, target %s %.1f); %s is %s" % (
                fmt(a), unit, fmt(b), unit, ratio, op, target, floor_names[1], fl)))
    out.append("")
    if missed:
        out.append("Missed:")
        out.append("")
        out += ["- %s: %s." % m for m in missed]
        out.append("")
    return out


def plot(outdir, series, metric):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: latest.png not written"
    fig, axes = plt.subplots(1, 2, figsize=(15, 8.2))
    colors = {"softnic-ugni": "tab:red", "softnic-dmapp": "tab:orange", "mpich": "tab:blue", "ucx": "tab:green",
              "libfabric-shm": "tab:purple", "floor": "black", "softnic-ugni-net": "tab:brown", "softnic-ugni-ofi": "sienna",
              "libfabric-tcp": "tab:pink", "ucx-tcp": "tab:olive", "floor-tcp-sleep": "dimgray"}
    markers = "os^vD<>xP*"
    panels = [(axes[0], ("half_rtt_us", "us"), "Latency (µs, lower is better)"),
              (axes[1], ("GBps",), "Bandwidth (GB/s = 1e9 B/s, higher is better)")]
    for ax, metrics, title in panels:
        keys = sorted((k for k in series if metric[k] in metrics),
                      key=lambda k: (k[0] not in OURS, k[0] == "floor", k[0], k[1]))
        per_lib = {}
        for k in keys:
            i = per_lib.setdefault(k[0], 0)
            per_lib[k[0]] += 1
            xs = sorted(series[k])
            if len(xs) < 2 or k[1].startswith("reg_") or k[1] == "pin_unpin":
                continue  # registration costs are not a latency curve
            ys = [series[k][x] for x in xs]
            style = "-" if k[0] in OURS else ":" if k[0].startswith("floor") else "--"
            ax.plot(xs, ys, style, marker=markers[i % len(markers)], color=colors.get(k[0], "gray"),
                    lw=2.2 if k[0] in OURS else 1.4, ms=5, label="%s %s%s" % (k[0], k[1], " (half RTT)" if metric[k] == "half_rtt_us" else ""))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted({x for k in keys for x in series[k]})
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(t).replace(" ", "") for t in ticks], rotation=45, fontsize=8)
        ax.set_xlabel("message size")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    fig.suptitle("softnic vs MPICH, UCX, libfabric shm and the shared-memory floor (same run, 2 cores, pinned)")
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "latest.png"), dpi=80)
    plt.close(fig)
    return None


def write(outdir):
    doc, notes, series, metric = load(outdir)
    plot_msg = plot(outdir, series, metric)
    md = ["# softnic benchmarks: %s" % doc["date"], "",
          "Machine: %s." % doc["machine"], "",
          "Generated by `make bench` (bench/run.py from bench/benchmarks.json, then bench/report.py). "
          "Two processes pinned to cores 0 and 1 (taskset); each value is the median over %s passes of the "
          "benchmark list of the median of %s repetitions (BENCH_SCALE %s); ping-pongs give half the round trip, blocking one-sided operations the time per "
          "call, bandwidth 1e9 bytes/s with 64 operations outstanding (fewer above 4 MiB), message rate "
          "1e6 messages/s. Raw numbers: latest.json. The machine is shared and small: repeat runs before "
          "trusting a difference under ~20%%." % (notes.get("passes", 1), notes.get("reps", "?"), notes.get("scale", "?")), ""]
    v = notes.get("versions", {})
    if v:
        md += ["Peers: " + "; ".join("%s: %s" % kv for kv in sorted(v.items())) + ".", ""]
    sp = notes.get("spells")
    if sp is not None:
        ev = sp.get("events", [])
        waited = [e for e in ev if e.get("waited_s", 0) >= 1]
        reruns = [e for e in ev if e.get("rerun")]
        best = sp.get("best_probe_ns")
        factor = sp.get("factor", 2.0)
        late = [e for e in ev if e.get("waited_s", 0) >= sp.get("wait_s", 30)]
        md += ["Slow spells (bench/run.py): the floor's 8 B ping-pong, probed before and after every entry (best "
               "%s ns), read over %sx the best so far %s times; %d entries waited for it to come back (%.0f s in all), "
               "%d were run again after a slow probe, %d started after waiting the full %s s." % (
                   "%.1f" % best if best else "n/a", factor, sp.get("slow_probes", "?"),
                   len(waited), sum(e.get("waited_s", 0) for e in waited), len(reruns), len(late), sp.get("wait_s", "?")), ""]
    lanes = notes.get("ucx_lanes")
    if lanes:
        md += ["UCX transports (UCX_TLS=sm,self; lanes UCX chose, from its info log): " +
               "; ".join("%s: %s" % (k, ", ".join(x)) for k, x in sorted(lanes.items())) + ".", ""]
    md += ["## Goals (issue 5)", ""] + goals(series, metric)
    md += ["## Goals (issue 10: uTofu)", ""] + goals(series, metric, UTOFU_GOALS)
    md += ["## Goals (issue 13: SISCI)", ""] + goals(series, metric, SISCI_GOALS)
    md += ["## Goals (issue 11: network engine, two virtual hosts over loopback)", ""] + goals(series, metric, NET_GOALS, NET_FLOOR)
    md += ["## Goals (issue 12: Portals)", ""] + goals(series, metric, PORTALS_GOALS)
    md += ["## Goals (issue 25: the cost of one operation)", ""] + goals(series, metric, PERF25_GOALS)
    md += ["## Goals (issue 25: the network engine, two virtual hosts)", ""] + goals(series, metric, PERF25_NET_GOALS, NET_FLOOR)
    md += ["## Where the time of one 8 B operation goes (issue 25)", ""] + breakdown(series, metric)
    md += ["## What the uGNI goals leave for the post (issue 25)", ""] + budgets(series, metric)
    passes = pass_series(notes)
    if len(passes) > 1:
        md += ["## Goals pass by pass (the spread of %d passes; the tables above use the median)" % len(passes), ""]
        md += goals_by_pass(passes, [GOALS, UTOFU_GOALS, SISCI_GOALS, NET_GOALS, PORTALS_GOALS, PERF25_GOALS,
                                     PERF25_NET_GOALS, REG_GOALS])
    md += ["## Goals (issue 20: a fresh registration per message)", ""] + goals(series, metric, REG_GOALS, REG_FLOOR)
    md += ["Registration (softnic-ugni reg_*, ugni_bench mem_register): GNI_MemRegister + GNI_MemDeregister, one "
           "registration live at a time.  reg_fresh: of a buffer on pages never registered before (median = steady "
           "state, where the pages lie in a window the library made shareable already); reg_fresh_first: the first "
           "cycle in each 256 KiB window (the library copies the window's pages to shared memory); reg_fresh_mean: "
           "the average over all cycles; reg_fresh_threaded: reg_fresh with a second thread asleep in read(2) (where "
           "the write guard cannot hold the kernel's writes, the library parks that thread while it copies a "
           "window); reg_same: the same buffer again and again.  floor pin_unpin: mlock + "
           "munlock of the same pages.", ""]
    md += ["## Latency", ""] + value_table(series, metric, ("half_rtt_us", "us"))
    md += ["## Bandwidth", ""] + value_table(series, metric, ("GBps",))
    md += ["## Message rate", ""] + value_table(series, metric, ("Mmsgps",))
    md += ["Not the same work: every softnic-ugni put asks for a completion event, reaped with "
           "GNI_CqGetEvent + GNI_GetCompleted as a uGNI program must; UCX's ucp_put_bw issues puts "
           "without a per-put completion and completes them in bulk.  softnic-portals put_bw does the "
           "same work as UCX (no event per put, the window's last put acknowledged); put_bw_events logs "
           "and takes a SEND_END per put.", ""]
    md += ["## Ratios", ""] + ratio_tables(series, metric)
    runs = notes.get("runs", [])
    skipped = [r for r in runs if r.get("reason")]
    md += ["## Skipped or incomplete", ""]
    if notes.get("missing_required"):
        md += ["- required by issue 5 but missing: " + "; ".join(notes["missing_required"])]
    if skipped:
        md += ["- %s (%s): %s" % (r["run"], r["status"], r["reason"]) for r in skipped]
    else:
        md += ["Nothing: every benchmark ran."]
    if plot_msg:
        md += ["- plot: %s" % plot_msg]
    md += [""]
    if runs:
        md += ["## Commands", "", "| run | seconds | command |", "|---|---:|---|"]
        md += ["| %s | %s | `%s` |" % (r["run"], r["seconds"], r["command"].replace("|", "\\|")) for r in runs]
        md += ["", "Total: %s s." % notes.get("seconds", "?"), ""]
    md += ["![latency and bandwidth](latest.png)", ""]
    with open(os.path.join(outdir, "latest.md"), "w") as f:
        f.write("\n".join(md))
    print("wrote %s and %s" % (os.path.join(outdir, "latest.md"), os.path.join(outdir, "latest.png") if not plot_msg else plot_msg))


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
