#!/usr/bin/python3
"""End-to-end test of the HTML report in a real browser (headless Chromium).

Renders the sample results document (make_sample, a C helper of the tests,
so this does not depend on the harness) or a given report, then:

  1. --dump-dom with scripts on: the page's script ran (<html data-script=
     "ran">), no error was recorded (no data-script-errors attribute, set by
     the page's window.onerror), the verdict, the deciding numbers, the case
     table with one row per case and every plot (each figure id with an
     <svg>) are in the DOM, and the sorter turned the headers into buttons;
     chromium's --enable-logging=stderr output has no console line at all
     (the page logs nothing; "Uncaught ..." and CSP "Refused to load ..."
     violations would appear there).
  2. scripts off (the page with its <script> elements removed, since
     chromium's own --dump-dom and --screenshot need scripts): the same
     content is in the DOM and the screenshot is not blank.
  3. sorting: a copy of the page with a probe script appended clicks the
     "value / limit" header twice and the "case id" header once; the rows
     come out descending, ascending, and sorted by id.
  4. --screenshot: a PNG of the requested size.

Exit status: 0 pass, 1 fail, 77 skip (meson's) when no chromium is
installed (Debian: apt-get install chromium).

Usage:
  browser_test.py MAKE_SAMPLE [--audit AUDIT.json] [--screenshot OUT.png] [--window-size W,H]
  browser_test.py --html report.html [--cases N] [--screenshot OUT.png]
"""

import argparse
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

PLOTS = ["plot-profile", "plot-devices", "plot-length", "plot-heatmap", "plot-ulp"]
SECTIONS = ["verdict", "deciding", "environment", "inputs", "upstream", "case-table"]
# --audit: the audit section (reports/report_audit.h) and its figures
AUDIT_SECTIONS = ["audit", "audit-headline", "audit-verdict", "audit-note", "audit-checks", "audit-affine",
                  "audit-memory"]
AUDIT_PLOTS = ["plot-audit-collectives-forward", "plot-audit-collectives-backward", "plot-audit-memory"]
TIMEOUT_S = 180


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_cmd(chromium, profile_dir, extra):
    # Running as root needs --no-sandbox; without the background-networking
    # flags chromium waits on services it cannot reach on a closed network.
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--user-data-dir=" + profile_dir] + extra


