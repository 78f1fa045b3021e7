"""docs/options.md against the --help of gdn-parity, of gdn-parity trust, regen and
of each gdn-fixture subcommand, both ways (docs_check.check_options); gdn-parity-jax's sections
are checked by tests/jax/test_options_doc.py.  Negative controls: the page
with one option removed, with one invented, and with one option's commands
changed must each fail."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_check  # noqa: E402

root, gdn_parity, gdn_fixture = sys.argv[1:4]
helps = {"gdn-parity": docs_check.run_help([gdn_parity]),
         "gdn-parity trust": docs_check.run_help([gdn_parity, "trust"]),  # trust has its own table
         "gdn-parity regen": docs_check.run_help([gdn_parity, "regen"])}  # so has regen
top = docs_check.run_help([gdn_fixture])
subs = re.findall(r"^  (\w+)  ", top.split("commands:", 1)[1], re.M)
assert subs, "gdn-fixture --help lists no commands"
for s in subs:
    helps[f"gdn-fixture {s}"] = docs_check.run_help([gdn_fixture, s])
doc = open(os.path.join(root, "docs", "options.md"), encoding="utf-8").read()
# gdn-parity-jax's sections are the JAX test's
jax = {s for s in docs_check.doc_sections(doc) if s.startswith("gdn-parity-jax")}
errs = [e for e in docs_check.check_options(doc, helps) if not any(f"`{j}`" in e for j in jax)]
for e in errs:
    print(e)
if errs:
    sys.exit(1)
n = sum(len(docs_check.help_options(t)) for t in helps.values())
print(f"ok: {n} options in {len(helps)} --help texts agree with docs/options.md")


def fails(text, what, want):
    found = [e for e in docs_check.check_options(text, helps) if not any(f"`{j}`" in e for j in jax)]
    if not any(want in e for e in found):
        print(f"negative control not caught ({what}): {found}")
        sys.exit(1)


row = re.compile(r"^\| `--threads N` \|.*\n", re.M)
assert len(row.findall(doc)) >= 2, "the controls need --threads in gdn-parity and gdn-fixture regen"
fails(row.sub("", doc, count=1), "a removed option", "--threads is in --help but not documented")
fails(doc.replace("| `--h0` |", "| `--h1-invented` | --shape | invented |\n| `--h0` |", 1), "an invented option",
      "--h1-invented is documented but --help does not list it")
fails(doc.replace("| `--key-heads Hk` | --shape, sweep, coverage |", "| `--key-heads Hk` | --shape, sweep |", 1),
      "changed commands", "--key-heads is documented for")
print("ok: the negative controls fail")
