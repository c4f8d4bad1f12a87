#!/usr/bin/env python3
"""The engine's import graph, read off its own `crate::` paths, checked against its layering.

Usage: scripts/import_graph.py [--dot FILE] [--all]

Reads every `.rs` file under `crates/strata/src`, collects the `crate::...` paths of its `use`
lines and of its code (test code excluded: files named `tests.rs` or `*_tests.rs`, and everything
from a `#[cfg(test)]` module onwards), and resolves each to the file that defines it. It prints:

* the import cycles between files (strongly connected components of the file graph);
* every import that runs up the layering: from a module to one of a higher layer, where the
  layers are `LAYERS` below (docs/ARCHITECTURE.md, "Layering", says why each remaining one is
  there).

Exits 1 when there is a cycle or more than `MAX_UP` upward imports, so it can guard the layering.
`--all` lists the up-imports' sites (file and line); `--dot FILE` writes the module graph for
Graphviz.
"""
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "strata", "src")

# Bottom-up. A module may import its own layer and the layers below it. Modules on one line share
# a layer.
LAYERS = [
    ["error", "coding", "key", "limits", "counting_allocator", "testdata", "sync", "random"],
    ["env", "stats"],
    ["wal", "filter"],
    ["memtable", "iterator"],
    ["table", "cache"],
    ["version"],
    ["solver"],
    ["alloc"],
    ["compaction"],
    ["model", "sim"],
    ["policy", "options", "options_file"],
    ["db", "check", "repair"],
    ["bench_internals", "fuzz_targets", "lib"],
]
MAX_UP = 10

LAYER_OF = {m: i for i, names in enumerate(LAYERS) for m in names}


def module_files():
    """Maps a module path (`alloc::mnemosyne`) to its file."""
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
            parts = rel[:-3].split(os.sep)
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts == ["lib"]:
                parts = ["lib"]
            out["::".join(parts)] = os.path.join(dirpath, f)
    return out


def is_test_file(path):
    base = os.path.basename(path)
    return base == "tests.rs" or base.endswith("_tests.rs")


def code_lines(path):
    """The file's lines up to its first `#[cfg(test)]` module."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]":
            nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if nxt.startswith("mod ") or nxt.startswith("pub(crate) mod ") or nxt.startswith("pub mod "):
                break
        out.append(line)
    return out


def expand(tree):
    """Expands a use tree (`a::{b, c::{d, e}}`) into paths."""
    tree = tree.strip()
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{" and depth == 0:
            prefix = tree[:i]
            inner = tree[i + 1 : tree.rindex("}")]
            parts, cur, d = [], "", 0
            for c in inner:
                if c == "{":
                    d += 1
                elif c == "}":
                    d -= 1
                if c == "," and d == 0:
                    parts.append(cur)
                    cur = ""
                else:
                    cur += c
            parts.append(cur)
            out = []
            for p in parts:
                if p.strip():
                    out.extend(prefix + q for q in expand(p))
            return out
    return [tree.split(" as ")[0].strip()]


def paths_in(path):
    """(line number, `crate::` path) pairs of a file's non-test code."""
    lines = code_lines(path)
    text = "\n".join(lines)
    found = []
    for m in re.finditer(r"\buse\s+(crate::[^;]*|super::[^;]*|self::[^;]*);", text):
        line = text.count("\n", 0, m.start()) + 1
        for p in expand(re.sub(r"\s+", "", m.group(1))):
            found.append((line, p))
    no_use = re.sub(r"\buse\s+[^;]*;", lambda m: "\n" * m.group(0).count("\n"), text)
    no_comments = re.sub(r"//[^\n]*", "", no_use)
    for m in re.finditer(r"\bcrate(::[A-Za-z_][A-Za-z0-9_]*)+", no_comments):
        line = no_comments.count("\n", 0, m.start()) + 1
        found.append((line, m.group(0)))
    return found


def resolve(module, path, modules):
    """The module a path names, relative to `module`."""
    segs = path.split("::")
    if segs[0] == "crate":
        segs = segs[1:]
    elif segs[0] in ("super", "self"):
        base = module.split("::") if module != "lib" else []
        file_is_mod = modules.get(module, "").endswith("mod.rs")
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                if not file_is_mod:
                    base = base[:-1]
                else:
                    base = base[:-1]
                file_is_mod = True
            segs = segs[1:]
        segs = base + segs
    best = None
    for n in range(len(segs), 0, -1):
        cand = "::".join(segs[:n])
        if cand in modules:
            best = cand
            break
    return best


def top(module):
    return module.split("::")[0]


def main():
    args = sys.argv[1:]
    modules = module_files()
    edges = defaultdict(set)
    sites = defaultdict(list)
    for module, path in sorted(modules.items()):
        if is_test_file(path):
            continue
        for line, p in paths_in(path):
            target = resolve(module, p, modules)
            if target is None or target == module or is_test_file(modules[target]):
                continue
            # An import of a child module from its parent's mod.rs is the parent's own business.
            edges[module].add(target)
            sites[(module, target)].append((os.path.relpath(path, os.path.join(ROOT, "..")), line, p))

    # Cycles between files (Tarjan), ignoring a parent mod.rs importing its own children and
    # children importing their parent's re-exports: a cycle is between two files of code.
    def is_family(a, b):
        return a.startswith(b + "::") or b.startswith(a + "::")

    graph = {a: {b for b in bs if not is_family(a, b)} for a, bs in edges.items()}
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
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
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)

    up = []
    for (a, b), where in sorted(sites.items()):
        la, lb = LAYER_OF.get(top(a)), LAYER_OF.get(top(b))
        if la is None or lb is None:
            print(f"unlayered module: {top(a) if la is None else top(b)}", file=sys.stderr)
            sys.exit(2)
        if lb > la:
            up.append((a, b, where))

    print(f"files: {len(modules)}; file-to-file imports: {sum(len(v) for v in edges.values())}")
    print(f"import cycles between files: {len(sccs)}")
    for comp in sccs:
        print("  cycle: " + " <-> ".join(comp))
    print(f"imports running up the layering: {len(up)} (at most {MAX_UP})")
    for a, b, where in up:
        print(f"  {a} -> {b}")
        if "--all" in args:
            for f, line, p in where:
                print(f"      {f}:{line} {p}")
    if "--dot" in args:
        out = args[args.index("--dot") + 1]
        with open(out, "w") as fh:
            fh.write("digraph strata {\n  rankdir=BT;\n")
            pairs = {(top(a), top(b)) for a, bs in edges.items() for b in bs if top(a) != top(b)}
            for a, b in sorted(pairs):
                colour = ' [color=red]' if LAYER_OF[top(b)] > LAYER_OF[top(a)] else ""
                fh.write(f'  "{a}" -> "{b}"{colour};\n')
            fh.write("}\n")
    sys.exit(1 if sccs or len(up) > MAX_UP else 0)


if __name__ == "__main__":
    main()