def run_chromium(chromium, extra, url):
    with tempfile.TemporaryDirectory(prefix="gdn-chromium-") as prof:
        cmd = chromium_cmd(chromium, prof, extra) + [url]
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            fail("chromium did not finish within %d s: %s" % (TIMEOUT_S, " ".join(cmd)))
        if p.returncode != 0:
            sys.stderr.write(p.stderr.decode("utf-8", "replace")[-4000:])
            fail("chromium exited with status %d: %s" % (p.returncode, " ".join(cmd)))
        return p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Dom(html.parser.HTMLParser):
    """The little of the DOM the checks need: attributes of <html>, elements
    by id with their text, the figure each <svg> sits in, table rows."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.html_attrs = {}
        self.ids = {}          # id -> {"tag", "attrs", "text"}
        self.stack = []        # open elements: (tag, id)
        self.svg_in = {}       # figure id -> number of <svg> inside
        self.case_rows = 0
        self.sort_buttons = 0
        self.text_of = {}      # id -> list of text pieces

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "source", "wbr"}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.html_attrs = a
        if "id" in a:
            self.ids[a["id"]] = {"tag": tag, "attrs": a}
            self.text_of[a["id"]] = []
        if tag == "svg":
            for t, i in self.stack:
                if t == "figure" and i:
                    self.svg_in[i] = self.svg_in.get(i, 0) + 1
        if tag == "tr" and a.get("id", "").startswith("case-"):
            self.case_rows += 1
        if tag == "button" and "sort" in a.get("class", "").split():
            self.sort_buttons += 1
        if tag not in self.VOID:
            self.stack.append((tag, a.get("id")))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID and self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == tag:
                del self.stack[k:]
                break

    def handle_data(self, data):
        for _, i in self.stack:
            if i in self.text_of:
                self.text_of[i].append(data)

    def text(self, i):
        return re.sub(r"\s+", " ", "".join(self.text_of.get(i, [])))


failures = []


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)


def check_content(dom, n_cases, verdict, label, audit_verdict=None):
    for i in SECTIONS:
        check(i in dom.ids, "%s: no element with id %r" % (label, i))
    vtext = dom.text("verdict")
    check(verdict in vtext, "%s: the verdict does not say %s: %r" % (label, verdict, vtext[:200]))
    check("limit" in dom.text("deciding"), "%s: the deciding numbers are missing" % label)
    check(dom.case_rows == n_cases,
          "%s: the case table has %d rows, the document %d cases" % (label, dom.case_rows, n_cases))
    for p in PLOTS:
        check(p in dom.ids, "%s: no plot %r" % (label, p))
        check(dom.svg_in.get(p, 0) >= 1, "%s: plot %r has no <svg>" % (label, p))
    if audit_verdict:
        for i in AUDIT_SECTIONS:
            check(i in dom.ids, "%s: no element with id %r (the audit)" % (label, i))
        for p in AUDIT_PLOTS:
            check(dom.svg_in.get(p, 0) >= 1, "%s: audit plot %r has no <svg>" % (label, p))
        atext = dom.text("audit-verdict")
        check(("Audit " + audit_verdict) in atext,
              "%s: the audit section does not say Audit %s: %r" % (label, audit_verdict, atext[:200]))


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def check_scripts_on(chromium, url, n_cases, verdict, audit_verdict):
    """1. Scripts on: the page's script runs to its end without errors and the
    content is there.  Returns (verdict, n_cases), read from the page when
    not known."""
    dom_text, log = run_chromium(chromium, ["--enable-logging=stderr", "--v=0", "--dump-dom"],
                                 url)
    dom = Dom()
    dom.feed(dom_text)
    if verdict is None:
        verdict = "PASS" if dom.html_attrs.get("data-verdict") == "pass" else "FAIL"
    if n_cases is None:
        n_cases = dom.case_rows
    check(dom.html_attrs.get("data-script") == "ran",
          "the page's script did not run to its end (no <html data-script=\"ran\">)")
    check("data-script-errors" not in dom.html_attrs,
          "script errors recorded by window.onerror: %r"
          % dom.html_attrs.get("data-script-errors"))
    check_content(dom, n_cases, verdict, "scripts on", audit_verdict)
    check(dom.sort_buttons > 0, "the sorter did not turn the headers into buttons")
    check("hidden" not in dom.ids.get("sort-hint", {}).get("attrs", {"hidden": ""}),
          "the sort hint is still hidden")
    console = [l for l in log.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
    check(not console, "the browser console is not empty:\n  " + "\n  ".join(console[:10]))
    return verdict, n_cases


def dom_of_copy(chromium, work, name, html, extra=()):
    """The browser's DOM of `html` written to work/name (a copy of the page,
    changed), parsed; and that file's path."""
    path = os.path.join(work, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)
    dom_text, _ = run_chromium(chromium, list(extra) + ["--dump-dom"], "file://" + path)
    dom = Dom()
    dom.feed(dom_text)
    return dom, path


def check_scripts_off(chromium, report, work, n_cases, verdict, audit_verdict):
    """2. Scripts off: everything readable.  Chromium's --dump-dom and
    --screenshot need scripts themselves, so "scripts off" is the page with
    its <script> elements removed: the browser's DOM of that copy must have
    the same content, and its screenshot must not be blank."""
    with open(report, encoding="utf-8") as f:
        source = f.read()
    stripped, n_scripts = re.subn(r"<script>.*?</script>", "", source, flags=re.S)
    check(n_scripts == 2, "expected the page's 2 scripts, found %d" % n_scripts)
    dom0, noscript = dom_of_copy(chromium, work, "noscript.html", stripped)
    check("data-script" not in dom0.html_attrs, "a script ran in the script-free copy")
    check_content(dom0, n_cases, verdict, "scripts off", audit_verdict)
    check(dom0.sort_buttons == 0, "scripts off: sort buttons without the script")
    shot0 = os.path.join(work, "noscript.png")
    run_chromium(chromium, ["--hide-scrollbars", "--window-size=1400,1000",
                            "--screenshot=" + shot0], "file://" + noscript)
    check(os.path.exists(shot0) and os.path.getsize(shot0) > 20000,
          "scripts off: the screenshot is missing or blank")



