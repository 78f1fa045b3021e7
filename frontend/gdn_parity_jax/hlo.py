"""The collectives of a compiled XLA module, read from ``compiled.as_text()``.

Pure text parsing (no jax import): each collective instruction with its
kind, element type, per-device result shape and bytes, replica groups or
source-target pairs, JAX's metadata ``op_name`` and the source line of its
stack trace, and how many times it runs (gdn_parity_jax.hlo_walk walks
every computation it can run in: loops, conditional branches, calls,
fusions, async wrappers).  The compiled SPMD module is the per-device
program, so every shape here is what one device holds.

The text format read (XLA's HloModule::ToString, as JAX 0.10 prints it):

    FileNames / FunctionNames / FileLocations / StackFrames   tables
    %name (params) -> type {   or   ENTRY %name ... {          computations
      %x = f32[4,16]{1,0} all-gather(%y), replica_groups={{0,1}}, ...,
           metadata={op_name="jit(f)/all_gather" stack_frame_id=12}
    }

A line that does not parse as an instruction is skipped, never guessed at.
"""

from __future__ import annotations

import re

# Opcodes counted as collectives (an async "-start" is counted, its "-done"
# is not: one transfer).  The dictionary maps the opcode to its kind.
COLLECTIVES = {op: op for op in ("all-gather", "all-reduce", "reduce-scatter", "collective-permute",
                                 "all-to-all", "collective-broadcast", "send", "recv",
                                 "ragged-all-to-all")}
COLLECTIVES.update({f"{op}-start": op for op in ("all-gather", "all-reduce", "collective-permute",
                                                 "reduce-scatter", "all-to-all")})

ITEMSIZE = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
            "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16, "f8e4m3fn": 1, "f8e5m2": 1,
            "s4": 1, "u4": 1, "token": 0}

_COMP = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\))?\s*->.*\{\s*$")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([a-z][\w\-]*)\((.*)$")
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\]")
_TABLE = re.compile(r"^(\d+)\s+(.*)$")


def _shapes(typ: str):
    """[(dtype, [dims])] of an HLO result type (an array or a tuple of them)."""
    return [(m.group(1), [int(d) for d in m.group(2).split(",") if d]) for m in _ARRAY.finditer(typ)]


def _nbytes(shapes) -> int:
    n = 0
    for dt, dims in shapes:
        k = ITEMSIZE.get(dt, 4)
        for d in dims:
            k *= d
        n += k
    return n


def _braced(s: str, key: str):
    """The text inside key={...} (balanced braces), or None."""
    i = s.find(key + "={")
    if i < 0:
        return None
    i += len(key) + 1
    depth = 0
    for j in range(i, len(s)):
        depth += {"{": 1, "}": -1}.get(s[j], 0)
        if depth == 0:
            return s[i + 1:j]
    return None


def _groups(text):
    """'{0,1},{2,3}' -> [[0,1],[2,3]]; None stays None."""
    if text is None:
        return None
    return [[int(v) for v in g.split(",") if v.strip()] for g in re.findall(r"\{([0-9,\s]*)\}", text)]


def _iota_groups(s: str):
    """replica_groups=[G,S]<=[N] (iota form) -> G groups of S consecutive ids
    (transposed iota forms are kept as their text)."""
    m = re.search(r"replica_groups=\[(\d+),(\d+)\]<=\[(\d+)\](T\([0-9,]*\))?", s)
    if not m:
        return None
    if m.group(4):
        return m.group(0)[len("replica_groups="):]
    g, n = int(m.group(1)), int(m.group(2))
    return [list(range(i * n, (i + 1) * n)) for i in range(g)]


def _tables(lines):
    """The FileNames, FunctionNames, FileLocations and StackFrames tables."""
    out = {"FileNames": {}, "FunctionNames": {}, "FileLocations": {}, "StackFrames": {}}
    cur = None
    for ln in lines:
        s = ln.strip()
        if s in out:
            cur = out[s]
            continue
        if cur is None:
            continue
        m = _TABLE.match(s)
        if not m:
            cur = None
            continue
        cur[int(m.group(1))] = m.group(2)
    return out


def _kv(text: str):
    return {k: v for k, v in re.findall(r"(\w+)=([^\s}]+)", text)}


