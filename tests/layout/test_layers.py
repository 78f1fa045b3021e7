#!/usr/bin/env python3
"""The house's layering, read from what the code really uses.

C: an arrow A -> B when A's object file leaves a symbol undefined that B's
object file defines (nm, the linker's own view: a header that declares a
function is no arrow, a call is).  Python (frontend/gdn_parity_jax): an
arrow A -> B for every import of B in A, at module level or inside a
function (a lazy import is still a use).

Two rules (docs/CONVENTIONS.md, "Layout and dependencies"):
  * between folders, only the arrows the table allows (core/ uses nothing
    of ours; oracle/, kernels/, fixtures/, reports/ use core/; mpi/ uses
    core/ and kernels/; parity/ and bench/ anything);
  * inside a folder, one way: no circle of files that use each other.
Circles still standing are listed in KNOWN_CIRCLES; the test fails on a
circle not listed, and on a listed one that is gone (so the list only
shrinks).

    test_layers.py SOURCE_ROOT BUILD_ROOT     the check
    test_layers.py --self-test                the negative controls: a
                                              planted circle and a planted
                                              upward arrow must be found
"""
import ast
import os
import subprocess
import sys

# Folder -> the folders of ours it may use (itself always).
MAY_USE = {
    "core": set(),
    "oracle": {"core"},
    "kernels": {"core"},
    "fixtures": {"core"},
    "reports": {"core"},
    "mpi": {"core", "kernels"},
    # parity/ in rooms, each above the ones it uses:
    # measure -> judge -> document -> run -> the top (the command line).
    "parity/measure": {"core"},
    "parity/judge": {"core", "kernels", "parity/measure"},
    "parity/document": {"core", "oracle", "kernels", "reports", "parity/measure", "parity/judge"},
    "parity/run": {"core", "oracle", "kernels", "fixtures", "reports", "mpi", "parity/measure", "parity/judge",
                   "parity/document"},
    "parity": {"core", "oracle", "kernels", "fixtures", "reports", "mpi", "parity/measure", "parity/judge",
               "parity/document", "parity/run"},
    "bench": {"core", "oracle", "kernels", "fixtures", "reports", "mpi", "parity", "parity/measure",
              "parity/judge", "parity/document", "parity/run"},
    "frontend": set(),
    # Six fixtures/ files are libraries of their own (fixtures/meson.build),
    # kept out of what readers of fixtures link: regen runs the oracle (GDN's
    # and KDA's, their head groups in rounds merging the oracle's tallies),
    # synth --kernel-outputs / --grad runs our kernels.
    "fixtures/fix_regen.c": {"core", "oracle"},
    "fixtures/fix_regen_rounds.c": {"core", "oracle"},
    "fixtures/fix_regen_grads.c": {"core", "oracle"},
    "fixtures/fix_regen_meter.c": {"core", "oracle"},
    "fixtures/fix_kda_regen.c": {"core", "oracle"},
    "fixtures/fix_synth_grads.c": {"core", "kernels"},
}

# Circles that still stand, each the sorted files of one strongly connected
# component.  Remove an entry when its circle is broken.
KNOWN_CIRCLES = []

PY_PACKAGE = "frontend/gdn_parity_jax"


def nm_symbols(path):
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", "-P", path], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRVWGS" and kind.isupper():
            defined.add(name)
    return defined, undefined


def c_objects(source_root, build_root):
    """{source path relative to the source root: object path} for the C
    objects of every folder but the tests' and the fuzzers', from the
    build's compile_commands.json (a generated source: its path in the
    build folder)."""
    import json
    with open(os.path.join(build_root, "compile_commands.json"), encoding="utf-8") as f:
        commands = json.load(f)
    objs = {}
    for c in commands:
        if not c["file"].endswith(".c"):
            continue
        src = os.path.realpath(os.path.join(c["directory"], c["file"]))
        out = os.path.join(c["directory"], c["output"])
        rel = os.path.relpath(src, os.path.realpath(build_root))  # generated: in the build folder
        if rel.startswith(".."):
            rel = os.path.relpath(src, source_root)
        if rel.split("/")[0] in ("tests", "fuzz") or not os.path.exists(out):
            continue
        objs[rel] = out
    return objs


def c_graph(source_root, build_root):
    """{file: {used file: [symbols]}} from the object files."""
    objs = c_objects(source_root, build_root)
    syms = {src: nm_symbols(o) for src, o in sorted(objs.items())}
    owner = {}
    for src, (defined, _) in syms.items():
        for s in defined:
            owner.setdefault(s, src)
    graph = {src: {} for src in syms}
    for src, (_, undefined) in syms.items():
        for s in sorted(undefined):
            dst = owner.get(s)
            if dst and dst != src:
                graph[src].setdefault(dst, []).append(s)
    return graph


