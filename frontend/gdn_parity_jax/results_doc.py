"""What assert_gdn_parity accepts as a pass: a results document, not an exit status.

A run's exit status alone proves nothing: a function under test may end its
process with ``os._exit(0)`` before ``gdn-parity check`` ran, and a stale
document from an earlier run may lie in a reused ``out_dir``.  So the helper
passes a run only on a results document that

* exists where this run writes it (``--json`` of the run, else
  ``OUT/results.json``), and was written by this run: it did not exist before
  the run started, or its file changed (identity, size or modification time)
  since, and it names the fixture this run wrote in ``OUT`` as its input;
* reads as a results document (docs/results-json.md: an object with a list
  of cases; verdict.py), with ``"pass": true`` and ``"exit_status": 0``;
* holds every output the helper asked for -- the stock function's and, when
  a context-parallel function runs, one per device count -- each within
  tolerance in every case (verdict.verdict_lines, which also gives the
  lines returned).

Anything else is :class:`RunNotJudged`, whose message says which of these
failed; the helper turns it into an AssertionError.
"""

from __future__ import annotations

import json
import os

from .text import show


class RunNotJudged(Exception):
    """The run exited 0 without a verdict this helper can trust."""


def _last_value(argv, opt):
    """The value of the last OPT VALUE or OPT=VALUE in argv (argparse's), or None."""
    val = None
    for i, a in enumerate(argv):
        if a == opt and i + 1 < len(argv):
            val = argv[i + 1]
        elif a.startswith(opt + "="):
            val = a[len(opt) + 1:]
    return val


def results_path(argv) -> str:
    """Where `gdn-parity-jax run ARGV` writes its results document (run.judge:
    --json, else OUT/results.json)."""
    return _last_value(argv, "--json") or os.path.join(_last_value(argv, "--out"), "results.json")


def stamp(path):
    """What identifies the file at path now (None when there is none)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def expected_outputs(argv, framework: str, runs_cp):
    """(the output names the run must judge, whether the cp names are known,
    the cp names of --devices):
    the stock function's, and with a context-parallel function one per
    device count of --devices.  runs_cp None: not known here (a function
    given by name): then every cp output the document holds must pass and
    every device count must be among them if any is."""
    names = [f"{framework}_scan"]
    devs = _last_value(argv, "--devices") or "1,2,4,8"
    cp = [f"jax_cp_d{d}" for d in dict.fromkeys(int(x) for x in devs.split(",") if x.strip())]
    if runs_cp:
        names += cp
    return names, runs_cp is not None, cp


def _is_recurrence_doc(path) -> bool:
    """Whether path holds gdn-parity check's recurrence-check document (a
    KDA run's); False for anything else, unreadable included."""
    from .verdict_recur import SCHEMA
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError, RecursionError):
        return False
    doc = doc[0] if isinstance(doc, list) and len(doc) == 1 else doc
    return isinstance(doc, dict) and doc.get("schema") == SCHEMA


def _check_recurrence(path, out_dir, expected, cp_names, cp_known):
    """check() for a recurrence-check document: it judges this run's
    fixture, says pass, and passes every expected output."""
    from .verdict import ResultsError
    from .verdict_recur import read, recurrence_lines
    try:
        doc = read(path)
    except ResultsError as exc:
        raise RunNotJudged(f"the run exited 0 but {exc}") from None
    fixtures = {os.path.realpath(os.path.join(out_dir, f)) for f in os.listdir(out_dir)
                if f.endswith(".h5")} if os.path.isdir(out_dir) else set()
    fx = doc.get("fixture")
    if not isinstance(fx, str) or os.path.realpath(fx) not in fixtures:
        raise RunNotJudged(f"the run exited 0 but its results document {show(path)} does not "
                           f"judge the fixture this run wrote in {show(out_dir)}")
    if doc.get("pass") is not True:
        raise RunNotJudged(f"the run exited 0 but its results document {show(path)} says "
                           f"pass {json.dumps(doc.get('pass'))}")
    names = list(expected)
    if not cp_known:
        have = {c.get("subject") for c in doc["cases"] if isinstance(c, dict)}
        names += list(cp_names) if any(f"output:{n}" in have for n in cp_names) else []
    lines, ok = recurrence_lines(path, names)
    if not ok:
        raise RunNotJudged("the run exited 0 but its results document does not pass every "
                           "output asked for:\n" + "\n".join(lines))
    return lines


def _judged_names(doc) -> set:
    out = set()
    for case in doc.get("cases") or []:
        impls = case.get("impls") if isinstance(case, dict) else None
        if isinstance(impls, dict):
            out.update(k for k in impls if isinstance(k, str))
    return out


def check(path: str, before, out_dir: str, expected: list[str], cp_names=(), cp_known=True):
    """The verdict lines of a run that exited 0, read from its results
    document; RunNotJudged unless the document is this run's, readable, and
    says PASS for every expected output."""
    from .verdict import ResultsError, _read, verdict_lines
    now = stamp(path)
    if now is None:
        raise RunNotJudged(f"the run exited 0 but wrote no results document ({show(path)}): "
                           "no verdict (did the function end the process, e.g. os._exit(0)?)")
    if before is not None and now == before:
        raise RunNotJudged(f"the run exited 0 but its results document {show(path)} is the one "
                           "that was there before it started: no verdict of this run")
    if _is_recurrence_doc(path):
        return _check_recurrence(path, out_dir, expected, cp_names, cp_known)
    try:
        doc = _read(path)
    except ResultsError as exc:
        raise RunNotJudged(f"the run exited 0 but {exc}") from None
    fixtures = {os.path.realpath(os.path.join(out_dir, f)) for f in os.listdir(out_dir)
                if f.endswith(".h5")} if os.path.isdir(out_dir) else set()
    named = {os.path.realpath(i.get("path")) for i in doc.get("inputs") or []
             if isinstance(i, dict) and isinstance(i.get("path"), str)}
    if not named or not named <= fixtures:
        raise RunNotJudged(f"the run exited 0 but its results document {show(path)} does not "
                           f"judge the fixture this run wrote in {show(out_dir)}")
    if doc.get("pass") is not True or doc.get("exit_status") != 0:
        raise RunNotJudged(f"the run exited 0 but its results document {show(path)} says "
                           f"pass {json.dumps(doc.get('pass'))}, exit_status "
                           f"{show(json.dumps(doc.get('exit_status')))}")
    names = list(expected)
    if not cp_known:
        have = [n for n in cp_names if n in _judged_names(doc)]
        names += list(cp_names) if have else []
    lines, ok = verdict_lines(path, names)
    if not ok:
        raise RunNotJudged("the run exited 0 but its results document does not pass every "
                           "output asked for:\n" + "\n".join(lines))
    return lines
