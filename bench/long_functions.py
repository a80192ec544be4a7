#!/usr/bin/env python3
"""Lists functions longer than a limit (default 120 lines) outside tests.

Usage: python3 bench/long_functions.py [LIMIT]

Walks every `.rs` file under store/, indexer/ and search-api/ (src and
examples; `tests/` directories and `#[cfg(test)]` modules left out), finds
each `fn` item and its body by brace matching (strings, chars and comments
skipped), and prints `lines path:line name` for those over the limit,
longest first. Exit status 0 either way: it is a report, not a gate.
"""
import os
import re
import sys

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 120
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def code_only(text):
    """`text` with string, char and comment contents blanked (lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or text.startswith('r"', i) or text.startswith('r#"', i):
            m = re.match(r'r(#*)"', text[i:])
            if m:
                end = '"' + m.group(1)
                j = text.find(end, i + len(m.group(0)))
                j = n if j < 0 else j + len(end)
            else:
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4] + "    "):
            m = re.match(r"'(\\[^']*|[^\\'])'", text[i:])
            j = i + (len(m.group(0)) if m else 1)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = code_only(open(path, encoding="utf-8").read())
    lines = text.split("\n")
    skip_until = -1
    for no, line in enumerate(lines):
        if no <= skip_until:
            continue
        if "#[cfg(test)]" in line:
            # The test module that follows is left out.
            depth, seen = 0, False
            for k in range(no, len(lines)):
                depth += lines[k].count("{") - lines[k].count("}")
                seen = seen or "{" in lines[k]
                if seen and depth <= 0:
                    skip_until = k
                    break
            continue
        m = FN.match(line)
        if not m:
            continue
        depth, seen = 0, False
        for k in range(no, len(lines)):
            if not seen and ";" in lines[k] and "{" not in lines[k]:
                break  # a declaration without a body
            depth += lines[k].count("{") - lines[k].count("}")
            seen = seen or "{" in lines[k]
            if seen and depth <= 0:
                yield k - no + 1, no + 1, m.group(6)
                break


found = []
for crate in ("store", "indexer", "search-api"):
    for top, dirs, files in os.walk(os.path.join(ROOT, crate)):
        dirs[:] = [d for d in dirs if d not in ("tests", "target", "benches")]
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(top, f)
                for length, line, name in functions(path):
                    if length > LIMIT:
                        found.append((length, f"{os.path.relpath(path, ROOT)}:{line}", name))
for length, where, name in sorted(found, reverse=True):
    print(f"{length:5} {where} {name}")
print(f"{len(found)} functions over {LIMIT} lines", file=sys.stderr)
