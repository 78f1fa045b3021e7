"""Every relative link in README.md, docs/*.md and the READMEs of fixtures/,
frontend/ and examples/upstream-ci/ reaches an existing file and heading
inside the repository (docs_check.check_links), and none of them names a path
outside it, link or not (docs_check.check_outside: the specs the project was
built from are not in it).  Negative controls: docs/oracle.md read
with a link to a missing file, one to a missing heading of another page, and
one to a missing section of the README and one outside the repository
appended must each fail the check, as must a mention of shared/specs
(the plant is in memory; no file is written)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_check  # noqa: E402

root = sys.argv[1]
files = docs_check.doc_files(root)
# the READMEs the docs send a reader to stand alone too
readmes = [f for f in ("fixtures/README.md", "frontend/README.md", "examples/upstream-ci/README.md")
           if os.path.isfile(os.path.join(root, f))]
errs = docs_check.check_links(root, files + readmes) + docs_check.check_outside(root, files + readmes)
for e in errs:
    print(e)
if errs:
    sys.exit(1)
print(f"ok: the links of {len(files)} files")

page = open(os.path.join(root, "docs", "oracle.md"), encoding="utf-8").read()
for line, want in (("See [gone](gone.md).", "no file docs/gone.md"),
                   ("See [tolerance](tolerance.md#no-such-heading).", "no heading #no-such-heading"),
                   ("See [readme](../README.md#no-such-section).", "no heading #no-such-section"),
                   ("See [spec](../../README.md).", "outside the repository")):
    found = docs_check.check_links(root, files, {"docs/oracle.md": page + "\n" + line + "\n"})
    if not any(want in e for e in found):
        print(f"negative control not caught: {line!r} gave {found}")
        sys.exit(1)
for line in ("the schema is `shared/specs/fixture-schema-v1.md`",
             "see [algorithm](../shared/specs/algorithm.md)"):
    if not docs_check.check_outside(root, ["docs/oracle.md"], {"docs/oracle.md": page + "\n" + line + "\n"}):
        print(f"negative control not caught: {line!r} names a path outside the repository")
        sys.exit(1)
print("ok: the negative controls fail")
