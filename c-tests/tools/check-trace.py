#!/usr/bin/env python3
"""Checks a merged SOFTNIC_TRACE timeline against the trace-event format Perfetto and
chrome://tracing read: a JSON object with a traceEvents list whose events carry the
fields their phase needs, one named track per rank.

    check-trace.py FILE --ranks N [--every NAME ...] [--some NAME ...] [--counter NAME ...]

--ranks: exactly N tracks (pids), each named by a process_name metadata event;
--every NAME: a complete (X) event of that name on every track;
--some NAME: at least one X (or asynchronous "b") event of that name somewhere;
--counter NAME: at least one counter (C) sample of that name, its value a number.
Asynchronous spans ("b"/"e") must carry an id, and each end must follow its begin.
Prints "trace ok: E events, N tracks" or the first problem (exit 1)."""
import json
import sys


def fail(msg):
    print("trace bad: " + msg)
    sys.exit(1)


def main():
    args = sys.argv[1:]
    if not args:
        fail("usage: check-trace.py FILE --ranks N [--every NAME] [--some NAME]")
    path, ranks, every, some, counters = args[0], None, [], [], []
    i = 1
    while i < len(args):
        if args[i] == "--ranks":
            ranks = int(args[i + 1])
        elif args[i] == "--every":
            every.append(args[i + 1])
        elif args[i] == "--some":
            some.append(args[i + 1])
        elif args[i] == "--counter":
            counters.append(args[i + 1])
        else:
            fail("unknown option " + args[i])
        i += 2
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s does not load as JSON: %s" % (path, e))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents list")
    evs = doc["traceEvents"]
    named, tracks = {}, set()
    for n, e in enumerate(evs):
        where = "event %d (%s)" % (n, json.dumps(e)[:120])
        if not isinstance(e, dict):
            fail(where + ": not an object")
        ph = e.get("ph")
        if ph not in ("X", "B", "E", "i", "I", "C", "M", "b", "e"):
            fail(where + ": phase %r" % ph)
        if not isinstance(e.get("name"), str) or not e["name"]:
            fail(where + ": no name")
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), int) or isinstance(e.get(k), bool):
                fail(where + ": %s is not an integer" % k)
        if ph != "M" and not isinstance(e.get("ts"), (int, float)):
            fail(where + ": ts is not a number")
        if ph == "X" and (not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0):
            fail(where + ": a complete event needs a dur >= 0")
        if ph in ("b", "e") and not isinstance(e.get("id"), (str, int)):
            fail(where + ": an asynchronous event needs an id")
        if "args" in e and not isinstance(e["args"], dict):
            fail(where + ": args is not an object")
        if ph == "M" and e["name"] == "process_name":
            named[e["pid"]] = e.get("args", {}).get("name")
        tracks.add(e["pid"])
    if ranks is not None and len(tracks) != ranks:
        fail("%d tracks (%s), expected %d" % (len(tracks), sorted(tracks), ranks))
    for t in tracks:
        if not named.get(t):
            fail("track %d has no process_name" % t)
    for name in every:
        missing = [t for t in tracks if not any(e["ph"] == "X" and e["name"] == name and e["pid"] == t for e in evs)]
        if missing:
            fail("no %s on track(s) %s" % (name, missing))
    for name in some:
        if not any(e["ph"] in ("X", "b") and e["name"] == name for e in evs):
            fail("no %s anywhere" % name)
    for name in counters:
        if not any(e["ph"] == "C" and e["name"] == name and isinstance(e.get("args", {}).get(name), (int, float)) for e in evs):
            fail("no %s counter sample" % name)
    # Every asynchronous span that began ends, on its track, and not before it began.
    # (Spans of one id nest: an end closes the latest open one.)
    opened = {}
    for e in evs:
        k = (e["pid"], e.get("cat"), e["name"], e.get("id"))
        if e["ph"] == "b":
            opened.setdefault(k, []).append(e["ts"])
        elif e["ph"] == "e":
            if not opened.get(k):
                fail("an asynchronous span ends that never began: %s" % json.dumps(e)[:120])
            if e["ts"] < opened[k].pop():
                fail("an asynchronous span ends before it began: %s" % json.dumps(e)[:120])
    print("trace ok: %d events, %d tracks" % (len(evs), len(tracks)))


main()
