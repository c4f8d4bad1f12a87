#!/usr/bin/env python3
"""Lists the engine's non-test functions longer than a limit, in lines.

Usage: scripts/long_functions.py [LIMIT] [DIR]   (defaults: 100, crates/strata/src)

A function counts from its `fn` line to its closing brace. Test code is skipped: files named
`tests.rs` or `*_tests.rs`, everything from a `#[cfg(test)]` module onwards, and `#[test]`
functions. A function whose doc comment or body holds a line starting `// Long:` (saying why it
is long) is listed as explained. Exits 1 if an unexplained function is over the limit.
"""
import os
import re
import sys

FN = re.compile(r"^\s*(pub(\([a-z]+\))?\s+)?(const\s+)?(unsafe\s+)?fn\s+([A-Za-z0-9_]+)")


def functions(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and "mod " in lines[i + 1]:
            break
        m = FN.match(line)
        if not m:
            i += 1
            continue
        is_test = i > 0 and lines[i - 1].strip() in ("#[test]", "#[tokio::test]")
        # Find the body's opening brace, then its match (strings and comments are rare enough
        # in signatures that counting braces per line is sound for this code base).
        depth, start, j, opened = 0, i, i, False
        while j < len(lines):
            code = re.sub(r"//.*", "", lines[j])
            code = re.sub(r"'(\\.|[^'\\])'", "", code)
            code = re.sub(r'"(\\.|[^"\\])*"', "", code)
            if not opened and ";" in code and "{" not in code:
                break  # a declaration without a body (trait method)
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                break
            j += 1
        if opened:
            doc = []
            k = start - 1
            while k >= 0 and lines[k].strip().startswith(("///", "#[", "//")):
                doc.append(lines[k])
                k -= 1
            body = lines[start : j + 1]
            explained = any(l.strip().startswith("// Long:") for l in doc + body)
            if not is_test:
                out.append((m.group(5), start + 1, j - start + 1, explained))
            i = j + 1
        else:
            i += 1
    return out


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    root = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "crates", "strata", "src"
    )
    long = []
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".rs") or f == "tests.rs" or f.endswith("_tests.rs"):
                continue
            path = os.path.join(dirpath, f)
            for name, line, length, explained in functions(path):
                if length > limit:
                    long.append((length, os.path.relpath(path, root), line, name, explained))
    long.sort(reverse=True)
    unexplained = [x for x in long if not x[4]]
    for length, path, line, name, explained in long:
        note = "explained" if explained else ""
        print(f"{length:5} {path}:{line} {name} {note}")
    print(f"{len(long)} functions over {limit} lines, {len(unexplained)} without a `// Long:` reason")
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
