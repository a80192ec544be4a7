#!/usr/bin/env python3
"""Finds import circles among the modules of each crate.

Usage: python3 bench/module_cycles.py [CRATE_SRC_DIR ...]
(default: every crate of the workspace). Exits 1 when a crate has a circle.

Each source file is a module (`a/b.rs` and `a/b/mod.rs` are `a::b`). An edge
`m -> n` is any path `crate::n...`, `super::...` or `self::...` in `m` that
names module `n` or an item in it (`use` lines and paths in code alike),
resolved to the deepest module that exists. A parent's `pub use child::X`
is an edge too: a child may not then reach its parent. Only the crate root
(`lib.rs`/`main.rs`) is a facade: its re-exports are not edges, and
`crate::X` that names one of its re-exports resolves to the module the item
comes from.
"""

import os
import re
import sys

ROOTS = ("lib.rs", "main.rs")


def modules(src):
    """Module path (tuple) -> file."""
    out = {}
    for dirpath, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] == "mod" or (len(parts) == 1 and name in ROOTS):
                parts = parts[:-1]
            out.setdefault(tuple(parts), os.path.join(dirpath, name))
    return out


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def expand_uses(text):
    """`use a::{b, c::d}` -> paths a::b, a::c::d (one level of braces)."""
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text, flags=re.S):
        body = re.sub(r"\s+", "", m.group(1))
        brace = body.find("{")
        if brace < 0:
            paths.append(body)
            continue
        prefix = body[:brace]
        inner = body[brace + 1 : body.rfind("}")]
        depth, cur = 0, ""
        for ch in inner + ",":
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                if cur:
                    paths.append(prefix + cur.split("{")[0])
                cur = ""
            else:
                cur += ch
    return paths


def root_reexports(text):
    """Item name -> module path, from the crate root's `pub use`."""
    out = {}
    # Whole statements: a `pub use a::{..}` may span several lines.
    statements = re.findall(r"^\s*pub use [^;]*;", text, re.M)
    for path in expand_uses("\n".join(" ".join(st.split()) for st in statements)):
        segs = [s for s in path.split("::") if s and s != "crate"]
        if len(segs) >= 2:
            out[segs[-1].split(" as ")[0]] = tuple(segs[:-1])
    return out


def resolve(segs, mods):
    for n in range(len(segs), -1, -1):
        if tuple(segs[:n]) in mods:
            return tuple(segs[:n])
    return ()


def edges(src):
    mods = modules(src)
    root_file = mods.get(())
    reexports = root_reexports(open(root_file).read()) if root_file else {}
    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        if mod == ():
            continue
        text = strip_comments(open(path).read())
        # Inline test modules (at the end of a file) are not architecture.
        text = text.split("#[cfg(test)]\nmod tests")[0]
        candidates = expand_uses(text)
        candidates += re.findall(r"(?<![\w:])(?:crate|super|self|\w+)(?:::\w+)+", text)
        for p in candidates:
            segs = [s.split(" as ")[0] for s in p.split("::") if s]
            if not segs:
                continue
            if segs[0] == "crate":
                segs = segs[1:]
                if len(segs) == 1 and segs[0] in reexports:
                    segs = list(reexports[segs[0]])
            elif segs[0] in ("super", "self"):
                base = list(mod)
                if segs[0] == "self":
                    segs = base + segs[1:]
                else:
                    # `super` of a.rs is its parent; of a/mod.rs too.
                    parent = base[:-1]
                    rest = segs[1:]
                    while rest and rest[0] == "super":
                        parent, rest = parent[:-1], rest[1:]
                    segs = parent + rest
            elif mod + (segs[0],) in mods:
                # A path relative to this module: one of its children.
                segs = list(mod) + segs
            else:
                continue
            target = resolve(segs, mods)
            if target == () or target == mod:
                continue
            graph[mod].add(target)
    return graph


def cycles(graph):
    """Strongly connected components with more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    srcs = sys.argv[1:] or [os.path.join(repo, c, "src") for c in ("store", "indexer", "search-api")]
    bad = False
    for src in srcs:
        graph = edges(src)
        found = cycles(graph)
        n_edges = sum(len(v) for v in graph.values())
        name = os.path.basename(os.path.dirname(os.path.abspath(src)))
        if found:
            bad = True
            for comp in found:
                names = sorted("::".join(m) for m in comp)
                print(f"{name}: circle among {', '.join(names)}")
                for m in sorted(comp):
                    for t in sorted(graph[m] & set(comp)):
                        print(f"    {'::'.join(m)} -> {'::'.join(t)}")
        else:
            print(f"{name}: {len(graph)} modules, {n_edges} edges, no circle")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
