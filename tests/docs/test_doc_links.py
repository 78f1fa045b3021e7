"""Every relative link in README.md and docs/*.md reaches an existing file
and heading (docs_check.check_links).  Negative controls: docs/oracle.md read
with a link to a missing file, one to a missing heading of another page, and
one to a missing section of the README appended must each fail the check
(the plant is in memory; no file is written)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_check  # noqa: E402

root = sys.argv[1]
files = docs_check.doc_files(root)
errs = docs_check.check_links(root, files)
for e in errs:
    print(e)
if errs:
    sys.exit(1)
print(f"ok: the links of {len(files)} files")

page = open(os.path.join(root, "docs", "oracle.md"), encoding="utf-8").read()
for line, want in (("See [gone](gone.md).", "no file docs/gone.md"),
                   ("See [tolerance](tolerance.md#no-such-heading).", "no heading #no-such-heading"),
                   ("See [readme](../README.md#no-such-section).", "no heading #no-such-section")):
    found = docs_check.check_links(root, files, {"docs/oracle.md": page + "\n" + line + "\n"})
    if not any(want in e for e in found):
        print(f"negative control not caught: {line!r} gave {found}")
        sys.exit(1)
print("ok: the negative controls fail")
