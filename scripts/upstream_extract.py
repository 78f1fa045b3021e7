#!/usr/bin/env python3
"""Takes one function out of an unpacked upstream package, with only what it needs.

    upstream_extract.py PKG_ROOT MODULE FUNCTION OUT_DIR OUT_MODULE

MaxText's `maxtext/models/qwen3.py` imports some 80 modules (flax, the model
layers, ...); `jax_chunk_gated_delta_rule` needs a handful of names.  This
reads the module's syntax tree (nothing of it is executed), keeps FUNCTION and
the module-level definitions it reaches, resolves `from PKG... import NAME` the
same way in the source file of NAME, and for a whole sub-module it reaches
(`from maxtext.kernels.attention import gdn_cp`) copies that file beside the
output if it imports nothing of the package itself.  Imports of other
packages (jax, math, functools, ...) are kept as written.  The result,
OUT_DIR/OUT_MODULE.py, is upstream's code verbatim, ordered as in the source,
under OUT_DIR (git-ignored: nothing of theirs is committed).  An upstream
change that needs more than this fails loudly here, naming the name.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path


class Extractor:
    def __init__(self, root: Path, pkg: str, out_dir: Path):
        self.root, self.pkg, self.out_dir = root, pkg, out_dir
        self.blocks: list[tuple[str, int, str]] = []  # (file, line, source)
        self.imports: list[str] = []
        self.done: set[tuple[str, str]] = set()
        self.copied: list[str] = []

    def module_path(self, mod: str) -> Path:
        p = self.root / (mod.replace(".", "/") + ".py")
        if p.is_file():
            return p
        p = self.root / mod.replace(".", "/") / "__init__.py"
        if p.is_file():
            return p
        raise SystemExit(f"upstream_extract: module {mod} not found under {self.root}")

    def parse(self, path: Path):
        src = path.read_text(encoding="utf-8")
        return src, ast.parse(src, filename=str(path))

    def want(self, mod: str, name: str):
        if (mod, name) in self.done:
            return
        self.done.add((mod, name))
        path = self.module_path(mod)
        src, tree = self.parse(path)
        defs, binds = {}, {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                defs[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        defs[t.id] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    binds[(a.asname or a.name).split(".")[0]] = node
        if name not in defs:
            if name in binds:
                return self.via_import(binds[name], name, path)
            raise SystemExit(f"upstream_extract: {name} is not defined at module level in {path}")
        node = defs[name]
        # decorators, annotations, defaults and the body: every name it loads
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        local = {a.arg for n in ast.walk(node) if isinstance(n, ast.arguments)
                 for a in n.args + n.kwonlyargs + n.posonlyargs}
        for u in sorted(used - local):
            if u in defs and u != name:
                self.want(mod, u)
            elif u in binds:
                self.via_import(binds[u], u, path)
        # post-order: what a definition uses is written before it (annotations
        # and defaults are evaluated when the def runs)
        self.blocks.append((str(path), node.lineno, ast.get_source_segment(src, node, padded=True)))

    def via_import(self, node, name: str, path: Path):
        if isinstance(node, ast.Import):
            stmt = ast.unparse(ast.Import(names=[a for a in node.names
                                                 if (a.asname or a.name).split(".")[0] == name]))
            if stmt.split()[1].startswith(self.pkg):
                raise SystemExit(f"upstream_extract: {name} ({path}) is `{stmt}`: a package import")
            self.add_import(stmt)
            return
        if node.level or (node.module or "").split(".")[0] == self.pkg:
            mod = node.module or ""
            alias = next(a for a in node.names if (a.asname or a.name) == name)
            sub = f"{mod}.{alias.name}"
            try:
                self.module_path(sub)
                is_module = True
            except SystemExit:
                is_module = False
            if is_module:
                return self.copy_module(sub, alias.asname or alias.name)
            if alias.asname and alias.asname != alias.name:
                raise SystemExit(f"upstream_extract: {name} is an alias of {sub}: not supported")
            return self.want(mod, alias.name)
        names = [a for a in node.names if (a.asname or a.name) == name]
        self.add_import(ast.unparse(ast.ImportFrom(module=node.module, names=names, level=0)))

    def copy_module(self, mod: str, bound: str):
        path = self.module_path(mod)
        _, tree = self.parse(path)
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and ((n.module or "").startswith(self.pkg) or n.level):
                raise SystemExit(f"upstream_extract: {path} imports {n.module}: cannot copy it alone")
            if isinstance(n, ast.Import) and any(a.name.startswith(self.pkg) for a in n.names):
                raise SystemExit(f"upstream_extract: {path} imports the package: cannot copy it alone")
        target = self.out_dir / f"{bound}.py"
        shutil.copyfile(path, target)
        self.copied.append(f"{mod} -> {target.name}")
        self.add_import(f"import {bound}")

    def add_import(self, stmt: str):
        if stmt not in self.imports:
            self.imports.append(stmt)

    def write(self, out: Path, origin: str):
        seen, body = set(), []
        for f, line, text in self.blocks:
            if (f, line) not in seen:
                seen.add((f, line))
                body.append(f"# --- {Path(f).relative_to(self.root)}:{line}\n{text}\n")
        head = (f'"""Extracted by scripts/upstream_extract.py from {origin}: upstream code, verbatim,\n'
                'not part of gdn-parity (never committed)."""\n\n')
        out.write_text(head + "\n".join(self.imports) + "\n\n\n" + "\n\n".join(body), encoding="utf-8")


def main(argv):
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    root, mod, fn, out_dir, out_mod = Path(argv[1]), argv[2], argv[3], Path(argv[4]), argv[5]
    out_dir.mkdir(parents=True, exist_ok=True)
    ex = Extractor(root, mod.split(".")[0], out_dir)
    ex.want(mod, fn)
    ex.write(out_dir / f"{out_mod}.py", f"{mod}.{fn}")
    print(f"upstream_extract: {mod}.{fn} -> {out_dir / (out_mod + '.py')} "
          f"({len(ex.blocks)} definitions; imports: {'; '.join(ex.imports)}"
          + (f"; copied: {', '.join(ex.copied)}" if ex.copied else "") + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