def check_sorting(chromium, report, work, n_cases):
    """3. Sorting, as a reader clicks: a copy of the page with a script
    appended that clicks the "value / limit" header twice and the "case id"
    header once, recording each resulting column order."""
    with open(report, encoding="utf-8") as f:
        source = f.read()
    probe = r"""<script>
(function(){var t=document.getElementById('case-table');
var hr=t.tHead.rows[t.tHead.rows.length-1],out={};
function col(label){for(var i=0;i<hr.cells.length;i++)
 if(hr.cells[i].textContent.indexOf(label)===0)return i;return -1;}
function grab(c){return Array.prototype.map.call(t.tBodies[0].rows,function(r){
 var x=r.cells[c];var v=x.getAttribute('data-v');return v===null?x.textContent:v;});}
var m=col('value / limit'),id=col('case id');
hr.cells[m].querySelector('button').click();out.desc=grab(m);
hr.cells[m].querySelector('button').click();out.asc=grab(m);
hr.cells[id].querySelector('button').click();out.ids=grab(id);
out.aria=hr.cells[id].getAttribute('aria-sort');
document.documentElement.setAttribute('data-sort-test',JSON.stringify(out));})();
</script></body>"""
    domp, _ = dom_of_copy(chromium, work, "sorted.html", source.replace("</body>", probe, 1))
    check("data-script-errors" not in domp.html_attrs,
          "sorting raised: %r" % domp.html_attrs.get("data-script-errors"))
    raw = domp.html_attrs.get("data-sort-test")
    check(raw is not None, "the sorting probe did not run")
    if raw:
        res = json.loads(raw)

        def key(v):  # the page's rule: nan and inf sort as +inf, empty as -inf
            if v in ("nan", "inf"):
                return float("inf")
            try:
                return float(v)
            except ValueError:
                return float("-inf")
        desc = [key(v) for v in res["desc"]]
        asc = [key(v) for v in res["asc"]]
        check(len(desc) == n_cases and len(asc) == n_cases, "sorting lost rows")
        check(desc == sorted(desc, reverse=True), "value / limit: not descending after a click")
        check(asc == sorted(asc), "value / limit: not ascending after a second click")
        ids = [v.lower() for v in res["ids"]]
        check(ids == sorted(ids, reverse=True), "case id: not sorted after a click")
        check(res["aria"] == "descending", "aria-sort not set on the sorted header")



def check_screenshot(chromium, url, work, window_size, keep):
    """4. Screenshot: a PNG of the window's size, not blank; kept at `keep`."""
    shot = os.path.join(work, "report.png")
    run_chromium(chromium, ["--hide-scrollbars", "--window-size=" + window_size,
                            "--screenshot=" + shot], url)
    size = png_size(shot) if os.path.exists(shot) else None
    want = tuple(int(v) for v in window_size.split(","))
    check(size == want, "screenshot: got %s, want a PNG of %s" % (size, want))
    check(os.path.getsize(shot) > 20000 if os.path.exists(shot) else False,
          "screenshot: suspiciously small (a blank page?)")
    if keep and os.path.exists(shot):
        shutil.copyfile(shot, keep)
        print("screenshot written to " + keep)


def table_overflow(chromium, source, work, name):
    """How many pixels the case table's right edge lies past the 1,400-pixel
    window's content width (<= 0: it fits), measured by the browser on a
    copy of the page with a probe script appended."""
    probe = r"""<script>
(function(){var t=document.getElementById('case-table');
document.documentElement.setAttribute('data-fit',JSON.stringify({right:t.getBoundingClientRect().right,
 width:document.documentElement.clientWidth}));})();
</script></body>"""
    dom, _ = dom_of_copy(chromium, work, name, source.replace("</body>", probe, 1),
                         ["--window-size=1400,1000"])
    raw = dom.html_attrs.get("data-fit")
    if raw is None:
        return None
    fit = json.loads(raw)
    return fit["right"] - fit["width"]


def check_table_fits(chromium, report, work):
    """5. The case table fits a 1,400-pixel window (its columns wrap rather
    than widen the page).  Negative control: the same page with one column
    forced to 60em must be measured as overflowing."""
    with open(report, encoding="utf-8") as f:
        source = f.read()
    over = table_overflow(chromium, source, work, "fit.html")
    check(over is not None, "the table-width probe did not run")
    if over is not None:
        check(over <= 0, "the case table is %.0f px wider than a 1,400-pixel window" % over)
    wide = source.replace("</head>", "<style>#case-table td.id{min-width:60em}</style></head>", 1)
    over = table_overflow(chromium, wide, work, "fit-control.html")
    check(over is not None and over > 0,
          "negative control: a case table forced to 60em was not measured as overflowing (%r)" % over)


