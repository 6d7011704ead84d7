#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The library's folders are layers: a file includes headers of its own
folder and of the folders below it, never above; and no chain of includes
between units (a .c file with its .h) comes back to where it started.

    check_layers.py LIBDIR

Prints every include that breaks a rule and exits 1; 0 when there is none.
"""
import os
import re
import sys

# Bottom up. A folder may include its own headers and those of the folders
# listed before it in its row. docs/memory-model.md ("Code map") explains each.
# gpu/ (the catalog, const data) sits on core alone, so the training setup can
# name a GPU and take its architecture's constants.
ALLOWED = {
    "core": [],
    "gpu": ["core"],
    "model": ["core"],
    "train": ["core", "model", "gpu"],
    "hf": ["core", "model"],
    "parallel": ["core", "model", "train"],
    "sim": [],
    "layers": ["core", "model", "sim"],
    "estimate": ["core", "model", "train", "parallel", "sim", "layers"],
    "plan": ["core", "model", "train", "parallel", "estimate", "gpu"],
    "pack": ["core", "gpu"],
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def main(libdir):
    errors = []
    graph = {}
    for folder in sorted(os.listdir(libdir)):
        full = os.path.join(libdir, folder)
        if not os.path.isdir(full):
            continue
        if folder not in ALLOWED:
            errors.append("%s/: a folder without a row in ALLOWED (add it, with its layer)"
                          % folder)
            continue
        for name in sorted(os.listdir(full)):
            if not name.endswith((".c", ".h")):
                continue
            here = folder + "/" + name
            unit = here.rsplit(".", 1)[0]
            graph.setdefault(unit, [])
            for inc in includes(os.path.join(full, name)):
                if inc == "llmem.h":
                    continue
                target = inc.split("/")[0] if "/" in inc else None
                if target is None:
                    errors.append("%s includes \"%s\": name internal headers by folder" % (here, inc))
                    continue
                if target != folder and target not in ALLOWED[folder]:
                    errors.append("%s includes %s: %s/ is not below %s/" % (here, inc, target, folder))
                if inc.rsplit(".", 1)[0] != unit:
                    graph[unit].append(inc.rsplit(".", 1)[0])
    # No include circles, between files of one folder included.
    state = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                errors.append("include circle: " + " -> ".join(stack[stack.index(nxt):] + [nxt])
                              if nxt in stack else "include circle through " + nxt)
            elif state.get(nxt) is None and nxt in graph:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if state.get(node) is None:
            visit(node, [node])
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print("ok: %d units, no upward include, no circle" % len(graph))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
