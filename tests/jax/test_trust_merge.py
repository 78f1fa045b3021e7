"""scripts/trust_merge.py: a campaign split into trust runs, added up
(the C tool makes the documents; no JAX needed)."""

import json
import subprocess
import sys

from conftest import ROOT

MERGE = ROOT / "scripts" / "trust_merge.py"


def _trust(tools, path, first_seed):
    r = tools.run("parity", ["trust", "--shape", "1,64,2,16", "--chunk", "16", "--seeds", "1",
                             "--first-seed", str(first_seed), "--regimes", "slow,spike-10", "--h0", "without",
                             "--reforms", "solve-dot,cumsum-blelloch", "--quiet", "--json", str(path)],
                  capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(path.read_text())


def _merge(*args):
    return subprocess.run([sys.executable, str(MERGE), *map(str, args)], capture_output=True, text=True)


def test_runs_add_up_and_the_worst_is_the_worst_of_worsts(tools, tmp_path):
    a, b = _trust(tools, tmp_path / "a.json", 0), _trust(tools, tmp_path / "b.json", 1)
    r = _merge("--expect-pass", tmp_path / "a.json", tmp_path / "b.json")
    assert r.returncode == 0, r.stderr
    total = f"| **all** | {a['budget']['runs'] + b['budget']['runs']} | {a['checks'] + b['checks']:,} | 0 |"
    assert total in r.stdout
    assert "Seeds per gate regime (distinct shape and seed pairs): slow 2, spike-10 2" in r.stdout
    worst = max(a["worst_ratio"], b["worst_ratio"])
    all_line = next(x for x in r.stdout.splitlines() if x.startswith("| **all** |"))
    assert all_line.endswith(f"| 0 | {worst:.3g} |")


def test_a_false_fail_in_any_run_fails_the_campaign(tools, tmp_path):
    _trust(tools, tmp_path / "a.json", 0)
    doc = _trust(tools, tmp_path / "b.json", 1)
    doc["false_fails"], doc["pass"] = 1, False
    doc["rules"][0]["fails"] = 1
    doc["fails"] = [dict(doc["rules"][0]["worst"], ratio=1.5)]
    (tmp_path / "b.json").write_text(json.dumps(doc))
    r = _merge("--expect-pass", tmp_path / "a.json", tmp_path / "b.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "| 1 |" in r.stdout
    assert _merge(tmp_path / "a.json", tmp_path / "b.json").returncode == 0  # a report without --expect-pass


def test_seeds_counted_twice_or_other_limits_are_refused(tools, tmp_path):
    _trust(tools, tmp_path / "a.json", 0)
    r = _merge(tmp_path / "a.json", tmp_path / "a.json")
    assert r.returncode == 2 and "slow seed 0" in r.stderr and "is also in" in r.stderr
    doc = _trust(tools, tmp_path / "b.json", 1)
    doc["policy"]["sha256"] = "0" * 64
    (tmp_path / "b.json").write_text(json.dumps(doc))
    r = _merge(tmp_path / "a.json", tmp_path / "b.json")
    assert r.returncode == 2 and "b.json: judged by another policy" in r.stderr
    (tmp_path / "c.json").write_text('{"schema": "gdn-parity-results"}')
    r = _merge(tmp_path / "c.json")
    assert r.returncode == 2 and "c.json: not a trust document" in r.stderr