class Frames:
    """Stack frame id -> ["file:line (function)", ...], innermost first."""

    def __init__(self, tables):
        self.files = {k: v.strip('"') for k, v in tables["FileNames"].items()}
        self.funcs = {k: v.strip('"') for k, v in tables["FunctionNames"].items()}
        self.locs = {k: _kv(v) for k, v in tables["FileLocations"].items()}
        self.frames = {k: _kv(v) for k, v in tables["StackFrames"].items()}

    def _where(self, loc_id: int):
        loc = self.locs.get(loc_id)
        if not loc:
            return None
        f = self.files.get(int(loc.get("file_name_id", 0)), "?")
        fn = self.funcs.get(int(loc.get("function_name_id", 0)), "?")
        return f"{f}:{loc.get('line', '?')} ({fn})"

    def stack(self, frame_id):
        """The stack trace of a frame, innermost first.  parent_frame_id is
        printed one above the parent's id (0: no parent)."""
        out, seen = [], set()
        while frame_id and frame_id in self.frames and frame_id not in seen:
            seen.add(frame_id)
            fr = self.frames[frame_id]
            w = self._where(int(fr.get("file_location_id", 0)))
            if w:
                out.append(w)
            frame_id = int(fr.get("parent_frame_id", 0)) - 1
        return out


def _computations(lines):
    """{name: [instruction lines]}, the entry's name, and its line ranges."""
    comps, entry, cur = {}, None, None
    for ln in lines:
        m = _COMP.match(ln)
        if m and not ln.startswith(" "):
            cur = m.group(2)
            comps[cur] = []
            if m.group(1):
                entry = cur
            continue
        if ln.startswith("}"):
            cur = None
            continue
        if cur is not None:
            comps[cur].append(ln)
    return comps, entry


def record(ins, comp, entry, execs, frames, loops_unknown=(), branch=None):
    """One collective instruction's record; execs: how many times it runs
    (the product of the known trip counts around it)."""
    op, shapes, ln = ins.op, ins.shapes, ins.line
    if op.endswith("-start") and len(shapes) > 1:
        shapes = shapes[-1:]  # (operand, result) tuples of async starts: the result
    meta = _braced(ln, "metadata") or ""
    op_name = re.search(r'op_name="([^"]*)"', meta)
    sf = re.search(r"stack_frame_id=(\d+)", meta)
    src_file = re.search(r'source_file="([^"]*)"', meta)
    src_line = re.search(r"source_line=(\d+)", meta)
    stack = frames.stack(int(sf.group(1))) if sf else []
    if not stack and src_file:
        stack = [f"{src_file.group(1)}:{src_line.group(1) if src_line else '?'}"]
    groups = _groups(_braced(ln, "replica_groups")) or _iota_groups(ln)
    pairs = _groups(_braced(ln, "source_target_pairs"))
    nb = _nbytes(shapes)
    rec = {"kind": COLLECTIVES[op], "name": ins.name, "dtype": shapes[0][0] if shapes else None}
    if len(shapes) == 1:
        rec["shape"] = shapes[0][1]
    else:
        rec["shapes"] = [s for _, s in shapes]
    rec.update({"bytes": nb, "executions": execs, "bytes_total": nb * execs,
                "replica_groups": groups, "source_target_pairs": pairs,
                "op_name": op_name.group(1) if op_name else None,
                "source": _short(stack[0]) if stack else None,
                "stack": [_short(s) for s in stack],
                "computation": "ENTRY" if comp == entry else comp})
    if loops_unknown:
        rec["loops_unknown"] = list(dict.fromkeys(loops_unknown))
    if branch:
        rec["conditional"] = branch
    return rec


def _short(where: str) -> str:
    """A source path shortened to its last two components (site-packages
    prefixes say nothing about the code)."""
    path, sep, rest = where.partition(":")
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:]) + sep + rest


def group_key(c) -> str:
    """The identity of a collective across lengths: kind|op_name|source."""
    return f"{c['kind']}|{c.get('op_name') or ''}|{c.get('source') or ''}"


def describe(c) -> str:
    """'all-gather f32[4,1,2,16,16]' (kind, dtype and per-device shape)."""
    if "shape" in c:
        shp = ",".join(map(str, c["shape"]))
    else:
        shp = "),(".join(",".join(map(str, s)) for s in c.get("shapes", []))
        shp = f"({shp})"
    return f"{c['kind']} {c.get('dtype')}[{shp}]"
