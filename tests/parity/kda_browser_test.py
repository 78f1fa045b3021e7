#!/usr/bin/python3
"""The report of a --recurrence kda run in a real browser and against the JUnit schema.

Runs `gdn-parity --recurrence kda --grad --mutant dg-value-axis` (the
backward's dg summed along the wrong axis: every backward case fails) on a
small shape with --report and --junit, then:

  1. headless Chromium renders the HTML (--dump-dom, the helpers of
     tests/reports/browser_test.py): every row of the case tables
     (table#cases-0, table#grad-cases-0) says PASS or FAIL exactly as the
     JSON's case does, and a cell is marked failing exactly where the
     JSON's err is over the case's band; #verdict says FAIL and names kda
     and the planted mutant, #deciding names dg.  Negative control: the same
     comparison on a copy of the page with one FAIL row turned into PASS
     must report a mismatch.
  2. the JUnit XML validates against tests/reports/junit.xsd (xmllint), with
     one failure per failing case.

Exit status: 0 pass, 1 fail, 77 skip (meson's) without chromium or xmllint.
Usage: kda_browser_test.py GDN_PARITY
"""

import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reports"))
import browser_test  # noqa: E402  (find_chromium, run_chromium)

GRADS = ["dq", "dk", "dv", "dg", "dbeta", "dh0"]


class Tables(html.parser.HTMLParser):
    """Rows of the case tables by table id: [[(cell class, text), ...]], and texts by id."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.table, self.cell, self.ids, self.open_id = {}, None, None, {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and (a.get("id") or "").startswith(("cases-", "grad-cases-")):
            self.table = a["id"]
            self.tables[self.table] = []
        if self.table and tag == "tr" and a.get("id"):
            self.tables[self.table].append([])
        if self.table and tag == "td" and self.tables[self.table]:
            self.cell = [a.get("class") or "", ""]
        if "id" in a:
            self.ids[a["id"]] = ""
            self.open_id.append((tag, a["id"]))

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None
        if self.cell and tag == "td":
            self.tables_row().append((self.cell[0], self.cell[1].strip()))
            self.cell = None
        if self.open_id and self.open_id[-1][0] == tag:
            self.open_id.pop()

    def tables_row(self):
        return self.tables[self.table][-1]

    def handle_data(self, data):
        if self.cell:
            self.cell[1] += data
        for _, i in self.open_id:
            self.ids[i] += data


def compare(dom_text, doc):
    """Mismatches between the rendered case tables and the document."""
    t = Tables()
    t.feed(dom_text)
    errs = []
    for tid, cases, outs, band in (("cases-0", doc["cases"], ["o", "ht"], doc["band"]),
                                   ("grad-cases-0", doc["grad"]["cases"], GRADS, doc["grad"]["band"])):
        rows = t.tables.get(tid, [])
        if len(rows) != len(cases):
            errs.append("%s: %d rows for %d cases" % (tid, len(rows), len(cases)))
            continue
        for i, (row, c) in enumerate(zip(rows, cases)):
            want = "PASS" if c["pass"] else "FAIL"
            if row[0][1] != want or row[1][1] != c["subject"]:
                errs.append("%s row %d: %r %r, document %s %s" % (tid, i, row[0][1], row[1][1], want, c["subject"]))
            b = c.get("band", band)
            for j, name in enumerate(outs):
                over = c[name]["err"] > b
                if ("fail" in row[4 + j][0].split()) != over:
                    errs.append("%s row %d: %s cell %r, document err %g band %g" % (tid, i, name, row[4 + j], c[name]["err"], b))
    return errs, t


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    exe = sys.argv[1]
    chromium = browser_test.find_chromium()
    if not chromium or not shutil.which("xmllint"):
        print("SKIP: needs chromium and xmllint (apt-get install chromium libxml2-utils)")
        return 77
    with tempfile.TemporaryDirectory(prefix="gdn-kda-") as work:
        out = {k: os.path.join(work, "k." + k) for k in ("json", "html", "xml")}
        p = subprocess.run([exe, "--shape", "1,32,2,8", "--key-heads", "1", "--recurrence", "kda", "--chunk", "16",
                            "--devices", "1,2", "--grad", "--mutant", "dg-value-axis", "--quiet", "--json",
                            out["json"], "--report", out["html"], "--junit", out["xml"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if p.returncode != 1:
            print("FAIL: exit %d (want 1: the mutant fails)\n%s" % (p.returncode, p.stderr.decode()))
            return 1
        with open(out["json"]) as f:
            doc = json.load(f)
        dom, _ = browser_test.run_chromium(chromium, ["--dump-dom"], "file://" + out["html"])
        errs, t = compare(dom, doc)
        verdict, deciding = t.ids.get("verdict", ""), t.ids.get("deciding", "")
        for want in ("FAIL", "recurrence kda", "PLANTED MUTANT dg-value-axis"):
            if want not in verdict:
                errs.append("#verdict does not say %r: %r" % (want, verdict))
        if "backward: dg err" not in deciding:
            errs.append("#deciding does not name dg: %r" % deciding)
        # negative control: one FAIL row rendered as PASS must be seen
        with open(out["html"]) as f:
            page = f.read()
        bad = page.replace('<td class="fail">FAIL</td>', '<td class="pass">PASS</td>', 1)
        bad_path = os.path.join(work, "bad.html")
        with open(bad_path, "w") as f:
            f.write(bad)
        bdom, _ = browser_test.run_chromium(chromium, ["--dump-dom"], "file://" + bad_path)
        if bad == page or not compare(bdom, doc)[0]:
            errs.append("negative control: a flipped row was not noticed")
        x = subprocess.run(["xmllint", "--noout", "--nonet", "--schema",
                            os.path.join(HERE, "..", "reports", "junit.xsd"), out["xml"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if x.returncode != 0:
            errs.append("the JUnit XML does not validate: " + x.stderr.decode()[-2000:])
        with open(out["xml"]) as f:
            xml = f.read()
        if xml.count("<failure") != doc["n_failed"]:
            errs.append("JUnit: %d failures, the document %d" % (xml.count("<failure"), doc["n_failed"]))
    for e in errs:
        print("FAIL: " + e)
    if not errs:
        print("KDA HTML: every case row and failing cell matches the document in Chromium (and a flipped row is "
              "noticed); JUnit validates with one failure per failing case")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