def subject_problems(dom_text):
    """What the DOM of a --subject report fails of check_subject (a list)."""
    out = []
    row = dom_text[dom_text.find('<tr id="case-'):]
    row = row[:row.find("</tr>")]
    if "judged: <b>tpu_cp_d8</b>" not in row:
        out.append("the failing row (first) does not name the output it judges")
    if ">0.364<" not in row:
        out.append("the failing row's judged columns do not hold the output's 0.364")
    if "tpu_cp_d8 vs oracle" not in dom_text:
        out.append("the profile plot does not draw the output judged")
    if "judged output vs oracle" not in dom_text:
        out.append("the ULP histogram does not draw the output judged")
    if dom_text.count("the dump's output must be as accurate") != 2:
        out.append("the rule's reason is not shown exactly twice (the verdict, under the table)")
    if "would have <b>passed" in dom_text:
        out.append("the verdict claims an upstream check would have passed the failing case")
    return out


def check_subject(chromium, report):
    """6. --subject: the report, as the browser holds it after its scripts
    ran, speaks of the dump's output that failed: the failing row comes
    first and its judged columns hold the output's 0.364, the error along
    the sequence and the ULP histogram draw it, the rule's reason appears
    once under the table, and no claim says an upstream check would have
    passed the case (all four fail the output).  Negative control: the same
    DOM with the output renamed away fails the check."""
    dom_text, _ = run_chromium(chromium, ["--window-size=1400,1000", "--dump-dom"], "file://" + report)
    for p in subject_problems(dom_text):
        check(False, p)
    # (the name is gone from the row and the profile: two problems at least)
    check(len(subject_problems(dom_text.replace("tpu_cp_d8", "other"))) >= 2,
          "negative control: a report without the output was not caught")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("make_sample", nargs="?", help="the make_sample helper")
    ap.add_argument("--html", help="test this report instead of the sample")
    ap.add_argument("--cases", type=int, help="case count of --html (default: from results.json "
                    "beside it, if any)")
    ap.add_argument("--screenshot", help="also keep the screenshot here")
    ap.add_argument("--window-size", default="1400,2400")
    ap.add_argument("--subject", action="store_true", help="the sample's failing case judges a "
                    "dump's output (make_sample --subject): the report must speak of it")
    ap.add_argument("--audit", help="embed this audit document in the sample (make_sample's second "
                    "argument) and check the report's audit section")
    args = ap.parse_args()

    chromium = find_chromium()
    if not chromium:
        print("SKIP: chromium is not installed (Debian: apt-get install chromium); "
              "the browser end-to-end test needs it")
        return 77

    work = tempfile.mkdtemp(prefix="gdn-browser-test-")
    try:
        if args.html:
            report = os.path.abspath(args.html)
            results = os.path.join(os.path.dirname(report), "results.json")
        else:
            if not args.make_sample:
                ap.error("give MAKE_SAMPLE or --html")
            extra = [args.audit] if args.audit else ["--subject"] if args.subject else []
            subprocess.run([args.make_sample, work] + extra, check=True, timeout=TIMEOUT_S)
            report = os.path.join(work, "report.html")
            results = os.path.join(work, "results.json")
        verdict, n_cases, audit_verdict = None, args.cases, None
        if os.path.exists(results):
            with open(results, encoding="utf-8") as f:
                doc = json.load(f)
            verdict = "PASS" if doc["pass"] else "FAIL"
            if "audit" in doc:
                audit_verdict = doc["audit"]["verdict"]
            if n_cases is None:
                n_cases = len(doc["cases"])
        url = "file://" + report

        verdict, n_cases = check_scripts_on(chromium, url, n_cases, verdict, audit_verdict)
        check_scripts_off(chromium, report, work, n_cases, verdict, audit_verdict)
        check_sorting(chromium, report, work, n_cases)
        check_table_fits(chromium, report, work)
        if args.subject:
            check_subject(chromium, report)
        check_screenshot(chromium, url, work, args.window_size, args.screenshot)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("browser test passed: verdict %s, %d cases, %d plots, no script or console errors; "
          "readable with scripts off%s" % (verdict, n_cases, len(PLOTS),
                                           "; audit section (Audit %s) and its %d plots"
                                           % (audit_verdict, len(AUDIT_PLOTS)) if audit_verdict else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
