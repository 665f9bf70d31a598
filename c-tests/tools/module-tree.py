#!/usr/bin/env python3
"""Checks that each crate's files form a tree: no circle of modules importing each other.

A module A depends on B when A's non-test code names `crate::B` (or `super::B` from a
top-level file, or `use crate::{B, ...}`).  Test modules (`#[cfg(test)] mod ...`) are
ignored: a test may look anywhere.  lib.rs (the root, which declares everything) is
a node only through what it defines itself: `crate::f` for an item defined in lib.rs
is an edge to lib, `crate::T` re-exported by lib.rs (`pub use m::T`) an edge to m.  Prints each circle (strongly connected group of more than one module) and
exits 1 if there is any.  Usage: module-tree.py CRATE_DIR...
"""
import os, re, sys

def strip_tests(src):
    # Drop `#[cfg(test)]` items: from the attribute to the matching closing brace.
    out, i = [], 0
    while True:
        m = re.search(r'#\[cfg\(test\)\]', src[i:])
        if not m:
            out.append(src[i:]); break
        start = i + m.start()
        out.append(src[i:start])
        j = src.find('{', start)
        semi = src.find(';', start)
        if j < 0 or (0 <= semi < j):
            i = semi + 1 if semi >= 0 else len(src); continue
        depth = 0
        k = j
        while k < len(src):
            if src[k] == '{': depth += 1
            elif src[k] == '}':
                depth -= 1
                if depth == 0: break
            k += 1
        i = k + 1
    return ''.join(out)

def strip_comments(src):
    src = re.sub(r'//[^\n]*', '', src)
    return re.sub(r'/\*.*?\*/', '', src, flags=re.S)

def names_in(grp):
    return re.findall(r'(?:^|[{,\s])(\w+)', grp) if grp.startswith('{') else [grp]

def deps(src, mods, me, reexp, root_items):
    found = set()
    for m in re.finditer(r'\b(?:crate|super)::(\{[^}]*\}|\w+)', src):
        for n in names_in(m.group(1)):
            if n in mods:
                found.add(n)
            elif n in reexp:
                found.add(reexp[n])
            elif n in root_items:
                found.add('lib')
    found.discard(me)
    return found

def root_facts(src, mods):
    """Names lib.rs re-exports (name -> module) and items it defines itself."""
    reexp, items = {}, set()
    for m in re.finditer(r'^\s*pub(?:\([^)]*\))?\s+use\s+(\w+)::(\{[^}]*\}|\w+)', src, re.M):
        if m.group(1) in mods:
            for n in names_in(m.group(2)):
                reexp[n] = m.group(1)
    for m in re.finditer(r'^\s*(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(?:extern\s+"C"\s+)?(?:fn|struct|enum|static|const|type|trait|macro_rules!)\s+(\w+)', src, re.M):
        items.add(m.group(1))
    return reexp, items

def sccs(graph):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index: visit(v)
    return out

def crate_graph(d):
    src_dir = os.path.join(d, 'src')
    files = {f[:-3]: os.path.join(src_dir, f) for f in os.listdir(src_dir) if f.endswith('.rs')}
    root = 'lib' if 'lib' in files else 'main'
    mods = set(files) - {root}
    root_src = strip_tests(strip_comments(open(files[root]).read()))
    reexp, items = root_facts(root_src, mods)
    graph = {}
    for m in mods:
        s = strip_tests(strip_comments(open(files[m]).read()))
        graph[m] = deps(s, mods, m, reexp, items)
    # The root's own code (not its `mod` lines and re-exports) depends on what it names.
    body = re.sub(r'^\s*(?:pub(?:\([^)]*\))?\s+)?(?:mod\s+\w+\s*;|use\s+[^;]*;)', '', root_src, flags=re.M)
    uses = set()
    for m in re.finditer(r'^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+(\w+)::', root_src, re.M):
        if m.group(1) in mods and m.group(1) not in reexp.values():
            uses.add(m.group(1))
    direct = {w for w in re.findall(r'\b(\w+)::', body) if w in mods}
    graph['lib'] = (uses | direct | deps(body, mods, 'lib', reexp, set())) if any(('lib' in g) for g in graph.values()) else set()
    return graph

bad = 0
for d in sys.argv[1:]:
    g = crate_graph(d)
    for comp in sccs(g):
        if len(comp) > 1:
            bad += 1
            edges = [f"{a}->{b}" for a in comp for b in sorted(g[a]) if b in comp]
            print(f"{os.path.basename(d.rstrip('/'))}: circle {' '.join(comp)}: {', '.join(edges)}")
    if '-v' in os.environ.get('MT_FLAGS', ''):
        for a in sorted(g): print(f"  {a}: {' '.join(sorted(g[a]))}")
print(f"module-tree: {bad} circle(s)")
sys.exit(1 if bad else 0)
