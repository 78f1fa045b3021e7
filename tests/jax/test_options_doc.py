"""docs/options.md against `gdn-parity-jax SUBCOMMAND --help`, both ways
(tests/docs/docs_check.py; the C tools' sections are the meson test
options_doc's).  Negative controls: the page with one option removed and
with one invented must fail."""

import re
import sys

from conftest import ROOT, run_cli

sys.path.insert(0, str(ROOT / "tests" / "docs"))
import docs_check  # noqa: E402


def jax_helps():
    top = run_cli("--help", timeout=120)
    assert top.returncode == 0, top.stderr
    subs = re.search(r"\{([\w,-]+)\}", top.stdout).group(1).split(",")
    assert subs, top.stdout
    helps = {}
    for s in subs:
        r = run_cli(s, "--help", timeout=120)
        assert r.returncode == 0, r.stderr
        helps[f"gdn-parity-jax {s}"] = r.stdout
    return helps


def jax_errors(doc, helps):
    # only this front end's sections: the others are checked against the C tools
    return [e for e in docs_check.check_options(doc, helps)
            if "`gdn-parity-jax" in e or "gdn-parity-jax" in e.split(":")[1]]


def test_options_doc_matches_help():
    doc = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    helps = jax_helps()
    assert set(helps) == {"gdn-parity-jax run", "gdn-parity-jax audit", "gdn-parity-jax campaign"}
    assert jax_errors(doc, helps) == []
    assert sum(len(docs_check.help_options(t)) for t in helps.values()) > 40
    # negative controls: one option removed from run's table, one invented in audit's
    before, run_part = doc.split("## `gdn-parity-jax run`")
    removed = before + "## `gdn-parity-jax run`" + re.sub(r"^\| `--grad` \|.*\n", "", run_part, count=1, flags=re.M)
    assert removed != doc
    assert any("gdn-parity-jax run: --grad is in --help but not documented" in e for e in jax_errors(removed, helps))
    invented = doc.replace("| `--l2norm` |", "| `--l3norm` | invented |\n| `--l2norm` |", 1)
    assert any("gdn-parity-jax audit: --l3norm is documented but --help does not list it" in e
               for e in jax_errors(invented, helps))