def py_imports(path, modules):
    """The package's modules that the file at path imports."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 1 or mod.startswith("gdn_parity_jax"):
                base = mod.split(".")[-1] if node.level == 1 else mod[len("gdn_parity_jax"):].lstrip(".")
                if base in modules:
                    used.add(base)
                elif not base:
                    used.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gdn_parity_jax."):
                    base = a.name.split(".")[1]
                    if base in modules:
                        used.add(base)
    return used


def py_graph(source_root):
    pkg = os.path.join(source_root, PY_PACKAGE)
    modules = {f[:-3] for f in os.listdir(pkg) if f.endswith(".py")}
    graph = {}
    for m in sorted(modules):
        src = f"{PY_PACKAGE}/{m}.py"
        graph[src] = {f"{PY_PACKAGE}/{d}.py": ["import"] for d in py_imports(os.path.join(pkg, m + ".py"), modules)
                      if d != m and d != "__init__" and m != "__init__"}
    return graph


def circles(graph):
    """The strongly connected components of more than one file (Tarjan,
    iterative), each a sorted tuple."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, {})))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(tuple(sorted(comp)))
    return sorted(out)


def folder_of(path):
    """The folder a file belongs to: its top folder, or a room of parity/."""
    parts = path.split("/")
    if parts[0] == "parity" and len(parts) > 2:
        return "parity/" + parts[1]
    return parts[0]


def upward_arrows(graph):
    """Arrows between folders that the table does not allow."""
    bad = []
    for a, uses in sorted(graph.items()):
        fa = folder_of(a)
        allowed = MAY_USE.get(a, MAY_USE.get(fa, set()))
        for b, syms in sorted(uses.items()):
            fb = folder_of(b)
            if fa != fb and fb not in allowed:
                bad.append((a, b, syms[:3]))
    return bad


def ties(graph, comp):
    lines = []
    for a in comp:
        for b in comp:
            if b in graph.get(a, {}):
                lines.append(f"    {a} -> {b}: {', '.join(graph[a][b][:6])}")
    return "\n".join(lines)


def judge(graph, known):
    """Messages for every broken rule (empty: the house is sound)."""
    msgs = []
    found = circles(graph)
    for comp in found:
        if comp not in known:
            msgs.append(f"a circle of {len(comp)} files that use each other:\n{ties(graph, comp)}")
    for comp in known:
        if comp not in found:
            msgs.append(f"a listed circle is gone, remove it from KNOWN_CIRCLES: {', '.join(comp)}")
    for a, b, syms in upward_arrows(graph):
        msgs.append(f"{a} uses {b} ({', '.join(syms)}): {folder_of(a)}/ may not use {folder_of(b)}/")
    return msgs


def self_test():
    sound = {"core/a.c": {}, "oracle/b.c": {"core/a.c": ["f"]}, "oracle/c.c": {"oracle/b.c": ["g"]}}
    assert judge(sound, []) == [], judge(sound, [])
    circ = {"oracle/b.c": {"oracle/c.c": ["h"]}, "oracle/c.c": {"oracle/b.c": ["g"]}, "core/a.c": {}}
    m = judge(circ, [])
    assert len(m) == 1 and "oracle/b.c -> oracle/c.c: h" in m[0], m
    assert judge(circ, [("oracle/b.c", "oracle/c.c")]) == []
    assert "is gone" in judge(sound, [("oracle/b.c", "oracle/c.c")])[0]
    up = {"core/a.c": {"oracle/b.c": ["oracle_x"]}, "oracle/b.c": {}}
    m = judge(up, [])
    assert len(m) == 1 and "core/ may not use oracle/" in m[0], m
    regen = {"fixtures/fix_regen.c": {"oracle/b.c": ["oracle_run_certified"]},
             "fixtures/fix_load.c": {"oracle/b.c": ["oracle_run_certified"]}, "oracle/b.c": {}}
    m = judge(regen, [])
    assert len(m) == 1 and m[0].startswith("fixtures/fix_load.c uses oracle/b.c"), m
    side = {"kernels/k.c": {"oracle/b.c": ["oracle_x"]}, "oracle/b.c": {}}
    assert "kernels/ may not use oracle/" in judge(side, [])[0]
    rooms = {"parity/judge/parity_policy.c": {"parity/run/parity_sweep.c": ["parity_sweep_run"]},
             "parity/run/parity_sweep.c": {"parity/judge/parity_policy.c": ["parity_checks"]}}
    m = judge(rooms, [])
    assert any("parity/judge/ may not use parity/run/" in x for x in m), m
    long_circ = {f"parity/p{i}.c": {f"parity/p{(i + 1) % 5}.c": ["s"]} for i in range(5)}
    assert circles(long_circ) == [tuple(sorted(long_circ))]
    print("self-test: a planted circle, a planted upward arrow and a kernels -> oracle arrow are found")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    source_root, build_root = argv[1], argv[2]
    graph = c_graph(os.path.realpath(source_root), build_root)
    if len(graph) < 50:
        print(f"test_layers: only {len(graph)} object files under {build_root}: is it built?", file=sys.stderr)
        return 2
    graph.update(py_graph(source_root))
    msgs = judge(graph, [tuple(c) for c in KNOWN_CIRCLES])
    arrows = sum(len(v) for v in graph.values())
    if msgs:
        print("\n".join(msgs))
        print(f"test_layers: {len(msgs)} broken rule(s) over {len(graph)} files and {arrows} arrows")
        return 1
    circ = f"no new circle (the {len(KNOWN_CIRCLES)} listed still stand)" if KNOWN_CIRCLES else "no circle"
    print(f"test_layers: {len(graph)} files, {arrows} arrows, {circ}, no arrow up a folder")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
