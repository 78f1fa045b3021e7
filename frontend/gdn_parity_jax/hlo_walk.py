"""What a compiled XLA module computes and moves, counted from its text with
each instruction's multiplicity.

Starting at the entry computation, every computation an instruction can run
is walked: ``while`` bodies (times the loop's known trip count) and
conditions (trip count + 1), ``conditional`` branches (each walked; the
largest branch's work and collective bytes taken as the bound), ``call``,
``fusion`` and async ``calls=`` computations and custom calls'
``called_computations`` (once per execution of the caller).  Nested loops
multiply.

Work is counted per instruction as XLA's HloCostAnalysis defines it, but
times the executions: a ``dot`` is 2 x (result elements) x (the contracted
extent), a ``convolution`` 2 x (result elements) x (kernel elements per
output feature), an elementwise arithmetic op one flop per result element
(transcendental ones counted apart, as ``transcendentals``), a ``reduce``
one flop per input element it folds, a ``reduce-window`` the window's size
per result element.  Data movement (copies, slices, broadcasts, gathers,
converts) is not work.

XLA:CPU's own ``cost_analysis()`` counts a ``while`` body once whatever its
trip count: a recurrence written as a scan (the work context parallelism
divides) is invisible to it.  This count is what the audit judges.

A ``while`` whose trip count XLA cannot name (no ``known_trip_count``) is
never counted as one trip: it is listed in ``unknown_loops`` with its work
and collectives per trip, the collectives inside carry its name in
``loops_unknown``, and the audit's checks refuse to PASS such a program.
"""

from __future__ import annotations

import re

from . import hlo

ELEMENTWISE = frozenset((
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "negate", "abs", "compare",
    "select", "clamp", "remainder", "sign", "floor", "ceil", "round-nearest-afz",
    "round-nearest-even", "and", "or", "xor", "not", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "is-finite", "real", "imag", "complex", "popcnt", "clz", "stochastic-convert"))
TRANSCENDENTAL = frozenset((
    "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic", "sqrt",
    "rsqrt", "cbrt", "sine", "cosine", "tan", "atan2", "erf", "power"))
TOP_SOURCES = 12

_OPERAND = re.compile(r"%([\w.\-]+)")
_CALLEE = re.compile(r"\b(body|condition|calls|to_apply|true_computation|false_computation)=%?([\w.\-]+)")


class Instr:
    __slots__ = ("name", "typ", "shapes", "op", "rest", "line", "operands")

    def __init__(self, m, line):
        self.name, self.typ, self.op, self.rest = m.group(1), m.group(2), m.group(3), m.group(4)
        self.line = line
        self.shapes = hlo._shapes(self.typ)
        self.operands = _OPERAND.findall(_operand_text(self.rest))


def _operand_text(rest: str) -> str:
    """The operand list: rest up to its closing parenthesis."""
    depth = 1
    for i, ch in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return rest[:i]
    return rest


