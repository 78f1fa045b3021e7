#!/usr/bin/python3
"""The coverage reports in a real browser and against the JUnit schema.

Runs `gdn-parity coverage` on tests/parity/coverage-nogqa.json with
gqa-tile (survives: the grid has no grouped heads), carry-zero and
scale-none (killed), then:

  1. headless Chromium renders the HTML (--dump-dom, the helpers of
     tests/reports/browser_test.py): the kill matrix (table#kill-matrix) has
     one row per mutant and one column per case, and each cell says killed
     or survives exactly as the JSON's kills do; the survivors list names
     gqa-tile; the verdict says FAIL.  Negative control: the same comparison
     on a copy of the page with one killed cell turned into "survives" must
     report a mismatch.
  2. the JUnit XML validates against tests/reports/junit.xsd (xmllint), with
     one failure, gqa-tile's.

Exit status: 0 pass, 1 fail, 77 skip (meson's) without chromium or xmllint.
Usage: coverage_browser_test.py GDN_PARITY TESTS_PARITY_DIR
"""

import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reports"))
import browser_test  # noqa: E402  (find_chromium, run_chromium)

MUTANTS = "gqa-tile,carry-zero,scale-none"


class Matrix(html.parser.HTMLParser):
    """The kill matrix's body: [(mutant, [cell text, ...])], and texts by id."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows, self.in_matrix, self.cell, self.ids, self.open_id = [], False, None, {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id") == "kill-matrix":
            self.in_matrix = True
        if self.in_matrix and tag == "tr":
            self.rows.append([None, []])
        if self.in_matrix and tag in ("th", "td") and self.rows:
            self.cell = [tag, ""]
        if "id" in a:
            self.ids[a["id"]] = ""
            self.open_id.append((tag, a["id"]))

    def handle_endtag(self, tag):
        if tag == "table" and self.in_matrix:
            self.in_matrix = False
        if self.cell and tag == self.cell[0]:
            kind, text = self.cell
            text = re.sub(r"\s+", " ", text).strip()
            row = self.rows[-1]
            if row[0] is None and kind == "th":
                row[0] = text
            else:
                row[1].append(text)
            self.cell = None
        if self.open_id and self.open_id[-1][0] == tag:
            self.open_id.pop()

    def handle_data(self, data):
        if self.cell:
            self.cell[1] += data
        for _, i in self.open_id:
            self.ids[i] += data


def compare(dom_text, doc):
    """Mismatches between the rendered matrix and the document's kills."""
    m = Matrix()
    m.feed(dom_text)
    rows = [r for r in m.rows if r and r[0] != "mutant"]
    errs = []
    names = [x["name"] for x in doc["mutants"]]
    if [r[0] for r in rows] != names:
        errs.append("matrix rows %r, mutants %r" % ([r[0] for r in rows], names))
        return errs, m
    for j, (name, cells) in enumerate(rows):
        if len(cells) != len(doc["cases"]):
            errs.append("%s: %d cells for %d cases" % (name, len(cells), len(doc["cases"])))
            continue
        for c, text in enumerate(cells):
            killed = doc["cases"][c]["kills"][j]["killed"]
            if text.startswith("killed") != killed or text.startswith("survives") == killed:
                errs.append("%s, case %d: cell %r, document killed=%s" % (name, c, text, killed))
    return errs, m


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    exe, testdir = sys.argv[1], sys.argv[2]
    chromium = browser_test.find_chromium()
    if not chromium or not shutil.which("xmllint"):
        print("SKIP: needs chromium and xmllint (apt-get install chromium libxml2-utils)")
        return 77
    with tempfile.TemporaryDirectory(prefix="gdn-coverage-") as work:
        out = {k: os.path.join(work, "c." + k) for k in ("json", "html", "xml")}
        p = subprocess.run([exe, "coverage", "--grid", os.path.join(testdir, "coverage-nogqa.json"),
                            "--mutants", MUTANTS, "--reproducible", "--quiet", "--json", out["json"],
                            "--report", out["html"], "--junit", out["xml"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if p.returncode != 1:
            print("FAIL: coverage exit %d (want 1: gqa-tile survives)\n%s" % (p.returncode, p.stderr.decode()))
            return 1
        with open(out["json"]) as f:
            doc = json.load(f)
        dom, _ = browser_test.run_chromium(chromium, ["--dump-dom"], "file://" + out["html"])
        errs, m = compare(dom, doc)
        if "gqa-tile" not in m.ids.get("survivors", ""):
            errs.append("the survivors list does not name gqa-tile: %r" % m.ids.get("survivors"))
        if "FAIL" not in dom.split("</h1>")[0]:
            errs.append("the heading does not say FAIL")
        # negative control: one killed cell rendered as survives must be seen
        with open(out["html"]) as f:
            page = f.read()
        bad = re.sub(r'<td class="kill"[^>]*>killed<br><small>[^<]*</small>', '<td class="survive">survives', page, 1)
        bad_path = os.path.join(work, "bad.html")
        with open(bad_path, "w") as f:
            f.write(bad)
        bdom, _ = browser_test.run_chromium(chromium, ["--dump-dom"], "file://" + bad_path)
        if bad == page or not compare(bdom, doc)[0]:
            errs.append("negative control: a flipped cell was not noticed")
        x = subprocess.run(["xmllint", "--noout", "--nonet", "--schema",
                            os.path.join(HERE, "..", "reports", "junit.xsd"), out["xml"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if x.returncode != 0:
            errs.append("junit.xml does not validate: " + x.stderr.decode()[-2000:])
        with open(out["xml"]) as f:
            xml = f.read()
        if xml.count("<failure") != 1 or 'name="gqa-tile">' not in xml:
            errs.append("JUnit: want exactly gqa-tile's failure:\n" + xml)
    for e in errs:
        print("FAIL: " + e)
    if not errs:
        print("coverage HTML: the kill matrix matches the document in Chromium (and a flipped cell is "
              "noticed); JUnit validates with gqa-tile's failure")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