def _elements(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


class Module:
    """The parsed module: computations of instructions, frames, entry."""

    def __init__(self, text: str):
        lines = text.splitlines()
        self.frames = hlo.Frames(hlo._tables(lines))
        comps, self.entry = hlo._computations(lines)
        self.comps = {}
        for name, body in comps.items():
            instrs = []
            for ln in body:
                m = hlo._INSTR.match(ln)
                if m:
                    instrs.append(Instr(m, ln))
            self.comps[name] = instrs
        self.table = {name: {i.name: i for i in ins} for name, ins in self.comps.items()}
        self._sources = {}

    def source(self, ins) -> str | None:
        meta = hlo._braced(ins.line, "metadata") or ""
        sf = re.search(r"stack_frame_id=(\d+)", meta)
        if not sf:
            src = re.search(r'source_file="([^"]*)"', meta)
            line = re.search(r"source_line=(\d+)", meta)
            return hlo._short(f"{src.group(1)}:{line.group(1) if line else '?'}") if src else None
        fid = int(sf.group(1))
        if fid not in self._sources:
            st = self.frames.stack(fid)
            self._sources[fid] = hlo._short(st[0]) if st else None
        return self._sources[fid]


class Work:
    """What one execution of a computation does (its callees included)."""

    def __init__(self):
        self.flops = 0
        self.transcendentals = 0
        self.dot_flops = 0
        self.by_source = {}
        self.collectives = []  # (instr, computation, executions, loops_unknown, branch)
        self.collective_bytes = 0
        self.unknown_loops = []
        self.custom_calls = {}

    def add(self, other, times=1, loops=(), branch=None):
        self.flops += other.flops * times
        self.transcendentals += other.transcendentals * times
        self.dot_flops += other.dot_flops * times
        for k, v in other.by_source.items():
            self.by_source[k] = self.by_source.get(k, 0) + v * times
        for ins, comp, n, lu, br in other.collectives:
            self.collectives.append((ins, comp, n * times, lu + tuple(loops), br or branch))
        self.collective_bytes += other.collective_bytes * times
        self.unknown_loops += other.unknown_loops
        for k, v in other.custom_calls.items():
            self.custom_calls[k] = self.custom_calls.get(k, 0) + v * times


def _attr_ints(rest: str, key: str):
    m = re.search(key + r"=\{([0-9,]*)\}", rest)
    return [int(x) for x in m.group(1).split(",") if x] if m else []


def instr_flops(ins, table):
    """(flops, transcendentals, is_dot) of one execution of one instruction."""
    out = _elements(ins.shapes[0][1]) if len(ins.shapes) == 1 else 0
    op = ins.op
    if op == "dot":
        lhs = table.get(ins.operands[0]) if ins.operands else None
        if lhs is None or len(lhs.shapes) != 1:
            return 0, 0, True
        k = 1
        for d in _attr_ints(ins.rest, "lhs_contracting_dims"):
            k *= lhs.shapes[0][1][d]
        return 2 * out * k, 0, True
    if op == "convolution":
        rhs = table.get(ins.operands[1]) if len(ins.operands) > 1 else None
        m = re.search(r"dim_labels=\w+_(\w+)->", ins.rest)
        if rhs is None or not m or "o" not in m.group(1):
            return 0, 0, True
        kd = rhs.shapes[0][1]
        return 2 * out * _elements(kd) // max(1, kd[m.group(1).index("o")]), 0, True
    if op in ELEMENTWISE:
        return out, 0, False
    if op in TRANSCENDENTAL:
        return 0, out, False
    if op == "reduce":
        src = table.get(ins.operands[0]) if ins.operands else None
        first = ins.shapes[0][1] if ins.shapes else []
        if src is None or not src.shapes:
            return 0, 0, False
        return max(0, _elements(src.shapes[0][1]) - _elements(first)), 0, False
    if op == "reduce-window":
        m = re.search(r"window=\{size=([0-9x]+)", ins.rest)
        size = _elements(int(x) for x in m.group(1).split("x")) if m else 1
        return out * size, 0, False
    return 0, 0, False


def _trip(ins):
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins.line)
    return int(m.group(1)) if m else None


def _callees(ins):
    """[(key, computation)] an instruction runs (branch lists expanded)."""
    out = [(k, c) for k, c in _CALLEE.findall(ins.line)]
    for key in ("branch_computations", "called_computations"):
        inner = hlo._braced(ins.line, key)
        if inner:
            out += [(key, c) for c in re.findall(r"%?([\w.\-]+)", inner)]
    if ins.op != "call":  # a reduce's or all-reduce's to_apply is its own element rule
        out = [(k, c) for k, c in out if k != "to_apply"]
    if ins.op in ("async-update", "async-done"):  # the async-start runs it, once
        return []
    return out


class Walker:
    def __init__(self, module: Module):
        self.m = module
        self.memo = {}

    def comp(self, name, stack=(), around=None):
        """The Work of one execution of computation `name` (memoised);
        around: the source line of the instruction that runs it, given to
        instructions XLA left without metadata (rewritten dots)."""
        key = (name, around)
        if key in self.memo:
            return self.memo[key]
        w = Work()
        if name in stack or name not in self.m.comps:
            return w
        stack = stack + (name,)
        table = self.m.table[name]
        for ins in self.m.comps[name]:
            self._instr(w, ins, name, table, (stack, around))
        self.memo[key] = w
        return w

    def _instr(self, w, ins, comp, table, ctx):
        stack, around = ctx
        own = self.m.source(ins)
        f, t, is_dot = instr_flops(ins, table)
        if f or t:
            w.flops += f
            w.transcendentals += t
            if is_dot:
                w.dot_flops += f
            src = own or (f"{around} (no metadata: the loop or call around it)" if around else "(no source)")
            w.by_source[src] = w.by_source.get(src, 0) + f
        if ins.op in hlo.COLLECTIVES:
            w.collectives.append((ins, comp, 1, (), None))
            w.collective_bytes += _coll_bytes(ins)
        if ins.op == "custom-call":
            tgt = re.search(r'custom_call_target="([^"]*)"', ins.line)
            key = tgt.group(1) if tgt else "?"
            w.custom_calls[key] = w.custom_calls.get(key, 0) + 1
        callees = _callees(ins)
        sub = (stack, own or around)
        if ins.op == "while":
            self._while(w, ins, dict(callees), sub)
        elif ins.op == "conditional":
            self._conditional(w, ins, [c for k, c in callees if k != "to_apply"], sub)
        else:
            for _, c in callees:
                w.add(self.comp(c, *sub))

    def _while(self, w, ins, callees, sub):
        body = self.comp(callees.get("body"), *sub) if "body" in callees else Work()
        cond = self.comp(callees.get("condition"), *sub) if "condition" in callees else Work()
        n = _trip(ins)
        if n is not None:
            w.add(body, n)
            w.add(cond, n + 1)
            return
        per = Work()
        per.add(body)
        per.add(cond)
        meta = hlo._braced(ins.line, "metadata") or ""
        op_name = re.search(r'op_name="([^"]*)"', meta)
        if per.flops or per.transcendentals or per.collectives:
            w.unknown_loops.append({
                "name": ins.name, "op_name": op_name.group(1) if op_name else None,
                "source": self.m.source(ins), "flops_per_trip": per.flops,
                "collectives_per_trip": len(per.collectives),
                "collective_bytes_per_trip": per.collective_bytes})
        # the loop's collectives are kept (named by the loop), its work is not counted
        for c in per.collectives:
            w.collectives.append((c[0], c[1], c[2], c[3] + (ins.name,), c[4]))
        w.collective_bytes += per.collective_bytes
        w.unknown_loops += per.unknown_loops

    def _conditional(self, w, ins, branches, sub):
        works = [self.comp(b, *sub) for b in branches]
        if not works:
            return
        big = max(works, key=lambda x: (x.flops + x.transcendentals, x.collective_bytes))
        w.flops += big.flops
        w.transcendentals += big.transcendentals
        w.dot_flops += big.dot_flops
        for k, v in big.by_source.items():
            w.by_source[k] = w.by_source.get(k, 0) + v
        w.collective_bytes += max(x.collective_bytes for x in works)
        for x in works:  # every branch's collectives, each as if taken every time
            for c in x.collectives:
                w.collectives.append((c[0], c[1], c[2], c[3], c[4] or ins.name))
            w.unknown_loops += x.unknown_loops


def _coll_bytes(ins) -> int:
    shapes = ins.shapes
    if ins.op.endswith("-start") and len(shapes) > 1:
        shapes = shapes[-1:]
    return hlo._nbytes(shapes)


def walk(text: str):
    """{"work": {...}, "collectives": [...], "collective_bytes": N} of one
    compiled module's text (docs/audit-json.md, programs[])."""
    m = Module(text)
    if m.entry is None:
        return {"work": _work_record(Work()), "collectives": [], "collective_bytes": 0}
    w = Walker(m).comp(m.entry)
    colls = [hlo.record(ins, comp, m.entry, n, m.frames, lu, br) for ins, comp, n, lu, br in w.collectives]
    colls.sort(key=lambda c: (c["computation"] != "ENTRY", c["computation"], c["name"]))
    return {"work": _work_record(w), "collectives": colls, "collective_bytes": w.collective_bytes}


def _work_record(w: Work):
    top = sorted(w.by_source.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [{"source": s, "flops": f} for s, f in top[:TOP_SOURCES] if f]
    rest = sum(f for _, f in top[TOP_SOURCES:])
    if rest:
        rows.append({"source": "(other sources)", "flops": rest})
    return {"flops": w.flops, "dot_flops": w.dot_flops, "transcendentals": w.transcendentals,
            "by_source": rows, "unknown_loops": w.unknown_loops,
            "custom_calls": dict(sorted(w.custom_calls.items()))}


def collectives(text: str):
    """Every collective the compiled module can run, with its multiplicity,
    as dicts (see docs/audit-json.md, programs[].collectives[])."""
    return walk(text)["collectives"]
